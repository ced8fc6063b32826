"""A stand-in for a guard's socket, served by a real process (for the client's tests).

    fake_guard.py RUN_DIR MODE [-- CMD...]

Listens on ``RUN_DIR/<own pid>.sock`` (mode 0600), as a guard does, and prints ``ready``
on stdout. MODE says what a client meets:

- ``hang``: the socket listens, nobody ever accepts (a guard that is stuck);
- ``stop``: the same, and the process stops itself (SIGSTOP, as Ctrl-Z or ``kill -STOP``);
- ``greet:TEXT``: each connection is greeted with TEXT (``{pid}`` is this pid) once its
  hello is read, then every later line is answered ``ok``; with ``push:TEXT`` after it
  (``greet:...|push:...``), the push TEXT is sent before the first answer.

With a command after ``--`` it is run as this process's child (as a guard runs its job),
with ``$HEADROOM_MARK`` set to the socket; its stdin is a pipe closed once every connection
is over, so it may wait for that. The process ends when the command has ended (or, without
one, when killed), printing one JSON line: per connection, the lines it sent and whether it
closed the connection itself within 2 s of its last answer (``closed``).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

EOF_WAIT = 2.0


def serve(conn: socket.socket, greeting: str, push: str | None, record: dict) -> None:
    """One connection: greet after the hello, answer every line, note who closed."""
    reader = conn.makefile("rb")
    conn.settimeout(EOF_WAIT)
    try:
        hello = reader.readline()
        if not hello:
            record["closed"] = True
            return
        record["lines"].append(hello.decode(errors="replace").strip())
        conn.sendall(greeting.encode() + b"\n")
        while True:
            line = reader.readline()
            if not line:
                record["closed"] = True
                return
            record["lines"].append(line.decode(errors="replace").strip())
            if push is not None:
                conn.sendall(push.encode() + b"\n")
                push = None
            conn.sendall(b"ok\n")
    except OSError:
        record["closed"] = False  # the client kept it open: the wait for EOF timed out
    finally:
        conn.close()


def main() -> None:
    run_dir, mode = Path(sys.argv[1]), sys.argv[2]
    command = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
    path = run_dir / f"{os.getpid()}.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    os.chmod(path, 0o600)
    server.listen(16)
    print("ready", flush=True)
    if mode == "stop":
        os.kill(os.getpid(), signal.SIGSTOP)
    if mode in ("hang", "stop"):
        while True:
            signal.pause()
    greeting, _, push = mode.removeprefix("greet:").partition("|push:")
    greeting = greeting.replace("{pid}", str(os.getpid()))
    records: list[dict] = []
    threads: list[threading.Thread] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            record: dict = {"lines": [], "closed": None}
            records.append(record)
            thread = threading.Thread(target=serve, args=(conn, greeting, push or None, record))
            threads.append(thread)
            thread.start()

    threading.Thread(target=accept, daemon=True).start()
    if not command:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        try:
            while True:
                signal.pause()
        finally:
            finish(records, threads, path)
    child = subprocess.Popen(command, stdin=subprocess.PIPE,
                             env={**os.environ, "HEADROOM_MARK": str(path)})
    quiet_looks = 0
    while child.poll() is None:
        # Once every connection is over (and at least one was made, and no new one came
        # for a few looks), the child may end.
        if records and all(not t.is_alive() for t in list(threads)):
            quiet_looks += 1
            if quiet_looks > 2 and child.stdin is not None and not child.stdin.closed:
                child.stdin.close()
        try:
            child.wait(timeout=0.1)
        except subprocess.TimeoutExpired:
            pass
    finish(records, threads, path)


def finish(records: list[dict], threads: list[threading.Thread], path: Path) -> None:
    for thread in list(threads):
        thread.join(timeout=EOF_WAIT + 1)
    path.unlink(missing_ok=True)
    print(json.dumps(records), flush=True)


if __name__ == "__main__":
    main()
