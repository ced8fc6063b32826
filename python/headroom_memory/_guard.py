"""A guard for the running process: ``with headroom_memory.guard(swap_budget="8G"):``, the
same as a decorator, and the ``%%guard`` cell magic of a Jupyter kernel.

It runs this package's ``headroom watch PID --guard`` on the current process (and its
children). In a notebook, stopping the process loses the kernel's state, so the default
action at the budget is ``interrupt``: SIGINT to this process, which Python raises as
``KeyboardInterrupt`` in the running cell or script (a checkpoint can be saved, the kernel
lives); if swap still grows half a budget more the guard stops it; once swap stops growing
the whole budget counts again. ``on_budget="stop"`` and ``"pause"`` are the terminal
guard's actions.

The watch must not be a descendant of the process it guards (a guard never signals its own
ancestors): it is started in the background of a shell that exits at once, so it is
re-parented away from this process. It ends when the ``with`` block does; the process is
left running, and the guard's :attr:`Guard.verdict` says what the block did to memory.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from . import _errors
from ._binary import binary_path
from ._errors import HeadroomError
from ._results import Verdict, verdict_of

#: How long :func:`guard` waits for the watch to take the process up.
START_SECONDS = 10.0

_ACTIONS = ("interrupt", "stop", "pause")


class Guard(contextlib.ContextDecorator):
    """The guard of the running process while a ``with`` block (or a decorated function)
    runs. ``swap_budget`` is a size (``"8G"``, ``"500M"``, or bytes); ``on_budget`` what the
    guard does at it; ``poll`` how often it checks (``"0.5s"``); ``resume_calm`` how long
    swap must stop growing after an interrupt before the budget is whole again;
    ``kill_free`` the free-memory floor, percent, under which it is stopped whatever the
    action (default 10; 0 for none). After the block, :attr:`verdict` holds the watch's
    verdict (swap growth, peak footprint, stages...), or ``None`` if it could not be read."""

    def __init__(
        self,
        swap_budget: str | int = "8G",
        *,
        on_budget: str = "interrupt",
        poll: str | None = None,
        resume_calm: str | None = None,
        kill_free: float | None = None,
        pid: int | None = None,
    ) -> None:
        if on_budget not in _ACTIONS:
            raise ValueError(f"on_budget must be one of {', '.join(_ACTIONS)}, not {on_budget!r}")
        if isinstance(swap_budget, bool) or not isinstance(swap_budget, (str, int)):
            raise TypeError(f"swap_budget must be a size (str or int), not {swap_budget!r}")
        self.pid = os.getpid() if pid is None else pid
        self.args = ["--swap-budget", str(swap_budget), "--on-budget", on_budget]
        if poll is not None:
            self.args += ["--poll", poll]
        if resume_calm is not None:
            self.args += ["--resume-calm", resume_calm]
        if kill_free is not None:
            self.args += ["--kill-free", str(kill_free)]
        self._interrupts = on_budget == "interrupt" and self.pid == os.getpid()
        self._ignore_sigint_after = False
        self.watch_pid: int | None = None
        #: The verdict of the last block this guard watched (``None`` before its end).
        self.verdict: Verdict | None = None
        self._summary: Path | None = None

    def __enter__(self) -> Guard:
        self.verdict = None
        self._hear_interrupts()
        fd, name = tempfile.mkstemp(prefix="headroom-guard-", suffix=".json")
        os.close(fd)
        self._summary = Path(name)
        try:
            self.watch_pid = _start_watch(self.pid, self.args, self._summary)
        except BaseException:
            self._summary.unlink(missing_ok=True)
            self._restore_sigint()
            raise
        return self

    def _hear_interrupts(self) -> None:
        """A process started with SIGINT ignored (a script run in the background of another
        script or shell: POSIX ignores SIGINT there) would never hear the guard's interrupt,
        and would be stopped at half a budget more instead: inside the block SIGINT raises
        ``KeyboardInterrupt`` all the same; the ignore comes back at its end. Only the main
        thread can set it; elsewhere the process stays as it is."""
        self._ignore_sigint_after = False
        if not self._interrupts or threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            self._ignore_sigint_after = True

    def _restore_sigint(self) -> None:
        ignore, self._ignore_sigint_after = self._ignore_sigint_after, False
        if ignore and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.SIG_IGN)

    def __exit__(self, *exc: object) -> None:
        watch, self.watch_pid = self.watch_pid, None
        summary, self._summary = self._summary, None
        if watch is not None:
            _end_watch(watch)
        if summary is not None:
            self.verdict = _read_verdict(summary)
            summary.unlink(missing_ok=True)
        self._restore_sigint()


def _read_verdict(summary: Path) -> Verdict | None:
    """The verdict in the watch's ``--json`` summary; ``None`` (and a warning) when there is
    none to read (the watch was killed, or wrote what this version cannot read)."""
    try:
        return verdict_of(json.loads(summary.read_text()))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        _errors.warn(f"the guard's verdict could not be read from {summary} ({e})", once=False)
        return None


def guard(
    swap_budget: str | int = "8G",
    *,
    on_budget: str = "interrupt",
    poll: str | None = None,
    resume_calm: str | None = None,
    kill_free: float | None = None,
) -> Guard:
    """The guard of the running process: ``with guard(swap_budget="8G"):`` or
    ``@guard("8G")``. Raises :class:`HeadroomError` when the guard cannot start (the
    package's binary is missing, the budget is not a size), ``ValueError`` for an unknown
    ``on_budget``."""
    return Guard(
        swap_budget, on_budget=on_budget, poll=poll, resume_calm=resume_calm, kill_free=kill_free
    )


def _start_watch(pid: int, args: list[str], summary: Path) -> int:
    """Starts ``headroom watch PID --guard --json ARGS`` re-parented away from this process,
    its JSON summary written to ``summary``; its pid once it watches (its socket is
    there)."""
    binary = str(binary_path())
    script = 'out="$1"; shift; "$0" "$@" </dev/null >"$out" & echo $!'
    started = subprocess.run(
        ["/bin/sh", "-c", script, binary, str(summary), "watch", str(pid), "--guard", "--json",
         *args],
        stdout=subprocess.PIPE,
        text=True,
        check=False,
    )
    try:
        watch = int(started.stdout.strip())
    except ValueError:
        raise HeadroomError(f"headroom watch did not start: {started.stdout!r}") from None
    deadline = time.monotonic() + START_SECONDS
    socket = _socket_of(watch)
    while time.monotonic() < deadline:
        if not _alive(watch):
            raise HeadroomError(
                f"headroom watch {pid} --guard {' '.join(args)} ended at once (its error is "
                "on this process's stderr)"
            )
        if socket is None or socket.exists():
            return watch
        time.sleep(0.02)
    _end_watch(watch)
    raise HeadroomError(f"headroom watch {pid} did not start within {START_SECONDS:.0f} s")


def _socket_of(watch: int) -> Path | None:
    """Where the watch's socket will be, the sign that it took the process up (``None``:
    not known; then its start is not waited for)."""
    from ._client import _ask_run_dir

    run_dir = _ask_run_dir()
    return None if run_dir is None else run_dir / f"{watch}.sock"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (not reaped by its new parent yet) is no watch any more.
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except OSError:
        return True


def _end_watch(watch: int) -> None:
    """Ends the watch (SIGTERM: it leaves the process running) and waits for it a little."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(watch, signal.SIGTERM)
    deadline = time.monotonic() + 5.0
    while _alive(watch) and time.monotonic() < deadline:
        time.sleep(0.02)


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext headroom_memory``: the ``%%guard [SWAP_BUDGET] [ACTION] [name=value ...]``
    cell magic, which runs the cell under :func:`guard` (``%%guard 8G``, ``%%guard 8G stop``,
    ``%%guard 8G poll=0.2s kill_free=5``)."""

    def guard_magic(line: str, cell: str) -> None:
        words = [w for w in line.split() if "=" not in w]
        options = dict(w.split("=", 1) for w in line.split() if "=" in w)
        budget = words[0] if words else "8G"
        action = words[1] if len(words) > 1 else "interrupt"
        kill_free = float(options["kill_free"]) if "kill_free" in options else None
        with guard(budget, on_budget=action, poll=options.get("poll"),
                   resume_calm=options.get("resume_calm"), kill_free=kill_free):
            # In the user's namespace, raising what the cell raises (a KeyboardInterrupt at
            # the budget is the cell's answer).
            ipython.ex(cell)  # type: ignore[attr-defined]

    ipython.register_magic_function(  # type: ignore[attr-defined]
        guard_magic, magic_kind="cell", magic_name="guard"
    )
