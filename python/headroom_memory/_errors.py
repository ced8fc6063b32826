"""The package's error and warning types, and the one-warning-per-process rule for trouble
with the guard's connection."""

from __future__ import annotations

import os
import sys
import threading
import types
import warnings


class HeadroomError(Exception):
    """Raised by calls the user makes on purpose (:func:`fits`) when they cannot be answered:
    the package's own ``headroom`` binary is missing or fails. Marks never raise."""


class HeadroomWarning(UserWarning):
    """Said (on stderr, through :mod:`warnings`) when a mark could not be sent: a bad stage
    name, or a guard that is gone, refused or slow. The job goes on."""


_said = threading.Event()


def warn(message: str, *, once: bool = True) -> None:
    """Says ``message`` as a :class:`HeadroomWarning`, pointing at the caller's line (the
    first frame outside this package); with ``once`` (trouble with the guard's connection)
    only the first time in this process, whatever the message."""
    if once:
        if _said.is_set():
            return
        _said.set()
    try:
        warnings.warn(message, HeadroomWarning, stacklevel=_outside_frames())
    except HeadroomWarning:
        # `-W error`: the user asked for warnings as errors; a mark still never raises.
        pass


def _outside_frames() -> int:
    """The stack level of the first frame outside this package (for ``warnings.warn``)."""
    package = os.path.dirname(os.path.abspath(__file__))
    frame: types.FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and os.path.dirname(
        os.path.abspath(frame.f_code.co_filename)
    ) == package:
        frame = frame.f_back
        level += 1
    return level


def reset_after_fork() -> None:
    """A forked child may say its own warning once."""
    global _said
    _said = threading.Event()
