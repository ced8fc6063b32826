"""What Headroom found, as plain dataclasses: the verdict of a run (:class:`Verdict`, what
``headroom guard --json`` and ``headroom watch --json`` print at the end, and what
:attr:`headroom_memory.Guard.verdict` holds after its block), and the past runs of a history
key (:func:`history`, asked of the package's own binary: ``headroom history KEY --json``).

Fields this version does not know are ignored; a field left out takes ``None`` (or 0, or an
empty list), so an answer of a newer binary still reads.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from typing import Any

from ._binary import binary_path
from ._errors import HeadroomError
from ._fit import _checked_key


@dataclass(frozen=True)
class StageGrowth:
    """One stage of a run, every visit to it summed."""

    #: The stage's name, as marked.
    stage: str
    #: Swap growth within it, bytes (each visit's added).
    swap_growth_bytes: int
    #: Times the job entered it.
    visits: int
    #: Seconds spent in it, every visit's added.
    seconds: float | None
    #: Peak footprint within it, bytes, when measured.
    peak_footprint_bytes: int | None


@dataclass(frozen=True)
class Verdict:
    """The verdict of a run that ended (or whose watch ended)."""

    #: True when it fitted: swap did not grow past the tolerance, free memory held.
    fits: bool
    #: Swap growth over the run's start, bytes.
    swap_growth_bytes: int
    #: Swap in use at the start, bytes.
    swap_start_bytes: int
    #: Peak footprint of the job's processes, bytes, when measured.
    peak_footprint_bytes: int | None
    #: Lowest system free memory during the run, percent.
    lowest_free_percent: float | None
    #: How long it ran (or was watched), seconds.
    seconds: float
    #: How it ended: ``exited``, ``signaled``, ``stopped``, ``interrupted``, ``vanished``...
    ended: str
    #: Its exit code or signal, where it ended with one.
    code: int | None
    #: Processes seen in the job.
    processes: int
    #: Pauses it had.
    pauses: int
    #: Its stages, each with its growth.
    stages: list[StageGrowth] = field(default_factory=list)


@dataclass(frozen=True)
class Run:
    """One past run of a history key."""

    #: Its id in the history.
    id: int
    #: Its command line.
    command: str
    #: When it started and ended, milliseconds since the epoch.
    started_at_ms: int
    ended_at_ms: int
    #: The verdict as a label: ``fits``, ``tight``, ``doesnt_fit``, ``stopped`` (``unknown`` when
    #: the stored one cannot be read).
    verdict: str
    #: What it needed, bytes (a run that was not measured is not listed).
    need_bytes: int | None
    #: True when the need is a lower bound (the run was stopped before its peak).
    need_lower_bound: bool
    #: The machine's memory, bytes.
    total_bytes: int | None
    #: Free memory at its start, percent.
    free_start_percent: float | None


def verdict_of(summary: dict[str, Any]) -> Verdict:
    """The :class:`Verdict` of a ``--json`` summary (``{"verdict": {...}, ...}``, or the
    verdict object itself). Raises ``KeyError``, ``TypeError`` or ``ValueError`` for one
    this version cannot read."""
    body = summary.get("verdict", summary)
    ended = body.get("ended") or {}
    duration = body.get("duration") or {}
    seconds = float(duration.get("secs", 0)) + float(duration.get("nanos", 0)) / 1e9
    code = ended.get("code", ended.get("signal"))
    return Verdict(
        fits=bool(body["fits"]),
        swap_growth_bytes=int(body["swap_growth_bytes"]),
        swap_start_bytes=int(body.get("swap_start_bytes", 0)),
        peak_footprint_bytes=_int_or_none(body.get("peak_footprint_bytes")),
        lowest_free_percent=_float_or_none(body.get("lowest_free_percent")),
        seconds=seconds,
        ended=str(ended.get("kind", "")),
        code=_int_or_none(code),
        processes=int(body.get("processes", 0)),
        pauses=int(body.get("pauses", 0)),
        stages=[_stage_of(s) for s in body.get("stages", [])],
    )


def history(key: str, limit: int = 20) -> list[Run]:
    """The past runs of ``key``, newest first (at most ``limit``); an empty list for a key
    with none. Raises :class:`TypeError` or :class:`ValueError` for a ``key`` or ``limit``
    that cannot be one, before anything runs; :class:`HeadroomError` when the binary cannot
    answer."""
    checked = _checked_key(key)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a number of runs (int >= 1), not {limit!r}")
    args = [str(binary_path()), "history", "--json", f"--limit={limit}", "--", checked]
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError) as e:
        raise HeadroomError(f"headroom history: {e}") from None
    if out.returncode != 0:
        raise HeadroomError(f"headroom history: {out.stderr.strip() or f'exit {out.returncode}'}")
    try:
        return [_run_of(r) for r in json.loads(out.stdout)]
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise HeadroomError(f"headroom history: an answer this version cannot read ({e})") from None


def _run_of(r: dict[str, Any]) -> Run:
    return Run(
        id=int(r["id"]),
        command=str(r["command"]),
        started_at_ms=int(r["started_at_ms"]),
        ended_at_ms=int(r["ended_at_ms"]),
        verdict=str(r["verdict"]),
        need_bytes=_int_or_none(r.get("need_bytes")),
        need_lower_bound=bool(r.get("need_lower_bound", False)),
        total_bytes=_int_or_none(r.get("total_bytes")),
        free_start_percent=_float_or_none(r.get("free_start_percent")),
    )


def _stage_of(s: dict[str, Any]) -> StageGrowth:
    return StageGrowth(
        stage=str(s["stage"]),
        swap_growth_bytes=int(s["swap_growth_bytes"]),
        visits=int(s.get("visits", 1)),
        seconds=_float_or_none(s.get("seconds")),
        peak_footprint_bytes=_int_or_none(s.get("peak_footprint_bytes")),
    )


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def _float_or_none(value: Any) -> float | None:
    return None if value is None else float(value)
