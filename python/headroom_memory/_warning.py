"""``on_warning``: the guard's warning, heard by the job.

The guard warns once its job's swap growth passes 80 % of the budget (again after a resume);
with protocol version 2 it pushes the warning to every session open on the job's socket. The
callbacks registered here run on a thread of their own (they may mark), in the order
registered; an exception in one is printed (once) and the others still run.
"""

from __future__ import annotations

import os
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass

from . import _errors
from ._client import CLIENT, RETRY_SECONDS


@dataclass(frozen=True)
class GuardWarning:
    """What the guard saw when it warned."""

    #: Swap growth counted against the budget (since the start, or the last resume), bytes.
    growth_bytes: int
    #: The budget, bytes.
    budget_bytes: int
    #: What the guard will do at the budget: ``"stop"`` or ``"pause"``.
    then: str
    #: The stage the job was in, if it marked any.
    stage: str | None
    #: The job's pid (its leader).
    job: int


Callback = Callable[[GuardWarning], object]

_callbacks: list[Callback] = []
_lock = threading.Lock()
_finder: list[threading.Thread] = []
_reported_failure = threading.Event()


def on_warning(callback: Callback) -> Callback:
    """Registers ``callback(warning)`` to run when the guard warns (see
    :class:`GuardWarning`); returns it, so it also works as a decorator. Connects to the
    guard now if there is one (a process watched later is found within a few seconds)."""
    with _lock:
        _callbacks.append(callback)
        if not CLIENT.connect() and not _finder:
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
    if not isinstance(push, dict) or "warning" not in push:
        return  # a push this version does not know
    warning = _warning_of(push["warning"])
    if warning is None:
        _errors.warn("the guard sent a warning this version cannot read; it is dropped")
        return
    with _lock:
        callbacks = list(_callbacks)
    for callback in callbacks:
        try:
            callback(warning)
        except Exception:  # noqa: BLE001 - the user's callback must not end the reader
            if not _reported_failure.is_set():
                _reported_failure.set()
                print("headroom_memory: an on_warning callback failed:", file=sys.stderr)
                traceback.print_exc()


def _warning_of(body: object) -> GuardWarning | None:
    """The warning a push carries; ``None`` when it is malformed (not an object, or a field
    of the wrong type: a count that is not a whole number, a stage that is not text):
    dropped, never raised. A field left out takes its default (0, ``""``, no stage)."""
    if not isinstance(body, dict):
        return None
    growth, budget, job = (body.get(k, 0) for k in ("growth_bytes", "budget_bytes", "job"))
    then, stage = body.get("then", ""), body.get("stage")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (growth, budget, job)):
        return None
    if not isinstance(then, str) or not (stage is None or isinstance(stage, str)):
        return None
    return GuardWarning(growth_bytes=growth, budget_bytes=budget, then=then, stage=stage,
                        job=job)


CLIENT.on_push(_dispatch)


def _after_fork_in_child() -> None:
    _finder.clear()  # the parent's finder thread is not this process's


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
