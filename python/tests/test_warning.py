"""on_warning on real swap (root): a job that keeps a 300 MiB cache and then grows, guarded
with a 400 MB budget and --on-budget pause. With on_warning it drops the cache when the
guard warns (at 80 %) and ends within its budget, never paused; without it, the same job is
paused at its budget (seen in /proc)."""

from __future__ import annotations

import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import guard_in_lab, job
from test_marks import result

FLAGS = ["--swap-budget", "400M", "--on-budget", "pause", "--poll", "0.2s"]
PROCESSES = {"HEADROOM_JOB_CGROUP": "off"}
PAUSED = re.compile(r"paused .*\(SIGSTOP, pause 1 of")


def test_a_job_that_sheds_memory_when_warned_ends_within_its_budget(
    binary, tmp_path, swap_lab
) -> None:
    run = guard_in_lab(swap_lab, 64, "warn-shed", binary, tmp_path, job("warned", "--shed"),
                       *FLAGS)
    assert run.code == 0, run.stderr
    got = result(run.stderr)
    assert len(got["heard"]) == 1 and got["cache_kept"] is False, got
    warning = got["heard"][0]
    assert warning["budget_bytes"] == 400 << 20 and warning["then"] == "pause", warning
    assert warning["stage"] == "grow" and warning["growth_bytes"] >= 0.8 * (400 << 20)
    assert [s for s in run.stages()] == ["grow", "shed"], run.summary
    verdict = run.summary["verdict"]
    # Never paused, and it ended by itself. ("vanished" too: a guard that sees the job's
    # multi-threaded leader as a zombie before the kernel lets it be reaped judges it gone
    # without its exit status, a defect of the driver reported apart, not this test's.)
    assert verdict.get("pauses", 0) == 0, verdict
    assert verdict["ended"]["kind"] in ("exited", "vanished"), verdict
    assert not PAUSED.search(run.stderr), run.stderr
    # Swap fell back when the cache went: the run ended well under its budget.
    samples = [r["swap_used"] for r in run.trace if r.get("type") == "sample"]
    assert samples[-1] - samples[0] < 400 << 20, (samples[0], samples[-1])


def default_keys() -> None:
    """In the child before exec: SIGINT and SIGQUIT handled by default (a guard keeps an
    ignored signal ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


@pytest.mark.parametrize("membership", ["processes", "own cgroup"])
def test_the_same_job_without_on_warning_is_paused(
    binary, tmp_path, swap_lab, membership
) -> None:
    import os

    # Both ways a guard knows its job: its processes (as on a Mac), the job alone in the
    # lab's cgroup; or a cgroup of its own (the default as root on Linux: the pause is its
    # freezer), made beneath the lab's cgroup, where the guard itself runs.
    cgroup = swap_lab(64, "warn-none")
    command = [str(binary), "guard", "--wait-free", "0", *FLAGS, "--"]
    if membership == "processes":
        argv, env = [*command, *cgroup.wrap(job("warned"))], PROCESSES
    else:
        argv, env = cgroup.wrap([*command, *job("warned")]), {}
    environment = {k: v for k, v in os.environ.items() if k != "HEADROOM_JOB_CGROUP"}
    log = tmp_path / "guard.stderr"
    try:
        with log.open("w") as err:
            # Ctrl-C below: the guard must not inherit SIGINT ignored (a suite started in
            # the background by a non-interactive shell has it so).
            g = subprocess.Popen(argv, stderr=err, stdout=subprocess.DEVNULL,
                                 env={**environment, **env}, preexec_fn=default_keys)
        deadline = time.monotonic() + 60
        while not PAUSED.search(log.read_text()) and time.monotonic() < deadline:
            time.sleep(0.1)
        text = log.read_text()
        assert PAUSED.search(text), text
        pid = int(re.search(r"^PID (\d+)$", text, re.M).group(1))
        # Paused: it does not run (no CPU time over a second), stopped or frozen.
        time.sleep(0.5)
        before = cpu_ticks(pid)
        time.sleep(1.0)
        assert cpu_ticks(pid) == before, "the paused job still runs"
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][0]
        assert state in "TD", state
        g.send_signal(signal.SIGINT)  # Ctrl-C: the guard stops its paused job
        g.wait(timeout=30)
    finally:
        cgroup.close()
    assert "RESULT" not in log.read_text(), "the job never got to its end"
