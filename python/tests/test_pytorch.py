"""Automatic stages for PyTorch on real swap (root): a pipeline of three components that
allocate 50, 100 and 400 MiB in their forward passes, in a memory cgroup of 300 MiB with
swap, guarded with a 150 MB budget. The verdict must name the third component, with no mark
in the script: through `watch_modules`, and through `python -m headroom_memory` (no code
change). Debian's CPU torch (python3-torch)."""

from __future__ import annotations

import sys

import pytest

from conftest import guard_in_lab, job

pytest.importorskip("torch", reason="Debian's python3-torch (scripts/setup installs it)")

BUDGET = ["--swap-budget", "150M", "--poll", "0.2s"]


def stage_growth(run) -> dict[str, int]:
    return {s["stage"]: s["swap_growth_bytes"] for s in run.summary["verdict"]["stages"]}


def check_third_named(run, names: list[str]) -> None:
    assert run.code == 3, run.stderr  # stopped at the budget
    assert run.stages() == names, run.summary
    growth = stage_growth(run)
    third = names[2]
    assert growth[third] > 100 << 20, growth
    assert growth[third] > 2 * max(growth[names[0]], growth[names[1]]), growth
    verdict = next(line for line in run.stderr.splitlines() if "doesn't fit" in line)
    assert f"({third} +" in verdict, verdict


def test_watch_modules_names_the_component_that_grew_swap(binary, tmp_path, swap_lab) -> None:
    run = guard_in_lab(swap_lab, 300, "torch-watch", binary, tmp_path,
                       job("pipeline", "--watch"), *BUDGET)
    check_third_named(run, ["text_encoder", "transformer", "vae"])


def test_no_code_change_names_the_component_that_grew_swap(binary, tmp_path, swap_lab) -> None:
    argv = [sys.executable, "-m", "headroom_memory", *job("pipeline")[1:]]
    run = guard_in_lab(swap_lab, 300, "torch-nocode", binary, tmp_path, argv, *BUDGET)
    check_third_named(run, ["TextEncoder", "Denoiser", "Decoder"])


def test_no_code_change_runs_a_module_and_reports_usage(tmp_path) -> None:
    import subprocess

    script = tmp_path / "prog.py"
    script.write_text("import sys; print('args', sys.argv[1:])\n")
    out = subprocess.run([sys.executable, "-m", "headroom_memory", str(script), "a", "b"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "args ['a', 'b']" in out.stdout, out.stderr
    out = subprocess.run([sys.executable, "-m", "headroom_memory", "-m", "json.tool", "--help"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "usage" in out.stdout.lower(), out
    out = subprocess.run([sys.executable, "-m", "headroom_memory"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2 and "usage: python -m headroom_memory" in out.stderr
