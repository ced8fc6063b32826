"""Stages from Python against real guards: the installed wheel's binary, marks every way,
threads and fork, a watched job, bad names, forged sockets, a guard killed mid-marks and a
client killed mid-line."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import headroom_memory
from conftest import guard, job


def result(stderr: str, tag: str = "RESULT") -> object:
    line = next(line for line in stderr.splitlines() if line.startswith(tag + " "))
    return json.loads(line.split(" ", 1)[1])


def stage_events(run) -> list[str]:
    return [e["stage"] for e in run.events("stage")]


def test_the_package_runs_its_own_binary_not_the_one_on_path(binary: Path) -> None:
    for name in ("headroom", "headroom-memory"):
        on_path = shutil.which(name)
        assert on_path is not None, f"scripts/test-python puts a stand-in {name} on PATH"
        assert Path(on_path).resolve() != binary.resolve()
        stand_in = subprocess.run([name, "status"], capture_output=True, text=True)
        assert stand_in.returncode != 0, "the stand-in fails whenever it is run"
    assert binary.name == "headroom-memory"
    assert binary.is_relative_to(sys.prefix), f"{binary} is not in the venv {sys.prefix}"
    status = subprocess.run([str(binary), "status", "--top", "1"], capture_output=True, text=True)
    assert status.returncode == 0, status.stderr
    assert status.stdout.startswith("Memory"), status.stdout
    # `headroom` from the venv's bin (what a user types after `pip install`) is ours too:
    # the same tool, built under the CLI's name.
    venv_cmd = Path(sys.prefix) / "bin" / "headroom"
    versions = [subprocess.run([str(b), "--version"], capture_output=True, text=True).stdout
                for b in (venv_cmd, binary)]
    assert versions[0] == versions[1] and versions[0].startswith("headroom "), versions


def test_marks_every_way_without_starting_a_process(binary: Path, tmp_path: Path) -> None:
    run = guard(binary, tmp_path, job("marks"), "--poll", "0.1s")
    assert run.code == 0, run.stderr
    assert stage_events(run) == ["setup", "load", "outer", "inner", "outer", "end"]
    # The verdict has one stage per name: "outer" twice is one stage of two visits.
    assert run.stages() == ["setup", "load", "outer", "inner", "end"]
    outer = next(s for s in run.summary["verdict"]["stages"] if s["stage"] == "outer")
    assert outer["visits"] == 2
    assert result(run.stderr) == {
        "setup": True, "load": "load", "after_inner": "outer", "end": True,
    }
    assert "HeadroomWarning" not in run.stderr


def test_leaving_the_outermost_stage_ends_it(binary: Path, tmp_path: Path) -> None:
    run = guard(binary, tmp_path, job("stage_end"), "--poll", "0.1s")
    assert run.code == 0, run.stderr
    work = next(s for s in run.summary["verdict"]["stages"] if s["stage"] == "work")
    # Its 0.3 s, not the 1.5 s after the `with` block too.
    assert 0.25 <= work["seconds"] < 1.2, work
    ends = run.events("stage_end")
    assert [e["stage"] for e in ends] == ["work"], ends
    assert "HeadroomWarning" not in run.stderr


def test_a_training_loop_marks_thousands_of_times_and_every_mark_is_taken(
    binary: Path, tmp_path: Path
) -> None:
    # 400 steps of forward, backward, optimizer: 1,200 marks of three names, far past the
    # 256-stage cap on names; every one taken, the verdict summing each name's visits.
    run = guard(binary, tmp_path, job("training", "400"), "--poll", "0.2s")
    assert run.code == 0, run.stderr
    assert result(run.stderr) == {"taken": 1200, "sent": 1200}
    stages = {s["stage"]: s["visits"] for s in run.summary["verdict"]["stages"]}
    assert stages == {"forward": 400, "backward": 400, "optimizer": 400}
    assert len(stage_events(run)) == 1200
    assert "HeadroomWarning" not in run.stderr


def test_outside_any_guard_marks_do_nothing_and_say_nothing() -> None:
    out = subprocess.run(job("quiet"), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stderr.strip().splitlines() == ["RESULT [false, false]"]


def test_threads_share_one_connection_and_a_forked_child_opens_its_own(
    binary: Path, tmp_path: Path
) -> None:
    run = guard(binary, tmp_path, job("threads_fork"))
    assert run.code == 0, run.stderr
    got = result(run.stderr)
    assert got["threads"] == 80 and got["parent_after"] is True, got
    child = result(run.stderr, "CHILD")
    assert child["ok"] is True and child["connected"] is True, child
    names = stage_events(run)
    assert len(names) == 82, names
    assert "child" in names and names[-1] == "parent-after"


def test_bad_names_are_warnings_never_exceptions(binary: Path, tmp_path: Path) -> None:
    run = guard(binary, tmp_path, job("badnames"))
    assert run.code == 0, run.stderr
    assert result(run.stderr) == [False] * 8 + [True]
    for why in ("cannot be empty", "at most 200 bytes", "must be text (str), not bytes",
                "not int", "not NoneType", "control characters"):
        assert why in run.stderr, why
    assert stage_events(run) == ["good"]


def fake_guard(path: Path, listens_as: str = "self") -> tuple[socket.socket, list[bytes]]:
    """A socket at ``path`` served by this test process; returns it and what it received."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    os.chmod(path, 0o600)
    server.listen(8)
    received: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.settimeout(2)
            try:
                data = conn.recv(4096)
                received.append(data)
                conn.sendall(json.dumps({"headroom": 2, "guard": os.getpid()}).encode() + b"\n")
            except OSError:
                received.append(b"")
            finally:
                conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return server, received


def marks_with_env(path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HEADROOM_MARK": str(path)}
    return subprocess.run(job("quiet"), capture_output=True, text=True, env=env, timeout=60)


def test_a_forged_socket_path_is_not_used(tmp_path: Path) -> None:
    private = tmp_path / "run"
    private.mkdir(mode=0o700)
    # 1. Another user's socket: refused before connecting.
    theirs = private / f"{os.getpid()}.sock"
    server, received = fake_guard(theirs)
    os.chown(theirs, 65534, 65534)
    out = marks_with_env(theirs)
    assert out.returncode == 0 and "RESULT [false, false]" in out.stderr, out.stderr
    assert "belongs to uid 65534" in out.stderr
    assert out.stderr.count("HeadroomWarning") == 1, out.stderr
    server.close()
    theirs.unlink()
    # 2. Our own socket, but its process is no ancestor of the job: not the job's guard,
    # refused before connecting.
    sibling = subprocess.Popen(["sleep", "30"])
    try:
        named = private / f"{sibling.pid}.sock"
        server, received = fake_guard(named)
        out = marks_with_env(named)
        assert "is not the job's guard" in out.stderr, out.stderr
        assert "RESULT [false, false]" in out.stderr
        time.sleep(0.3)
        assert received == [], "the job connected to a process that did not start it"
        server.close()
        named.unlink()
    finally:
        sibling.kill()
        sibling.wait()
    # 3. Named after an ancestor (this test process), but another process listens on it:
    # the kernel says who listens; nothing is sent.
    ancestor_named = private / f"{os.getpid()}.sock"
    impostor = subprocess.Popen(
        [sys.executable, "-c",
         "import socket,sys,os,time;s=socket.socket(socket.AF_UNIX);s.bind(sys.argv[1]);"
         "os.chmod(sys.argv[1],0o600);s.listen(4);c,_=s.accept();c.settimeout(3);"
         "d=c.recv(100) if True else b'';print(len(d),flush=True)",
         str(ancestor_named)],
        stdout=subprocess.PIPE, text=True)
    try:
        for _ in range(100):
            if ancestor_named.exists():
                break
            time.sleep(0.05)
        out = marks_with_env(ancestor_named)
        assert f"but pid {impostor.pid} listens on it" in out.stderr, out.stderr
        assert impostor.communicate(timeout=10)[0].strip() == "0", "bytes were sent"
    finally:
        impostor.kill()
    # 4. Nothing there: one warning, the job goes on.
    out = marks_with_env(private / "12345.sock")
    assert out.returncode == 0 and "RESULT [false, false]" in out.stderr
    assert out.stderr.count("HeadroomWarning") == 1, out.stderr


def test_a_guard_killed_mid_marks_is_one_warning_and_the_job_goes_on(
    binary: Path, tmp_path: Path
) -> None:
    log = tmp_path / "guard.stderr"
    with log.open("w") as err:
        g = subprocess.Popen(
            [str(binary), "guard", "--wait-free", "0", "--", *job("loop", "4")],
            stderr=err, stdout=subprocess.DEVNULL)
    time.sleep(1.5)
    g.send_signal(signal.SIGKILL)
    g.wait()
    deadline = time.monotonic() + 20
    while "RESULT" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    text = log.read_text()
    got = result(text)
    assert 1 <= got["taken"] < got["sent"], got
    assert text.count("HeadroomWarning") == 1, text
    assert "the guard of this job is gone" in text


def test_a_client_killed_mid_line_loses_nothing_of_the_guard(
    binary: Path, tmp_path: Path
) -> None:
    run = guard(binary, tmp_path, job("half_line"), "--poll", "0.1s")
    assert run.code == 0, run.stderr
    assert result(run.stderr) == {"after": True}
    assert stage_events(run) == ["before", "after"]
    assert run.summary["verdict"]["ended"]["kind"] == "exited", run.summary


def test_a_watched_job_marks_through_the_watch(binary: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "HEADROOM_MARK"}
    code = (
        "import time,sys,json\n"
        "from headroom_memory import mark\n"
        "deadline=time.monotonic()+15\n"
        "while not mark('first') and time.monotonic()<deadline: time.sleep(0.2)\n"
        "time.sleep(0.5)\n"
        "sys.stderr.write('RESULT ' + json.dumps(mark('second')) + '\\n')\n"
        "time.sleep(0.5)\n"
    )
    watched = subprocess.Popen([sys.executable, "-c", code], env=env, stderr=subprocess.PIPE,
                               text=True)
    out = subprocess.run([str(binary), "watch", str(watched.pid), "--json", "--poll", "0.2s"],
                         capture_output=True, text=True, timeout=60)
    stderr = watched.communicate(timeout=30)[1]
    assert result(stderr) is True, stderr
    verdict = json.loads(out.stdout)["verdict"]
    assert [s["stage"] for s in verdict.get("stages", [])] == ["first", "second"], out.stdout


def test_the_package_needs_nothing_but_the_standard_library() -> None:
    import importlib.metadata as md

    assert md.requires(headroom_memory.DISTRIBUTION) in (None, []) or all(
        "extra ==" in r for r in md.requires(headroom_memory.DISTRIBUTION) or []
    )
