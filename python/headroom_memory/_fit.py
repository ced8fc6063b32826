"""``fits()``: will this job fit now? Asked of the package's own binary (``headroom fit
--json``, by path), so the answer is the one ``headroom fit`` and ``guard --wait-fit`` give:
the same run history (SQLite), the same prediction and free-memory floor, and it works
before any guard runs (a script choosing its plan), which a question over the guard's socket
could not.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

from ._binary import binary_path
from ._errors import HeadroomError

#: The environment variable `headroom guard` sets for its command: the job's history key.
KEY_ENV = "HEADROOM_KEY"
_FITS, _DOES_NOT_FIT, _NO_HISTORY = 0, 1, 5


@dataclass(frozen=True)
class Fit:
    """The answer of :func:`fits`."""

    #: True when the need fits in the room now.
    fits: bool
    #: What the job needs, bytes (predicted from past runs, or as asked).
    need_bytes: int
    #: Free memory above the guard's floor now, bytes: what the job may take.
    room_bytes: int
    #: How much more room it would need (0 when it fits), bytes.
    short_by_bytes: int
    #: What the need rests on, in words ("needs about 1.2 GiB (3 runs, last 2 h)").
    basis: str
    #: The history key asked about.
    key: str


def fits(key: str | None = None, need: int | None = None) -> Fit | None:
    """Will the job fit now? With ``need`` (bytes), that need; else the prediction from the
    past runs of ``key`` (default: this job's key, ``$HEADROOM_KEY`` under ``headroom
    guard``, else the key ``guard`` would give this command line). ``None`` when the key has
    no past run. Before running anything, raises :class:`TypeError` for a ``key`` that is
    not a ``str``, and :class:`ValueError` for a blank key, a ``need`` that is not a number
    of bytes, or both given; :class:`HeadroomError` when the binary cannot answer."""
    question = _question(key, need)
    args = [str(binary_path()), "fit", "--json", *question]
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError) as e:
        raise HeadroomError(f"headroom fit: {e}") from None
    if out.returncode == _NO_HISTORY:
        return None
    if out.returncode not in (_FITS, _DOES_NOT_FIT):
        raise HeadroomError(f"headroom fit: {out.stderr.strip() or f'exit {out.returncode}'}")
    try:
        return _answer(json.loads(out.stdout))
    except (ValueError, KeyError, TypeError) as e:
        raise HeadroomError(f"headroom fit: an answer this version cannot read ({e})") from None


def _question(key: object, need: object) -> list[str]:
    """The flags of ``headroom fit`` that ask about ``key`` or ``need`` (checked: raises
    :class:`TypeError` or :class:`ValueError` naming the argument). A key goes as
    ``--key=KEY``, so that one beginning with ``-`` is a key, not a flag. ``$HEADROOM_KEY``
    is the default key only when no ``need`` is given."""
    if key is not None and need is not None:
        raise ValueError(
            "fits() takes key or need, not both: key asks about the past runs of a job, "
            "need about a number of bytes"
        )
    if need is not None:
        if isinstance(need, bool) or not isinstance(need, int) or need < 0:
            raise ValueError(f"need must be a number of bytes (int >= 0), not {need!r}")
        return [f"--need={need}"]
    if key is not None:
        return [f"--key={_checked_key(key)}"]
    env = os.environ.get(KEY_ENV) or None
    if env is not None:
        return [f"--key={env}"]
    return ["--", *_command_line()]


def _checked_key(key: object) -> str:
    """``key`` when it can be a history key; raises :class:`TypeError` or
    :class:`ValueError` naming the argument otherwise."""
    if not isinstance(key, str):
        raise TypeError(f"key must be a history key (str), not {type(key).__name__}")
    if not key.strip():
        raise ValueError("key must be a history key, not blank")
    if "\0" in key:
        raise ValueError("key cannot contain a NUL character")
    return key


def _answer(answer: dict[str, Any]) -> Fit:
    """The :class:`Fit` of ``headroom fit --json``'s answer."""
    return Fit(
        fits=bool(answer["fits"]),
        need_bytes=int(answer["prediction"]["need_bytes"]),
        room_bytes=int(answer["room_bytes"]),
        short_by_bytes=int(answer["short_bytes"]),
        basis=str(answer["basis"]),
        key=str(answer["key"]),
    )


def _command_line() -> list[str]:
    """This process's command line as ``headroom guard`` saw it."""
    argv = getattr(sys, "orig_argv", None)
    return list(argv) if argv else [sys.executable, *sys.argv]
