"""A key's past runs from Python (``history(key)``), as dataclasses, from the real SQLite
history that ``headroom guard`` keeps (the test's own HEADROOM_HOME)."""

from __future__ import annotations

from pathlib import Path

import pytest

import headroom_memory
from conftest import guard, job


def test_the_runs_of_a_key_newest_first(binary: Path, tmp_path: Path) -> None:
    assert headroom_memory.history("py-history") == []
    for _ in range(2):
        run = guard(binary, tmp_path, job("quiet"), "--key", "py-history")
        assert run.code == 0, run.stderr
    runs = headroom_memory.history("py-history")
    assert [type(r).__name__ for r in runs] == ["Run", "Run"]
    assert runs[0].id > runs[1].id and runs[0].started_at_ms >= runs[1].started_at_ms
    newest = runs[0]
    assert newest.verdict == "fits" and "quiet.py" in newest.command, newest
    assert newest.ended_at_ms >= newest.started_at_ms
    assert newest.need_bytes is not None and newest.need_bytes > 0, newest
    assert newest.total_bytes is not None and newest.total_bytes > 0
    assert len(headroom_memory.history("py-history", limit=1)) == 1
    # A key that looks like a flag or a subcommand is a key.
    assert headroom_memory.history("-x") == []
    assert headroom_memory.history("forget") == []


def test_history_arguments_are_checked_before_anything_runs() -> None:
    with pytest.raises(TypeError, match="key"):
        headroom_memory.history(123)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="blank"):
        headroom_memory.history("  ")
    with pytest.raises(ValueError, match="limit"):
        headroom_memory.history("k", limit=0)


def test_a_summary_reads_as_a_verdict() -> None:
    from headroom_memory._results import verdict_of

    verdict = verdict_of({"verdict": {
        "fits": False, "swap_growth_bytes": 5, "swap_start_bytes": 1,
        "duration": {"secs": 2, "nanos": 500_000_000}, "ended": {"kind": "exited", "code": 0},
        "processes": 3, "stages": [{"stage": "load", "swap_growth_bytes": 4, "visits": 2,
                                     "seconds": 1.5, "cumulative_growth_bytes": 4,
                                     "future_field": 1}],
        "a_newer_field": True,
    }})
    assert verdict.seconds == 2.5 and verdict.ended == "exited" and verdict.code == 0
    assert verdict.peak_footprint_bytes is None and verdict.pauses == 0
    assert verdict.stages[0].stage == "load" and verdict.stages[0].visits == 2
