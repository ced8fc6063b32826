"""The stageload sink with the real stageload package (PyPI, installed --no-deps: it declares
torch>=2.1, whose Linux wheels pull CUDA; Debian's CPU torch 1.13 runs it, see
jobs/staged.py), on real swap: stages land in the verdict and the trace, loads and releases
in the trace as stageload writes them. And `headroom history import` of stageload's own run
history."""

from __future__ import annotations

import json
import subprocess

import pytest

from conftest import guard_in_lab, job
from test_marks import result

pytest.importorskip("torch", reason="Debian's python3-torch (scripts/setup installs it)")
pytest.importorskip("stageload", reason="stageload from the wheelhouse (scripts/setup)")


def test_stageload_events_land_in_the_trace_and_the_verdict(binary, tmp_path, swap_lab) -> None:
    run = guard_in_lab(swap_lab, 300, "stageload", binary, tmp_path, job("staged"),
                       "--swap-budget", "900M", "--poll", "0.2s")
    assert run.code == 0, run.stderr
    # Every event still reached stageload's own sink.
    assert result(run.stderr) == ["stage", "load", "stage", "release", "load", "release"]
    assert run.stages() == ["encode", "decode"], run.summary
    assert run.summary["verdict"]["fits"] is False, run.summary
    growth = {s["stage"]: s["swap_growth_bytes"] for s in run.summary["verdict"]["stages"]}
    assert growth["decode"] > 100 << 20, growth
    loads = run.events("load")
    assert [(e["name"], e["stage"]) for e in loads[:2]] == [("encoder", "encode"),
                                                           ("decoder", "decode")], loads
    assert loads[1]["nbytes"] == 400 << 20 and loads[1]["seconds"] >= 0, loads
    releases = run.events("release")
    assert releases and releases[0]["name"] == "encoder" and releases[0]["nbytes"] == 50 << 20
    assert "loaded decoder (400 MiB in " in run.stderr, run.stderr


def test_stageload_history_predicts_the_next_run(binary, tmp_path) -> None:
    history = tmp_path / "history.jsonl"
    lines = [
        {"end": "2026-10-05T10:00:00+00:00", "lane": "ram", "who": "pixal",
         "cmd": "python gen.py", "exit": 0, "waited_s": 0.0, "run_s": 600.0,
         "peak_footprint": 3 << 30, "swap_start": 1 << 30, "swap_peak": 1 << 30,
         "swap_end": 1 << 30, "min_level": 40, "trace": None},
        {"end": "2026-10-06T10:00:00+00:00", "lane": "ram", "who": "pixal",
         "cmd": "python gen.py", "exit": 0, "waited_s": 0.0, "run_s": 610.0,
         "peak_footprint": 4 << 30, "swap_start": 1 << 30, "swap_peak": 1 << 30,
         "swap_end": 1 << 30, "min_level": 38, "trace": None},
    ]
    history.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = subprocess.run([str(binary), "history", "import", str(history)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stderr.count("of pixal: fits") == 2, out.stderr
    out = subprocess.run([str(binary), "fit", "--json", "--key", "pixal"], capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr
    answer = json.loads(out.stdout)
    assert answer["prediction"]["runs"] == 2 and "2 runs" in answer["basis"], answer
    assert answer["prediction"]["need_bytes"] >= 3 << 30, answer
    # A corrupt line is named with its file and line, and nothing is imported.
    history.write_text(json.dumps(lines[0]) + "\n{\"end\": 1}\n")
    out = subprocess.run([str(binary), "history", "import", str(history), "--key", "other"],
                         capture_output=True, text=True)
    assert out.returncode == 2 and f"{history}:2:" in out.stderr, out.stderr
