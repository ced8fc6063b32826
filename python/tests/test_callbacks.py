"""The guard's pause and stop, heard by the job (on_pause, on_stop), with a real guard and
real signals: `headroom pause`, `resume` and `stop` on a guarded Python job; a SIGTERM from
no guard; a handler of the job's own kept. No swap needed: these are asked for."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

import headroom_memory
from conftest import job


class Lines:
    """The stderr of a process, read on a thread: wait for a line that starts with a tag."""

    def __init__(self, stream) -> None:
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream) -> None:
        for line in stream:
            self.lines.put(line.rstrip("\n"))

    def wait(self, tag: str, timeout: float = 30) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                line = self.lines.get(timeout=0.1)
            except queue.Empty:
                continue
            self.seen.append(line)
            if line.startswith(tag + " "):
                return line.split(" ", 1)[1]
        raise AssertionError(f"no {tag} line in {timeout} s: {self.seen}")


def control(binary: Path, *args: str) -> None:
    out = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, (args, out.stderr)


def held(pid: int) -> bool:
    """Whether process `pid` is held still by its guard: stopped by a signal (state T), or in
    a frozen cgroup (the v1 freezer's state, or v2's cgroup.events)."""
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()[0]
    if state in ("T", "t"):
        return True
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        number, controllers, path = line.split(":", 2)
        if "freezer" in controllers.split(","):
            state_file = Path("/sys/fs/cgroup/freezer" + path) / "freezer.state"
            if state_file.exists() and state_file.read_text().strip() == "FROZEN":
                return True
        if number == "0":
            events = Path("/sys/fs/cgroup" + path) / "cgroup.events"
            if events.exists() and "frozen 1" in events.read_text():
                return True
    return False


@pytest.mark.parametrize("membership", ["own cgroup", "processes"])
def test_a_guarded_job_hears_its_pause_and_saves_its_work_when_stopped(
    binary: Path, tmp_path: Path, membership: str
) -> None:
    # Both ways a guard knows its job: a cgroup of its own (the default as root on Linux: the
    # pause is its freezer), or its processes (as on a Mac: the pause is SIGSTOP).
    env = {k: v for k, v in os.environ.items() if k != "HEADROOM_JOB_CGROUP"}
    if membership == "processes":
        env["HEADROOM_JOB_CGROUP"] = "off"
    checkpoint = tmp_path / "checkpoint.json"
    guard = subprocess.Popen(
        [str(binary), "guard", "--wait-free", "0", "--grace", "7s", "--poll", "0.2s", "--",
         *job("callbacks", str(checkpoint))],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env,
    )
    lines = Lines(guard.stderr)
    try:
        pid = int(lines.wait("READY"))
        control(binary, "pause", str(pid))
        deadline = time.monotonic() + 5
        while not held(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert held(pid), f"{membership}: the job was never held still"
        time.sleep(0.5)
        assert not checkpoint.exists()
        assert held(pid), f"{membership}: the job runs while paused"
        control(binary, "resume", str(pid))
        pause = json.loads(lines.wait("PAUSED"))
        assert pause["pause"] == 1 and pause["reason"] is None, pause  # asked, not a crossing
        assert pause["stage"] == "work" and pause["job"] == pid, pause
        control(binary, "stop", str(pid))
        assert guard.wait(60) == 3, lines.seen  # stopped by the guard
    finally:
        if guard.poll() is None:
            guard.kill()
    stop = json.loads(checkpoint.read_text())
    assert stop["from_guard"] is True and stop["grace_seconds"] == 7.0, stop
    assert stop["stage"] == "work" and stop["job"] == pid and stop["pid"] == pid, stop
    assert stop["reason"], stop


def test_a_sigterm_from_no_guard_runs_the_callback_and_ends_the_process(tmp_path: Path) -> None:
    checkpoint = tmp_path / "checkpoint.json"
    proc = subprocess.Popen([*job("callbacks", str(checkpoint))], stderr=subprocess.PIPE,
                            text=True)
    lines = Lines(proc.stderr)
    pid = int(lines.wait("READY"))
    os.kill(pid, signal.SIGTERM)
    # Ended as SIGTERM ends a process, after the callback saved its work.
    assert proc.wait(30) == -signal.SIGTERM
    stop = json.loads(checkpoint.read_text())
    assert stop["from_guard"] is False and stop["grace_seconds"] is None, stop
    assert stop["job"] == pid, stop


def test_a_handler_of_the_jobs_own_runs_after_the_callback(tmp_path: Path) -> None:
    checkpoint = tmp_path / "checkpoint.json"
    proc = subprocess.Popen([*job("callbacks", str(checkpoint), "--before")],
                            stderr=subprocess.PIPE, text=True)
    lines = Lines(proc.stderr)
    lines.wait("READY")
    proc.send_signal(signal.SIGTERM)
    assert lines.wait("OWN") == str(int(signal.SIGTERM))
    assert proc.wait(30) == 7
    assert json.loads(checkpoint.read_text())["from_guard"] is False


def test_a_forked_child_ends_at_its_sigterm_without_the_parents_callbacks(
    tmp_path: Path,
) -> None:
    checkpoint = tmp_path / "checkpoint.json"
    proc = subprocess.Popen([*job("callbacks", str(checkpoint), "--fork")],
                            stderr=subprocess.PIPE, text=True)
    lines = Lines(proc.stderr)
    try:
        child = int(lines.wait("CHILD"))
        lines.wait("READY")
        os.kill(child, signal.SIGTERM)
        # It ends at once: a zombie, as its parent does not wait for it.
        end = time.monotonic() + 10
        while time.monotonic() < end:
            state = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[0]
            if state == "Z":
                break
            time.sleep(0.02)
        assert state == "Z", state
        assert not checkpoint.exists(), checkpoint.read_text()
    finally:
        proc.kill()
        proc.wait(10)


def test_on_stop_outside_the_main_thread_is_refused_clearly() -> None:
    failed: list[BaseException] = []
    before = signal.getsignal(signal.SIGTERM)

    def register() -> None:
        try:
            headroom_memory.on_stop(lambda stop: None)
        except headroom_memory.HeadroomError as e:
            failed.append(e)

    thread = threading.Thread(target=register)
    thread.start()
    thread.join()
    assert failed and "main thread" in str(failed[0])
    assert signal.getsignal(signal.SIGTERM) is before  # nothing installed


@pytest.mark.parametrize("push,read", [
    ({"paused": {"growth_bytes": 5, "pause": 2, "max_pauses": 3, "reason": "swap +5 B",
                 "stage": None, "job": 9}}, "GuardPause"),
    ({"paused": {"growth_bytes": "lots"}}, None),
    ({"stopping": {"reason": "asked", "grace_ms": 1500, "stage": "x", "job": 9}}, "GuardStop"),
    ({"stopping": {"reason": None, "grace_ms": 1500, "job": 9}}, None),
    ({"stopping": {"reason": "asked", "grace_ms": True, "job": 9}}, None),
])
def test_pushes_are_read_or_dropped_never_raised(push: dict, read: str | None) -> None:
    from headroom_memory import _callbacks

    kind, body = next(iter(push.items()))
    heard = _callbacks._KINDS[kind][0](body)
    assert (type(heard).__name__ if heard is not None else None) == read
    if read == "GuardStop":
        assert heard.grace_seconds == 1.5 and heard.from_guard is True
