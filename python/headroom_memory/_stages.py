"""Stages from Python: :func:`mark` and :class:`stage`, over the process's one connection to
its guard (:mod:`headroom_memory._client`).

A stage runs from its mark to the next one (the guard keeps one current stage per job), or
to its end: leaving the outermost ``with stage()`` ends it (:func:`end_stage`), so what
follows is charged to no stage. Nested stages mean what they say: entering an inner stage
marks it, leaving it marks the outer stage again, so the time after the inner one is charged
to the outer one. The stack of open stages is the process's (threads share it, as they
share the job's current stage).
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from . import _errors
from ._client import CLIENT
from ._names import check_name

_stack_lock = threading.Lock()
_stack: list[tuple[object, str]] = []
# The stage this process last marked (None after an end), whoever marked it: the user's own
# marks, :class:`stage` and the automatic stages of :mod:`headroom_memory.pytorch` all pass
# here, so an automatic stage knows whether it is still the current one.
_last: list[str | None] = [None]


def mark(name: str) -> bool:
    """Marks the start of stage ``name`` now. True once it is on its way to the guard (its
    answer is not waited for: a refusal is a :class:`HeadroomWarning` when it comes); False
    outside any guard (silently) or when it could not be sent (one warning on stderr at
    most). Never raises: a bad name is a warning too."""
    try:
        checked = check_name(name)
    except (TypeError, ValueError) as e:
        _errors.warn(f"mark skipped: {e}", once=False)
        return False
    _last[0] = checked
    return CLIENT.send({"stage": checked})


def last_marked() -> str | None:
    """The stage this process marked last (by any path), or None when none is under way."""
    return _last[0]


def end_stage() -> bool:
    """Ends the stage under way now: what follows belongs to no stage until the next mark.
    True once it is on its way to the guard, as :func:`mark`; never raises."""
    _last[0] = None
    return CLIENT.send({"stage": None})


def report(kind: str, name: str | None = None, **fields: Any) -> bool:
    """Reports a ``load``, ``reload``, ``release`` or ``mark`` (stageload's events) for the
    job's trace: ``name`` (the model), ``stage``, ``nbytes``, ``seconds``, ``note``. True
    once it is on its way to the guard, as :func:`mark`; never raises."""
    event: dict[str, Any] = {"kind": kind}
    try:
        for key, value in (("name", name), ("stage", fields.get("stage")),
                           ("note", fields.get("note"))):
            if value is not None:
                event[key] = check_name(value, f"an event's {key}")
        if fields.get("nbytes") is not None:
            event["nbytes"] = max(0, int(fields["nbytes"]))
        if fields.get("seconds") is not None:
            event["seconds"] = max(0.0, float(fields["seconds"]))
    except (TypeError, ValueError) as e:
        _errors.warn(f"report skipped: {e}", once=False)
        return False
    return CLIENT.send({"event": event})


class stage(contextlib.ContextDecorator):
    """``with stage("decode"):`` marks ``decode`` on entering and, on leaving, marks the
    stage it is nested in again, or ends it when it is the outermost (:func:`end_stage`).
    Also a decorator: ``@stage("decode")``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._tokens: list[object] = []

    def __enter__(self) -> stage:
        token = object()
        self._tokens.append(token)
        with _stack_lock:
            _stack.append((token, self.name))
        mark(self.name)
        return self

    def __exit__(self, *exc: object) -> None:
        token = self._tokens.pop() if self._tokens else None
        with _stack_lock:
            was_top = bool(_stack) and _stack[-1][0] is token
            _stack[:] = [entry for entry in _stack if entry[0] is not token]
            outer = _stack[-1][1] if (was_top and _stack) else None
            outermost = was_top and not _stack
        if outer is not None:
            mark(outer)
        elif outermost:
            end_stage()


def current_stage() -> str | None:
    """The innermost open :class:`stage` of this process, if any."""
    with _stack_lock:
        return _stack[-1][1] if _stack else None
