"""The one connection of this process to its job's guard, reused by every mark.

Protocol version 2 (documented in ``core/src/marks/mod.rs``): a hello, then one request line
after another on the same connection, each answered in order, and the guard's pushes (its
warning) in between. A reader thread takes every line the guard sends: answers go to the
request waiting for them, pushes to the callbacks of :func:`headroom_memory.on_warning` (on
a thread of their own, so a callback may mark). A
guard of version 1 (it answers the hello with an error) gets one connection per mark, as
``headroom mark`` does, and no warning.

Where the guard is: ``$HEADROOM_MARK`` (``headroom guard`` sets it for its command), else
the sockets of the run folder that the package's own binary names (``headroom mark
--run-dir``): a ``headroom watch`` of this process, or the app, greets a member of its job.
Outside any job nothing is found, and nothing is said. No process is started per mark: the
run folder is asked for once per process, and looked through at most every
:data:`RETRY_SECONDS` while no guard is found.

Never raises into the caller: trouble (a guard that is gone, refuses, or is slow) is one
:class:`HeadroomWarning` per process at most. Thread-safe (one lock around each request). A
forked child drops the parent's connection (``os.register_at_fork``) and opens its own.
"""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import _errors, _socket
from ._binary import binary_path

#: The protocol version spoken (the guard's `PROTOCOL_VERSION`).
PROTOCOL_VERSION = 2
#: How long a request waits for the guard's answer (the guard answers `queued` after 1 s).
ANSWER_SECONDS = 5.0
#: How often, at most, a process not yet connected looks for its guard again.
RETRY_SECONDS = 5.0
#: The environment variable `headroom guard` sets for its command.
MARK_ENV = "HEADROOM_MARK"

_GONE = object()  # the reader's last word: the connection closed


class Client:
    """One process's connection to its job's guard (see the module docs)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._sock: socket.socket | None = None
        self._version = 0
        self._path: Path | None = None
        self._answers: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._unanswered = 0
        self._next_try = 0.0
        self._env_refused = False
        self._stages_full = False
        self._push: Callable[[dict[str, Any]], None] = lambda _push: None

    # --- requests -----------------------------------------------------------------------

    def send(self, request: dict[str, Any]) -> bool:
        """Sends ``request``; True once the guard took it (`ok` or `queued`). False outside
        any guard, or when the guard refused it (said once)."""
        with self._lock:
            if self._stages_full and "stage" in request:
                return False  # the guard records no more stages of this job
            if not self._connect():
                return False
            line = json.dumps(request, separators=(",", ":")).encode() + b"\n"
            if self._version == 1:
                return self._one_shot(line)
            try:
                assert self._sock is not None
                self._sock.sendall(line)
            except OSError as e:
                self._lost(f"the guard of this job is gone (sending failed: {e.strerror or e})")
                return False
            self._unanswered += 1
            return self._answer()

    def connect(self) -> bool:
        """Connects now if a guard is found (for a process that wants its warnings)."""
        with self._lock:
            return self._connect()

    def on_push(self, push: Callable[[dict[str, Any]], None]) -> None:
        """Where the guard's pushes go (called on a thread of its own, one per push)."""
        self._push = push

    def connected(self) -> bool:
        """True while a version-2 session is open."""
        return self._sock is not None and self._version == 2

    def _answer(self) -> bool:
        """Waits for the answer to the last request (earlier late answers are dropped)."""
        deadline = time.monotonic() + ANSWER_SECONDS
        while self._unanswered > 0:
            try:
                answer = self._answers.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                _errors.warn("the guard did not answer a mark within 5 s; the job goes on")
                return False
            if answer is _GONE:
                self._lost("the guard of this job is gone")
                return False
            self._unanswered -= 1
        return self._taken(str(answer))

    def _taken(self, answer: str) -> bool:
        if answer in ("ok", "queued"):
            return True
        if "stages already: no more are recorded" in answer:
            self._stages_full = True  # later marks are not sent: they cost a round trip
        _errors.warn(f"the guard refused a mark: {answer.removeprefix('error: ')}")
        return False

    def _one_shot(self, line: bytes) -> bool:
        """Version 1: one connection for this request."""
        assert self._path is not None
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(ANSWER_SECONDS)
                s.connect(str(self._path))
                s.sendall(line)
                answer = s.makefile("rb").readline().decode(errors="replace").strip()
        except OSError as e:
            self._lost(f"the guard of this job is gone ({e.strerror or e})")
            return False
        if not answer:
            self._lost("the guard of this job closed the connection")
            return False
        return self._taken(answer)

    # --- the connection -----------------------------------------------------------------

    def _connect(self) -> bool:
        if self._sock is not None or self._version == 1:
            return True
        now = time.monotonic()
        if now < self._next_try:
            return False
        self._next_try = now + RETRY_SECONDS
        env = os.environ.get(MARK_ENV, "")
        if env:
            return self._from_env(Path(env))
        for path in _run_dir_sockets():
            try:
                if self._open(path, ancestor=False, quiet=True):
                    return True
            except (_socket.Refused, OSError):
                continue
        return False

    def _from_env(self, path: Path) -> bool:
        if self._env_refused:
            return False
        try:
            return self._open(path, ancestor=True, quiet=False)
        except _socket.Refused as e:
            self._env_refused = True
            _errors.warn(f"${MARK_ENV} is not this job's guard ({e}): marks are off")
        except OSError as e:
            _errors.warn(f"the guard of this job is gone ({path}: {e.strerror or e})")
        return False

    def _open(self, path: Path, *, ancestor: bool, quiet: bool) -> bool:
        """Checks and greets the socket at ``path``; True once a session (or a version-1
        guard, for ``$HEADROOM_MARK``) is there."""
        named = _socket.check_path(path)
        if ancestor:
            _socket.check_ancestor(named)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(ANSWER_SECONDS)
            sock.connect(str(path))
            _socket.check_peer(sock, named)
            sock.sendall(json.dumps({"hello": PROTOCOL_VERSION}).encode() + b"\n")
            reader = sock.makefile("rb")
            greeting = reader.readline().decode(errors="replace").strip()
        except BaseException:
            sock.close()
            raise
        if greeting.startswith("{"):
            hello = json.loads(greeting)
            if hello.get("guard") != named or int(hello.get("headroom", 0)) < 2:
                sock.close()
                raise _socket.Refused(f"{path} did not greet as a Headroom guard")
            sock.settimeout(None)
            answers: queue.SimpleQueue[object] = queue.SimpleQueue()
            self._sock, self._version, self._path = sock, 2, path
            self._answers, self._unanswered = answers, 0
            threading.Thread(
                target=self._read, args=(reader, answers), name="headroom-memory", daemon=True
            ).start()
            return True
        sock.close()
        if greeting.startswith("error: not a mark line") and not quiet:
            self._version, self._path = 1, path  # a guard of version 1
            return True
        if not quiet:
            why = greeting.removeprefix("error: ") or "it closed the connection"
            _errors.warn(f"the guard at {path} refused this process: {why}")
        return False

    def _read(self, reader: Any, answers: queue.SimpleQueue[object]) -> None:
        """The reader thread of one session: answers to the waiting request, pushes to the
        callbacks."""
        while True:
            try:
                raw = reader.readline()
            except (OSError, ValueError):
                raw = b""
            if not raw:
                answers.put(_GONE)
                return
            line = raw.decode(errors="replace").strip()
            if line.startswith("{"):
                try:
                    push = json.loads(line)
                except ValueError:
                    continue
                # On a thread of its own: a callback that marks must not wait for this
                # reader, which delivers the answer.
                threading.Thread(
                    target=self._push, args=(push,), name="headroom-memory-push", daemon=True
                ).start()
            else:
                answers.put(line)

    def _lost(self, why: str) -> None:
        """The session is over: said once; the guard is looked for again later."""
        _errors.warn(f"{why}; the job goes on without marks")
        self._close()
        self._next_try = time.monotonic() + RETRY_SECONDS
        self._env_refused = True  # a guard that is gone does not come back at that path

    def _close(self) -> None:
        sock, self._sock, self._version = self._sock, None, 0
        self._unanswered = 0
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # wakes the reader thread: it ends
                sock.close()
            except OSError:
                pass

    def forget_after_fork(self) -> None:
        """In a forked child: the parent's connection (and its lock, its reader thread) are
        not this process's; a fresh one is opened at the next mark."""
        self._lock = threading.RLock()
        sock, self._sock, self._version = self._sock, None, 0
        self._answers = queue.SimpleQueue()
        self._unanswered = 0
        self._next_try = 0.0
        self._env_refused = False
        if sock is not None:
            # This process's copy of the descriptor only: no shutdown, which would end the
            # parent's session too.
            try:
                os.close(sock.detach())
            except OSError:
                pass


_run_dir: list[Path | None] = []


def _run_dir_sockets() -> list[Path]:
    """The sockets of the run folder (asked of the package's binary once per process)."""
    if not _run_dir:
        _run_dir.append(_ask_run_dir())
    folder = _run_dir[0]
    if folder is None:
        return []
    try:
        return sorted(p for p in folder.iterdir() if p.name.endswith(".sock"))
    except OSError:
        return []


def _ask_run_dir() -> Path | None:
    try:
        out = subprocess.run(
            [str(binary_path()), "mark", "--run-dir"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (_errors.HeadroomError, OSError, subprocess.SubprocessError):
        return None
    text = out.stdout.strip()
    return Path(text) if text else None


CLIENT = Client()


def _after_fork_in_child() -> None:
    CLIENT.forget_after_fork()
    _errors.reset_after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
