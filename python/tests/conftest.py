"""Fixtures of the Python tests. They run against the INSTALLED package (a wheel in a fresh
venv: scripts/test-python), never the source tree: the package and its binary are looked up
the way a user's program would, and `headroom` on PATH is a stand-in that fails loudly, so
a test passes only if the package finds its own binary by path.

Every test has its own HEADROOM_HOME (nothing touches the user's Headroom folders). The
real-swap tests need root; they fail in CI (CI set) rather than skip.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import headroom_memory

sys.path.insert(0, str(Path(__file__).parent))
import swaplab  # noqa: E402

JOBS = Path(__file__).parent / "jobs"


@pytest.fixture(scope="session", autouse=True)
def installed() -> None:
    """The package under test is the installed one, not python/headroom_memory."""
    package = Path(headroom_memory.__file__).resolve()
    assert "site-packages" in package.parts, f"testing {package}, not an installed wheel"


@pytest.fixture(scope="session")
def binary() -> Path:
    """The installed package's own binary."""
    return headroom_memory.binary_path()


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HEADROOM_HOME of the test's own, and no inherited guard."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HEADROOM_HOME", str(home))
    monkeypatch.delenv("HEADROOM_MARK", raising=False)
    monkeypatch.delenv("HEADROOM_KEY", raising=False)
    return home


@dataclass
class Run:
    """A finished `headroom guard --json` run."""

    code: int
    summary: dict
    stderr: str
    stdout: str
    trace: list[dict]

    def stages(self) -> list[str]:
        return [s["stage"] for s in self.summary["verdict"].get("stages", [])]

    def events(self, kind: str) -> list[dict]:
        return [r for r in self.trace if r.get("type") == "event" and r.get("kind") == kind]


def guard(
    binary: Path,
    tmp_path: Path,
    job: list[str],
    *flags: str,
    env: dict[str, str] | None = None,
    timeout: float = 180,
) -> Run:
    """Runs ``headroom guard --json --trace T [flags] -- job`` to its end."""
    trace = tmp_path / f"trace-{time.monotonic_ns()}.jsonl"
    out = subprocess.run(
        [str(binary), "guard", "--wait-free", "0", "--json", "--trace", str(trace), *flags,
         "--", *job],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
    )
    try:
        summary = json.loads(out.stdout.split("\n{", 1)[-1] if "\n{" in out.stdout
                             else out.stdout)
    except ValueError:
        summary = {}
    records = [json.loads(line) for line in trace.read_text().splitlines()] if trace.exists() else []
    return Run(out.returncode, summary, out.stderr, out.stdout, records)


def guard_in_lab(
    lab: type, limit_mib: int, tag: str, binary: Path, tmp_path: Path, argv: list[str],
    *flags: str,
) -> Run:
    """:func:`guard` of ``argv`` run inside a memory cgroup of ``limit_mib`` (the job's
    processes tracked, as the Rust real-swap tests do)."""
    cgroup = lab(limit_mib, tag)
    try:
        return guard(binary, tmp_path, cgroup.wrap(argv), *flags,
                     env={"HEADROOM_JOB_CGROUP": "off"})
    finally:
        cgroup.close()


def job(name: str, *args: str) -> list[str]:
    """The command line of test job ``jobs/<name>.py`` under this venv's Python."""
    return [sys.executable, str(JOBS / f"{name}.py"), *args]


def need_root() -> None:
    if os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("the real-swap tests need root, and CI must run them")
        pytest.skip("real-swap tests need root (swapon, cgroups)")


@pytest.fixture
def swap_lab() -> Iterator[type]:
    """A 1 GiB swap file while the test runs (root); memory cgroups come from
    ``swaplab.MemCgroup``."""
    need_root()
    with swaplab.SwapFile(1024):
        yield swaplab.MemCgroup
