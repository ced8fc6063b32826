"""fits() from the installed package: the example in examples/ loads eagerly when it fits
and staged when it does not, the room changed by a real process holding memory; a guarded
job asks about its own key; bad input."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

import headroom_memory
from conftest import guard
from test_marks import result

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fits_or_stage.py"
GIB = 1 << 30


def room_now(binary: Path) -> int:
    out = subprocess.run([str(binary), "fit", "--need", "1", "--json"], capture_output=True,
                         text=True, check=True)
    return int(json.loads(out.stdout)["room_bytes"])


def example(need: int) -> str:
    out = subprocess.run([sys.executable, str(EXAMPLE), "--need", str(need)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_the_example_loads_eagerly_when_it_fits_and_staged_when_it_does_not(binary) -> None:
    room = room_now(binary)
    if room < 6 * GIB:
        pytest.skip(f"needs 6 GiB of room to take 4 away, has {room / GIB:.1f}")
    need = room - 2 * GIB
    assert example(need).startswith("plan: eager"), "2 GiB to spare"
    # A real process takes 4 GiB: the same need is now 2 GiB short.
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys,time; b=bytearray(b'\\x01')*(4<<30); print('ready',flush=True); "
         "time.sleep(120)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        out = example(need)
        assert out.startswith("plan: staged") and "short by" in out, out
        answer = headroom_memory.fits(need=need)
        assert answer is not None and not answer.fits
        assert answer.short_by_bytes > GIB and answer.room_bytes < need, answer
        assert answer.basis.startswith("needs ") and answer.need_bytes == need
    finally:
        holder.kill()
        holder.wait()


def test_a_guarded_job_asks_about_its_own_key(binary, tmp_path) -> None:
    history = tmp_path / "history.jsonl"
    history.write_text(json.dumps({
        "end": "2026-10-05T10:00:00+00:00", "who": "fitjob", "cmd": "python fit.py",
        "exit": 0, "run_s": 10.0, "peak_footprint": 100 << 20, "swap_start": 0,
        "swap_peak": 0, "min_level": 50}) + "\n")
    subprocess.run([str(binary), "history", "import", str(history)], check=True,
                   capture_output=True)
    code = ("import sys; from headroom_memory import fits; a = fits(); "
            "sys.stderr.write('RESULT ' + __import__('json').dumps([a.key, a.fits, a.need_bytes]) "
            "+ '\\n')")
    run = guard(binary, tmp_path, [sys.executable, "-c", code], "--key", "fitjob")
    assert run.code == 0, run.stderr
    key, fit, need = result(run.stderr)
    assert (key, fit) == ("fitjob", True)
    assert need >= 100 << 20, need  # the past run's need, with the prediction's margin


def test_no_history_and_bad_input() -> None:
    assert headroom_memory.fits(key="never-ran") is None
    for bad in (-1, 1.5, "1G", True):
        with pytest.raises(ValueError):
            headroom_memory.fits(need=bad)  # type: ignore[arg-type]
    answer = headroom_memory.fits(need=0)
    assert answer is not None and answer.fits and answer.short_by_bytes == 0


class Asked:
    """Stands in for ``subprocess.run`` in ``headroom_memory._fit``: records the command
    lines, answers "no past run" (exit 5)."""

    def __init__(self) -> None:
        self.argv: list[list[str]] = []

    def __call__(self, argv: list[str], **_kw: object) -> subprocess.CompletedProcess[str]:
        self.argv.append(list(argv))
        return subprocess.CompletedProcess(argv, 5, "", "")


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> Asked:
    """``fits()`` with its binary and the run of it stood in for: nothing runs."""
    from headroom_memory import _fit

    recorder = Asked()
    monkeypatch.setattr(_fit, "binary_path", lambda: Path("/nonexistent/headroom"))
    monkeypatch.setattr(_fit.subprocess, "run", recorder)
    return recorder


def test_bad_arguments_are_clear_errors_before_anything_runs(asked: Asked) -> None:
    with pytest.raises(TypeError, match=r"key must be a history key \(str\), not int"):
        headroom_memory.fits(key=123)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="key must be .* not bytes"):
        headroom_memory.fits(key=b"sdxl")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not blank"):
        headroom_memory.fits(key="  ")
    with pytest.raises(ValueError, match="key or need, not both"):
        headroom_memory.fits(key="sdxl", need=1 << 30)
    for bad in (-1, 1.5, "1G", True):
        with pytest.raises(ValueError, match="need must be a number of bytes"):
            headroom_memory.fits(need=bad)  # type: ignore[arg-type]
    assert asked.argv == [], "the binary was run"


def test_a_key_that_looks_like_a_flag_is_passed_as_a_key(asked: Asked) -> None:
    for key in ("-x", "--json", "--"):
        assert headroom_memory.fits(key=key) is None
        assert asked.argv[-1][2:] == ["--json", f"--key={key}"], asked.argv[-1]


def test_a_need_under_a_guard_does_not_send_the_jobs_key_too(
    asked: Asked, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HEADROOM_KEY", "guarded")
    headroom_memory.fits(need=1 << 20)
    assert asked.argv[-1][2:] == ["--json", f"--need={1 << 20}"], asked.argv[-1]
    headroom_memory.fits()
    assert asked.argv[-1][2:] == ["--json", "--key=guarded"], asked.argv[-1]


def test_keys_that_look_like_flags_reach_the_binary_as_keys(binary: Path) -> None:
    for key in ("-x", "--json", "-"):
        assert headroom_memory.fits(key=key) is None, key  # no past run of that key
