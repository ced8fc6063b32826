"""The one connection of this process to its job's guard, reused by every mark.

Protocol version 2 (documented in ``core/src/socket/mod.rs``): a hello, then one request line
after another on the same connection, each answered in order, and the guard's pushes (its
warning) in between. A mark does not wait for its answer: it is sent, and the guard takes it
in order, with the moment it reads it (microseconds later; a round trip would cost the job a
guard's check each time). A reader thread takes every line the guard sends: each answer is
matched with its request, in order (a refusal is said then, as a warning), pushes go to the
callbacks of :func:`headroom_memory.on_warning` (on a thread of their own, so a callback may
mark). At exit the process waits (up to :data:`DRAIN_SECONDS`) until every mark it sent is
answered: the guard takes a mark only from a live member of its job. A guard of version 1
(it answers the hello with an error) gets one connection per mark, as ``headroom mark``
does, and no warning.

Where the guard is: ``$HEADROOM_MARK`` (``headroom guard`` sets it for its command), else
the sockets of the run folder that the package's own binary names (``headroom mark
--run-dir``), each named after its process (``<pid>.sock``). A socket named after an
ancestor of this process is its own guard (one that started it, whose variable was lost):
greeted at once. Any other (a ``headroom watch`` of this process, the app, or another job's
guard, perhaps stopped or stuck) is greeted in the background, each on a thread of its own:
a mark never waits for its greeting. The watch or the app greets a member of its job; once
one does, the session is this process's, and the last stage marked meanwhile is passed on
(it returned False: it was not taken then; marked again next, it is not sent twice).
Outside any job nothing is found, and nothing is said. No process is started per mark: the
run folder is asked for once per process, and looked through at most every
:data:`RETRY_SECONDS` while no guard is found; a mark in between costs a clock read.

Never raises into the caller: trouble (a guard that is gone, refuses, is slow, or says what
this version cannot read) is one :class:`HeadroomWarning` per process at most, and a
connection whose greeting is not a guard's is closed. Thread-safe (one lock around each
request). A forked child drops the parent's connection (``os.register_at_fork``) and opens
its own.
"""

from __future__ import annotations

import atexit
import collections
import json
import os
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from . import _errors, _socket
from ._binary import binary_path

#: The protocol version spoken (the guard's `PROTOCOL_VERSION`).
PROTOCOL_VERSION = 2
#: How long a greeting (and a version-1 guard's answer) is waited for.
ANSWER_SECONDS = 5.0
#: How often, at most, a process not yet connected looks for its guard again.
RETRY_SECONDS = 5.0
#: The environment variable `headroom guard` sets for its command.
MARK_ENV = "HEADROOM_MARK"
#: The longest greeting read (a guard's is some 30 bytes).
GREETING_BYTES = 4096
#: How long a process that exits waits, at most, for its guard to answer the marks it sent.
DRAIN_SECONDS = 5.0



class Client:
    """One process's connection to its job's guard (see the module docs)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._sock: socket.socket | None = None
        self._version = 0
        self._path: Path | None = None
        self._in_flight: collections.deque[dict[str, Any]] = collections.deque()
        self._next_try = 0.0
        self._env_refused = False
        self._names_refused: set[str] = set()  # new stage names past the guard's cap
        self._greeting: set[Path] = set()  # sockets being greeted in the background
        self._pending: dict[str, Any] | None = None  # the stage marked meanwhile
        self._passed_on: dict[str, Any] | None = None  # that stage, once sent for it
        self._push: Callable[[dict[str, Any]], None] = lambda _push: None

    # --- requests -----------------------------------------------------------------------

    def send(self, request: dict[str, Any]) -> bool:
        """Sends ``request``; True once it is on its way to the guard (a session: its answer
        comes later, a refusal said then; a version-1 guard: it took it). False outside any
        guard, when the guard is gone, or for a new stage name it refused before."""
        with self._lock:
            if request.get("stage") in self._names_refused:
                return False  # a new name past the guard's cap: refused again, not sent
            if not self._connect():
                if self._greeting and "stage" in request:
                    self._pending = request  # passed on if a socket greeted meanwhile answers
                return False
            passed_on, self._passed_on = self._passed_on, None
            if request == passed_on:
                return True  # marked again at once (it returned False): it is the stage now
            return self._send_now(request)

    def _send_now(self, request: dict[str, Any]) -> bool:
        """Sends ``request`` on the open session (or version-1 guard); the lock is held."""
        line = json.dumps(request, separators=(",", ":")).encode() + b"\n"
        if self._version == 1:
            return self._one_shot(line, request)
        try:
            assert self._sock is not None
            # Its answer is matched by the reader thread, in order (see the module docs).
            self._in_flight.append(request)
            self._sock.sendall(line)
        except OSError as e:
            self._lost(f"the guard of this job is gone (sending failed: {e.strerror or e})")
            return False
        return True

    def drain(self, timeout: float = DRAIN_SECONDS) -> None:
        """Waits (at most ``timeout``) until the guard has answered every mark sent. Run at
        exit: a guard takes a mark only from a live member of its job, so the marks sent
        just before the process ends are taken while it still is one."""
        deadline = time.monotonic() + timeout
        while self._in_flight and self._sock is not None and time.monotonic() < deadline:
            time.sleep(0.001)

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

    def _taken(self, answer: str, request: dict[str, Any]) -> bool:
        if answer in ("ok", "queued"):
            return True
        if "stage names already" in answer and isinstance(request.get("stage"), str):
            # Marks of this new name are refused again: not sent (a round trip each); the
            # names the guard has are always taken.
            self._names_refused.add(request["stage"])
        _errors.warn(f"the guard refused a mark: {answer.removeprefix('error: ')}")
        return False

    def _one_shot(self, line: bytes, request: dict[str, Any]) -> bool:
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
        return self._taken(answer, request)

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
        return self._look_in_run_dir()

    def _from_env(self, path: Path) -> bool:
        if self._env_refused:
            return False
        try:
            named = _socket.check_path(path)
            _socket.check_ancestor(named)
            return self._open(path, named, quiet=False)
        except _socket.Refused as e:
            self._env_refused = True
            _errors.warn(f"${MARK_ENV} is not this job's guard ({e}): marks are off")
        except OSError as e:
            _errors.warn(f"the guard of this job is gone ({path}: {e.strerror or e})")
        return False

    def _look_in_run_dir(self) -> bool:
        """Greets the run folder's socket named after an ancestor (this job's own guard) now,
        and any other in the background (see the module docs). Never waits for a process
        that is not an ancestor; says nothing."""
        ancestors = _socket.ancestors()  # None: not known here (no /proc)
        later: list[tuple[Path, int]] = []
        for path in _run_dir_sockets():
            try:
                named = _socket.check_path(path)
            except _socket.Refused:
                continue
            if ancestors is not None and named in ancestors:
                try:
                    if self._open(path, named, quiet=True):
                        return True
                except (_socket.Refused, OSError):
                    continue
            elif path not in self._greeting:
                later.append((path, named))
        for path, named in later:
            self._greeting.add(path)
            threading.Thread(target=self._greet_in_background, args=(path, named),
                             name="headroom-memory-find", daemon=True).start()
        return False

    def _greet_in_background(self, path: Path, named: int) -> None:
        """A thread of its own: greets ``path``; the first socket whose guard greets this
        process as a member of its job becomes the session, and the stage marked
        meanwhile is sent."""
        try:
            sock, reader, greeting = _greet(path, named)
        except (_socket.Refused, OSError):
            sock = None
        with self._lock:
            self._greeting.discard(path)
            unused = self._sock is None and self._version == 0
            if sock is not None and unused and _is_greeting(greeting, named):
                self._start_session(sock, reader, path)
                pending, self._pending = self._pending, None
                if pending is not None and self._send_now(pending):
                    self._passed_on = pending
                return
            if sock is not None:
                sock.close()
            if not self._greeting:
                self._pending = None  # nobody took it

    def _open(self, path: Path, named: int, *, quiet: bool) -> bool:
        """Greets the socket at ``path`` (checked, named after ``named``) and waits for its
        greeting; True once a session (or a version-1 guard, unless ``quiet``) is there.
        Raises :class:`_socket.Refused` for a greeting that is not a guard's (the socket is
        closed), or ``OSError``."""
        sock, reader, greeting = _greet(path, named)
        if greeting.startswith("{"):
            if not _is_greeting(greeting, named):
                sock.close()
                raise _socket.Refused(f"{path} did not greet as a Headroom guard")
            self._start_session(sock, reader, path)
            return True
        sock.close()
        if greeting.startswith("error: not a mark line") and not quiet:
            self._version, self._path = 1, path  # a guard of version 1
            return True
        if not quiet:
            why = greeting.removeprefix("error: ") or "it closed the connection"
            _errors.warn(f"the guard at {path} refused this process: {why}")
        return False

    def _start_session(self, sock: socket.socket, reader: IO[bytes], path: Path) -> None:
        """``sock`` (greeted) is this process's session now; its reader thread starts."""
        sock.settimeout(None)
        in_flight: collections.deque[dict[str, Any]] = collections.deque()
        self._sock, self._version, self._path = sock, 2, path
        self._in_flight = in_flight
        threading.Thread(
            target=self._read, args=(sock, reader, in_flight), name="headroom-memory",
            daemon=True,
        ).start()

    def _read(
        self, sock: socket.socket, reader: Any, in_flight: collections.deque[dict[str, Any]]
    ) -> None:
        """The reader thread of one session: each answer matched with its request, in order;
        pushes to the callbacks; the session's end said once."""
        while True:
            try:
                raw = reader.readline()
            except (OSError, ValueError):
                raw = b""
            if not raw:
                with self._lock:
                    if self._sock is sock:  # not closed on purpose, nor replaced
                        self._lost("the guard of this job is gone")
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
                try:
                    request = in_flight.popleft()
                except IndexError:
                    continue  # an answer to nothing sent: not this version's to read
                self._taken(line, request)

    def _lost(self, why: str) -> None:
        """The session is over: said once; the guard is looked for again later."""
        _errors.warn(f"{why}; the job goes on without marks")
        self._close()
        self._next_try = time.monotonic() + RETRY_SECONDS
        self._env_refused = True  # a guard that is gone does not come back at that path

    def _close(self) -> None:
        sock, self._sock, self._version = self._sock, None, 0
        self._in_flight = collections.deque()
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
        self._in_flight = collections.deque()
        self._next_try = 0.0
        self._env_refused = False
        self._greeting = set()  # the parent's greeting threads are not this process's
        self._pending = self._passed_on = None
        if sock is not None:
            # This process's copy of the descriptor only: no shutdown, which would end the
            # parent's session too.
            try:
                os.close(sock.detach())
            except OSError:
                pass


def _greet(path: Path, named: int) -> tuple[socket.socket, IO[bytes], str]:
    """Connects to ``path``, checks that process ``named`` of this user listens, says hello
    and reads the greeting (waiting :data:`ANSWER_SECONDS` at most); the socket, its
    reader and the greeting's line. Raises :class:`_socket.Refused` or ``OSError`` (the
    socket closed)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(ANSWER_SECONDS)
        sock.connect(str(path))
        _socket.check_peer(sock, named)
        sock.sendall(json.dumps({"hello": PROTOCOL_VERSION}).encode() + b"\n")
        reader = sock.makefile("rb")
        greeting = reader.readline(GREETING_BYTES).decode(errors="replace").strip()
    except BaseException:
        sock.close()
        raise
    return sock, reader, greeting


def _is_greeting(greeting: str, named: int) -> bool:
    """True when ``greeting`` is a guard's, version 2 or later, of process ``named``:
    ``{"headroom":2,"guard":4242}``. Anything else (not JSON, not an object, a version or
    pid that is not a whole number) is False, never an exception."""
    try:
        hello = json.loads(greeting)
    except (ValueError, RecursionError):
        return False
    if not isinstance(hello, dict):
        return False
    version, guard = hello.get("headroom"), hello.get("guard")
    if not isinstance(version, int) or not isinstance(guard, int):
        return False  # a float, a string, null, a list...
    if isinstance(version, bool) or isinstance(guard, bool):
        return False
    return version >= 2 and guard == named


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
atexit.register(CLIENT.drain)


def _after_fork_in_child() -> None:
    CLIENT.forget_after_fork()
    _errors.reset_after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
