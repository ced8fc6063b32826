"""Finding the job's guard, against real processes on real sockets: a mark outside any guard
never waits for another guard that is stopped or stuck; a job finds its own guard past one;
a malformed greeting or push from the other end is dropped, never raised, and the socket is
closed.

Most of these need no binary: the client is told the run folder (``mark_timed.py
--run-dir``, what the binary's ``headroom mark --run-dir`` would say) and the guards are
stand-ins served by real processes (``jobs/fake_guard.py``). The last test stops a real
``headroom guard``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import job
from test_marks import result

FAST = 0.5  # seconds: a mark outside any guard takes microseconds; this is generous


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A private folder laid out as the run folder: ``<pid>.sock`` of each guard."""
    folder = tmp_path / "run"
    folder.mkdir(mode=0o700)
    return folder


@pytest.fixture
def fakes() -> Iterator[list[subprocess.Popen[str]]]:
    """The stand-in guards a test starts, ended (and resumed first) whatever happens."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.returncode is None:
            os.kill(proc.pid, signal.SIGCONT)
            proc.kill()
            proc.communicate(timeout=10)


def fake_guard(fakes: list[subprocess.Popen[str]], run_dir: Path, mode: str,
               *command: str) -> subprocess.Popen[str]:
    """Starts ``jobs/fake_guard.py`` and waits until its socket listens."""
    argv = job("fake_guard", str(run_dir), mode)
    if command:
        argv += ["--", *command]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    fakes.append(proc)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    if mode == "stop":
        wait_for_state(proc.pid, "T")
    return proc


def wait_for_state(pid: int, state: str) -> None:
    stat = Path(f"/proc/{pid}/stat")
    deadline = time.monotonic() + 10
    while stat.read_text().rsplit(") ", 1)[1].split()[0] != state:
        assert time.monotonic() < deadline, f"pid {pid} never reached state {state}"
        time.sleep(0.01)


def connections(proc: subprocess.Popen[str]) -> tuple[list[dict], str]:
    """What a stand-in guard recorded, once it ended (or is ended now), and its stderr (its
    command's too)."""
    if proc.poll() is None and "--" not in proc.args:  # type: ignore[operator]
        proc.terminate()
    out, err = proc.communicate(timeout=30)
    assert out.strip(), f"the stand-in said nothing: {err}"
    return json.loads(out.strip().splitlines()[-1]), err


def marker(*args: str) -> tuple[dict, str]:
    """Runs ``jobs/mark_timed.py`` outside any guard; its result and stderr."""
    out = subprocess.run(job("mark_timed", *args), capture_output=True, text=True,
                         timeout=30, check=False)
    assert out.returncode == 0, out.stderr
    return result(out.stderr), out.stderr  # type: ignore[return-value]


@pytest.mark.parametrize("other", ["stop", "hang"])
def test_a_mark_outside_any_guard_never_waits_for_another_guard(
    run_dir: Path, fakes: list[subprocess.Popen[str]], other: str
) -> None:
    fake_guard(fakes, run_dir, other)
    fake_guard(fakes, run_dir, other)  # two of them: no wait adds up either
    got, stderr = marker("--run-dir", str(run_dir), "--marks", "200")
    assert got["raised"] is None, got
    assert got["taken"] == [False] * 200, got
    assert got["first_s"] < FAST, f"the first mark took {got['first_s']:.3f} s"
    assert got["total_s"] < FAST, f"200 marks took {got['total_s']:.3f} s"
    assert "HeadroomWarning" not in stderr, stderr


def test_a_job_finds_its_own_guard_past_a_stopped_one_without_its_environment(
    run_dir: Path, fakes: list[subprocess.Popen[str]]
) -> None:
    fake_guard(fakes, run_dir, "stop")
    # The job's guard is its parent, but the job lost $HEADROOM_MARK (`env -u`): the
    # guard is found in the run folder as its ancestor, at once.
    mine = fake_guard(fakes, run_dir, 'greet:{"headroom":2,"guard":{pid}}',
                      "env", "-u", "HEADROOM_MARK", *job("mark_timed", "--run-dir",
                                                          str(run_dir), "--marks", "2"))
    records, stderr = connections(mine)
    got = result(stderr)
    assert got["raised"] is None and got["taken"] == [True, True], (got, stderr)
    assert got["total_s"] < FAST, got
    assert len(records) == 1, records
    assert records[0]["lines"][1:] == ['{"stage":"step-0"}', '{"stage":"step-1"}'], records


def test_a_watched_job_finds_its_watch_past_a_stopped_guard_and_loses_no_stage(
    run_dir: Path, fakes: list[subprocess.Popen[str]]
) -> None:
    fake_guard(fakes, run_dir, "stop")
    # A watch is no ancestor of the job it watches: it is greeted in the background, and
    # the stage marked meanwhile is passed on once it answers.
    watch = fake_guard(fakes, run_dir, 'greet:{"headroom":2,"guard":{pid}}')
    got, stderr = marker("--run-dir", str(run_dir), "--marks", "1", "--until-taken", "3")
    assert got["raised"] is None, got
    assert got["first_s"] < FAST, got
    assert got["taken"][-1] is True, got
    records, _ = connections(watch)
    stages = [line for r in records for line in r["lines"] if line.startswith('{"stage"')]
    assert stages[0] == '{"stage":"step-0"}', records
    assert "HeadroomWarning" not in stderr, stderr


def test_a_stage_marked_again_once_its_watch_answers_is_not_sent_twice(
    run_dir: Path, fakes: list[subprocess.Popen[str]]
) -> None:
    # `while not mark("first")`: the mark that returned False was passed on; the one that
    # returns True is the same stage, and is not sent again.
    watch = fake_guard(fakes, run_dir, 'greet:{"headroom":2,"guard":{pid}}')
    got, _ = marker("--run-dir", str(run_dir), "--marks", "1", "--until-taken", "3",
                    "--late-name", "step-0")
    assert got["raised"] is None and got["taken"][-1] is True, got
    records, _ = connections(watch)
    stages = [line for r in records for line in r["lines"] if line.startswith('{"stage"')]
    assert stages == ['{"stage":"step-0"}'], records


MALFORMED = [
    "{not json",
    '{"headroom":"two","guard":{pid}}',
    '{"headroom":null,"guard":{pid}}',
    '{"headroom":[2],"guard":{pid}}',
    '{"headroom":1e999,"guard":{pid}}',
    '{"headroom":2,"guard":"{pid}"}',
    '{"headroom":2}',
    '{"headroom":2,"guard":{pid}} and more',
    "{}",
]


@pytest.mark.parametrize("greeting", MALFORMED)
def test_a_malformed_greeting_from_the_jobs_guard_is_never_raised(
    run_dir: Path, fakes: list[subprocess.Popen[str]], greeting: str
) -> None:
    guard = fake_guard(fakes, run_dir, f"greet:{greeting}",
                       *job("mark_timed", "--marks", "3", "--wait-stdin"))
    records, stderr = connections(guard)
    got = result(stderr)
    assert got["raised"] is None, got
    assert got["taken"] == [False] * 3, got
    assert stderr.count("HeadroomWarning") <= 1, stderr
    assert len(records) == 1, records  # refused once: not greeted again
    assert records[0]["closed"] is True, "the job left the socket open"


@pytest.mark.parametrize("greeting", MALFORMED[:3])
def test_a_malformed_greeting_in_the_run_folder_is_never_raised(
    run_dir: Path, fakes: list[subprocess.Popen[str]], greeting: str
) -> None:
    other = fake_guard(fakes, run_dir, f"greet:{greeting}")
    got, stderr = marker("--run-dir", str(run_dir), "--marks", "3", "--until-taken", "1")
    assert got["raised"] is None, got
    assert not any(got["taken"]), got
    assert "HeadroomWarning" not in stderr, stderr
    records, _ = connections(other)
    assert records and all(r["closed"] is True for r in records), records


@pytest.mark.parametrize("push", [
    '{"warning":{"growth_bytes":"lots","budget_bytes":1,"then":"stop","job":1}}',
    '{"warning":{"growth_bytes":1e999,"budget_bytes":1,"then":"stop","job":1}}',
    '{"warning":{"growth_bytes":1,"budget_bytes":1,"then":"stop","stage":7,"job":null}}',
    '{"warning":[1,2]}',
    "{not json",
])
def test_a_malformed_push_is_dropped_and_the_session_goes_on(
    run_dir: Path, fakes: list[subprocess.Popen[str]], push: str
) -> None:
    guard = fake_guard(fakes, run_dir, 'greet:{"headroom":2,"guard":{pid}}|push:' + push,
                       *job("mark_timed", "--marks", "3", "--on-warning"))
    _, stderr = connections(guard)
    got = result(stderr)
    assert got["raised"] is None and got["taken"] == [True] * 3, (got, stderr)
    assert got["heard"] == [], got
    assert "Traceback" not in stderr and "Exception" not in stderr, stderr


def test_a_stopped_real_guard_does_not_stall_a_mark_outside_it(binary: Path) -> None:
    run = Path(subprocess.run([str(binary), "mark", "--run-dir"], capture_output=True,
                              text=True, check=True).stdout.strip())
    other = subprocess.Popen([str(binary), "guard", "--wait-free", "0", "--", "sleep", "60"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        socket_path = run / f"{other.pid}.sock"
        deadline = time.monotonic() + 20
        while not socket_path.exists():
            assert time.monotonic() < deadline, f"no socket at {socket_path}"
            time.sleep(0.05)
        other.send_signal(signal.SIGSTOP)
        wait_for_state(other.pid, "T")
        got, stderr = marker("--marks", "3")
        assert got["raised"] is None and got["taken"] == [False] * 3, got
        assert got["first_s"] < FAST and got["total_s"] < FAST, got
        assert "HeadroomWarning" not in stderr, stderr
    finally:
        other.send_signal(signal.SIGCONT)
        other.send_signal(signal.SIGTERM)
        try:
            other.wait(timeout=20)
        except subprocess.TimeoutExpired:
            other.kill()
            other.wait()
