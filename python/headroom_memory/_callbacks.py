"""What the guard tells the job, heard in Python: ``on_warning``, ``on_pause``, ``on_stop``.

The guard pushes its warning (once the job's swap growth passes 80 % of the budget, again
after a resume), a pause and a stop to every session open on the job's socket (protocol
version 2). Warning and pause callbacks run on a thread of their own (they may mark), in the
order registered; an exception in one is printed (once) and the others still run. A paused
process runs nothing: pause callbacks run once the job runs again.

A stop is SIGTERM, then SIGKILL after the guard's grace. ``on_stop`` installs a SIGTERM
handler (from the main thread: Python runs signal handlers there) which runs the stop
callbacks in the main thread, with what the guard said (it waits :data:`STOP_WAIT_SECONDS`
at most for the guard's word, which races the signal), or with ``from_guard=False`` for a
SIGTERM from anyone else; then it ends the process as SIGTERM would have (or calls the
handler that was there before, or ignores it if it was ignored).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any, TypeVar

from . import _errors
from ._client import CLIENT, RETRY_SECONDS
from ._errors import HeadroomError

#: How long a SIGTERM waits for the guard's word on why it stops the job.
STOP_WAIT_SECONDS = 0.5


@dataclass(frozen=True)
class GuardWarning:
    """What the guard saw when it warned."""

    #: Swap growth counted against the budget (since the start, or the last resume), bytes.
    growth_bytes: int
    #: The budget, bytes.
    budget_bytes: int
    #: What the guard will do at the budget: ``"stop"``, ``"pause"`` or ``"interrupt"``.
    then: str
    #: The stage the job was in, if it marked any.
    stage: str | None
    #: The job's pid (its leader).
    job: int


@dataclass(frozen=True)
class GuardPause:
    """The guard paused the job (heard once it runs again)."""

    #: Swap growth since the job started, bytes.
    growth_bytes: int
    #: Which pause this was (1 for the first).
    pause: int
    #: Pauses allowed before a crossing stops the job.
    max_pauses: int
    #: Why, in words; ``None`` when a user asked for the pause.
    reason: str | None
    #: The stage the job was in, if it marked any.
    stage: str | None
    #: The job's pid (its leader).
    job: int


@dataclass(frozen=True)
class GuardStop:
    """The job is being stopped: SIGTERM came; SIGKILL follows after ``grace_seconds``."""

    #: Why, in words (the guard's), or what is known without it.
    reason: str
    #: Time from SIGTERM to SIGKILL, seconds; ``None`` when not known (``from_guard`` False).
    grace_seconds: float | None
    #: The stage the job was in, if it marked any.
    stage: str | None
    #: The job's pid (its leader); this process's when not known.
    job: int
    #: True when the guard said why; False for a SIGTERM the guard did not announce.
    from_guard: bool


C = TypeVar("C", bound=Callable[..., object])

_callbacks: dict[str, list[Callable[[Any], object]]] = {"warning": [], "paused": [], "stopping": []}
_lock = threading.Lock()
_finder: list[threading.Thread] = []
_reported_failure = threading.Event()
_stop_heard = threading.Event()
_stop_said: list[GuardStop] = []
_stop_handler: list[Any] = []  # the SIGTERM handler that was there before ours, once ours is
_stop_owner: list[int] = []  # the process that registered the stop callbacks
_stopping = threading.Event()  # the stop callbacks are running (or ran)


def on_warning(callback: C) -> C:
    """Registers ``callback(warning)`` to run when the guard warns (see
    :class:`GuardWarning`); returns it, so it also works as a decorator. Connects to the
    guard now if there is one (a process watched later is found within a few seconds)."""
    return _register("warning", callback)


def on_pause(callback: C) -> C:
    """Registers ``callback(pause)`` to run when the guard has paused the job (see
    :class:`GuardPause`), once the job runs again; returns it. Connects as
    :func:`on_warning`."""
    return _register("paused", callback)


def on_stop(callback: C) -> C:
    """Registers ``callback(stop)`` to run in the main thread when the job is stopped (see
    :class:`GuardStop` and the module docs): save a checkpoint within the guard's grace.
    Returns it. Raises :class:`HeadroomError` when called from a thread other than the main
    one (only it can handle a signal)."""
    if threading.current_thread() is not threading.main_thread():
        raise HeadroomError("on_stop must be called from the main thread (it handles SIGTERM)")
    with _lock:
        if not _stop_handler:
            _stop_handler.append(signal.getsignal(signal.SIGTERM))
            signal.signal(signal.SIGTERM, _on_sigterm)
        _stop_owner[:] = [os.getpid()]
    return _register("stopping", callback)


def _register(kind: str, callback: C) -> C:
    # The list is appended to under the lock; the connection (which may wait seconds for a
    # greeting) is made outside it, so a SIGTERM's handler never waits for this thread.
    with _lock:
        _callbacks[kind].append(callback)
    if not CLIENT.connect():
        with _lock:
            if _finder:
                return callback
            finder = threading.Thread(target=_find, name="headroom-memory-find", daemon=True)
            _finder.append(finder)
        finder.start()
    return callback


def _find() -> None:
    """Looks for the guard every few seconds until connected (a watch may come later)."""
    stop = threading.Event()
    while not CLIENT.connect():
        stop.wait(RETRY_SECONDS)


def _dispatch(push: object) -> None:
    """A push from the guard (on a thread of its own): the callbacks of its kind run, or,
    for a stop, what the guard said is kept for the SIGTERM handler."""
    if not isinstance(push, dict) or len(push) != 1:
        return  # a push this version does not know
    kind, body = next(iter(push.items()))
    known = _KINDS.get(kind)
    if known is None:
        return  # a push this version does not know
    heard = known[0](body)
    if heard is None:
        _errors.warn(f"the guard sent a {kind} push this version cannot read; it is dropped")
        return
    if isinstance(heard, GuardStop):
        _stop_said.append(heard)
        _stop_heard.set()
        return
    _run(kind, heard)


def _run(kind: str, heard: object) -> None:
    # A copy without the lock (one step under the GIL): the SIGTERM handler runs this in the
    # main thread, which may hold the lock where the signal found it.
    callbacks = list(_callbacks[kind])
    for callback in callbacks:
        try:
            callback(heard)
        except Exception:  # noqa: BLE001 - the user's callback must not end the reader
            if not _reported_failure.is_set():
                _reported_failure.set()
                print(f"headroom_memory: an on_{_KINDS[kind][1]} callback failed:",
                      file=sys.stderr)
                traceback.print_exc()


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    """SIGTERM: the stop callbacks with the guard's word (waited for a moment when a guard
    is connected), then what SIGTERM did before. A forked child (a DataLoader's worker)
    inherits the handler, not the callbacks: it does what SIGTERM did before at once."""
    if _stop_owner != [os.getpid()]:
        _before(signum, frame)
        return
    if _stopping.is_set():
        return  # a second SIGTERM while the callbacks run: they run once
    _stopping.set()
    if CLIENT.connected():
        _stop_heard.wait(STOP_WAIT_SECONDS)
    stop = _stop_said[-1] if _stop_said else GuardStop(
        reason="SIGTERM (not announced by a guard)", grace_seconds=None,
        stage=None, job=os.getpid(), from_guard=False,
    )
    _run("stopping", stop)
    _before(signum, frame)


def _before(signum: int, frame: FrameType | None) -> None:
    """What SIGTERM did before :func:`on_stop`: its handler, nothing (ignored), or the end
    of the process by SIGTERM."""
    before = _stop_handler[0] if _stop_handler else signal.SIG_DFL
    if callable(before):
        before(signum, frame)
    elif before != signal.SIG_IGN:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)


def _whole(*values: object) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) for v in values)


def _text_or_none(*values: object) -> bool:
    return all(v is None or isinstance(v, str) for v in values)


def _warning_of(body: object) -> GuardWarning | None:
    """The warning a push carries; ``None`` when it is malformed (not an object, or a field
    of the wrong type: a count that is not a whole number, a stage that is not text):
    dropped, never raised. A field left out takes its default (0, ``""``, no stage)."""
    if not isinstance(body, dict):
        return None
    growth, budget, job = (body.get(k, 0) for k in ("growth_bytes", "budget_bytes", "job"))
    then, stage = body.get("then", ""), body.get("stage")
    if not _whole(growth, budget, job) or not isinstance(then, str) or not _text_or_none(stage):
        return None
    return GuardWarning(growth_bytes=growth, budget_bytes=budget, then=then, stage=stage,
                        job=job)


def _pause_of(body: object) -> GuardPause | None:
    """The pause a push carries; ``None`` when malformed (as :func:`_warning_of`)."""
    if not isinstance(body, dict):
        return None
    growth, pause, most, job = (body.get(k, 0) for k in
                                ("growth_bytes", "pause", "max_pauses", "job"))
    reason, stage = body.get("reason"), body.get("stage")
    if not _whole(growth, pause, most, job) or not _text_or_none(reason, stage):
        return None
    return GuardPause(growth_bytes=growth, pause=pause, max_pauses=most, reason=reason,
                      stage=stage, job=job)


def _stop_of(body: object) -> GuardStop | None:
    """The stop a push carries; ``None`` when malformed (as :func:`_warning_of`)."""
    if not isinstance(body, dict):
        return None
    reason, grace, stage, job = (body.get(k) for k in ("reason", "grace_ms", "stage", "job"))
    if not isinstance(reason, str) or not _whole(grace, job) or not _text_or_none(stage):
        return None
    assert isinstance(grace, int) and isinstance(job, int)
    return GuardStop(reason=reason, grace_seconds=grace / 1000, stage=stage, job=job,
                     from_guard=True)


#: Each push this version reads: its reader, and the name of its callbacks' ``on_`` function.
_KINDS: dict[str, tuple[Callable[[object], object], str]] = {
    "warning": (_warning_of, "warning"),
    "paused": (_pause_of, "pause"),
    "stopping": (_stop_of, "stop"),
}

CLIENT.on_push(_dispatch)


def _after_fork_in_child() -> None:
    _finder.clear()  # the parent's finder thread is not this process's
    _stop_said.clear()
    _stop_heard.clear()
    _stopping.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
