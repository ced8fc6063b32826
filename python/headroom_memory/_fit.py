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
    #: What the need rests on, in words ("needs about 1.2 GB (3 runs, last 2 h)").
    basis: str
    #: The history key asked about.
    key: str


def fits(key: str | None = None, need: int | None = None) -> Fit | None:
    """Will the job fit now? With ``need`` (bytes), that need; else the prediction from the
    past runs of ``key`` (default: this job's key, ``$HEADROOM_KEY`` under ``headroom
    guard``, else the key ``guard`` would give this command line). ``None`` when the key has
    no past run. Raises :class:`HeadroomError` when the binary cannot answer."""
    args = [str(binary_path()), "fit", "--json"]
    if need is not None:
        if isinstance(need, bool) or not isinstance(need, int) or need < 0:
            raise ValueError(f"need must be a number of bytes (int >= 0), not {need!r}")
        args += ["--need", str(need)]
    key = key if key is not None else os.environ.get(KEY_ENV) or None
    if key is not None:
        args += ["--key", key]
    elif need is None:
        args += ["--", *_command_line()]
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError) as e:
        raise HeadroomError(f"headroom fit: {e}") from None
    if out.returncode == _NO_HISTORY:
        return None
    if out.returncode not in (_FITS, _DOES_NOT_FIT):
        raise HeadroomError(f"headroom fit: {out.stderr.strip() or f'exit {out.returncode}'}")
    answer = json.loads(out.stdout)
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
