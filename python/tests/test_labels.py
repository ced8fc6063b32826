"""What automatic stages are named (issue 38 §5), under a real guard, read from its trace:
the user's own marks mixed with watch_modules', a ModuleList's blocks, and the no-code path
on a module called through ``.decode()``. Debian's CPU torch (python3-torch)."""

from __future__ import annotations

import sys

import pytest

from conftest import guard, job

pytest.importorskip("torch", reason="Debian's python3-torch (scripts/setup installs it)")


def marks(run) -> list[str]:
    assert run.code == 0, run.stderr
    return [e["stage"] for e in run.events("stage")]


def test_a_component_is_marked_again_after_the_users_own_mark(binary, tmp_path) -> None:
    run = guard(binary, tmp_path, job("labels", "mixed"))
    assert marks(run) == ["encoder", "user", "encoder", "decoder"]


def test_the_blocks_of_a_module_list_are_one_stage_named_after_it(binary, tmp_path) -> None:
    run = guard(binary, tmp_path, job("labels", "modulelist"))
    assert marks(run) == ["blocks", "head", "blocks"]


def test_the_no_code_path_names_the_module_whose_method_was_called(binary, tmp_path) -> None:
    argv = [sys.executable, "-m", "headroom_memory", *job("labels", "decode")[1:]]
    run = guard(binary, tmp_path, argv)
    assert marks(run) == ["Vae.decode", "Block", "Vae.decode", "Block"]
    hooks = [line.split()[-1] for line in run.stderr.splitlines() if line.startswith("HOOKS")]
    # Every module known after the first pass: no hook left on every module's call; a new
    # module puts it back until it is first called.
    assert hooks == ["0", "1", "0"], run.stderr


def test_the_no_code_path_reads_through_a_librarys_wrappers_and_breaks_no_module(
    binary, tmp_path
) -> None:
    argv = [sys.executable, "-m", "headroom_memory", *job("labels", "library")[1:]]
    run = guard(binary, tmp_path, argv)
    # encode first, then decode (img2img): each named by the autoencoder's own method, not by
    # the decorator's wrapper; a module whose hash fails in its __init__ and an unhashable one
    # are built and called as without Headroom.
    assert marks(run) == ["Autoencoder.encode", "Autoencoder.decode", "Metric", "Unhashable"]
    # Hooked modules still pickle, and a deep copy runs on its own weights.
    assert "COPY ok" in run.stderr, run.stderr
