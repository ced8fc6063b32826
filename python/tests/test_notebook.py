"""The notebook guard on real swap (root): a real Jupyter kernel (jupyter_client, ipykernel,
Debian's) in a 96 MiB memory cgroup runs a cell that grows memory under ``%%guard``; at its
budget the guard interrupts the cell (``KeyboardInterrupt``), the kernel lives and answers
the next cell. The same with ``with headroom_memory.guard(...)`` in a script, and the
arguments checked before anything starts."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import time
from pathlib import Path
from collections.abc import Callable

import pytest

import headroom_memory

GROW_CELL = """\
import time
chunks = []
for i in range(200):
    chunks.append(bytearray(b"\\x01") * (16 << 20))
    time.sleep(0.05)
print("grew to the end")
"""


def execute(kc, code: str, timeout: float = 120) -> tuple[dict, list[str]]:
    """Runs ``code`` in the kernel; its reply's content and what it printed."""
    msg_id = kc.execute(code)
    printed: list[str] = []
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        assert left > 0, f"no reply to {code!r}; printed {printed}"
        try:
            msg = kc.get_iopub_msg(timeout=left)
        except queue.Empty:
            continue
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            printed.append(msg["content"]["text"])
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    reply = kc.get_shell_msg(timeout=timeout)
    return reply["content"], printed


def test_a_growing_cell_is_interrupted_and_the_kernel_answers_the_next(
    swap_lab, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jupyter_client import KernelManager

    # A kernel spec of this venv's Python (the one the package is installed in; Debian's
    # own `python3` spec runs the system's).
    spec = home / "jupyter" / "kernels" / "headroom-test"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "headroom test",
        "language": "python",
    }))
    monkeypatch.setenv("JUPYTER_PATH", str(home / "jupyter"))
    lab = swap_lab(96, "notebook")
    km = KernelManager(kernel_name="headroom-test")
    km.start_kernel(env={**os.environ, "HEADROOM_JOB_CGROUP": "off"})
    kc = None
    try:
        kernel = km.provisioner.process.pid  # type: ignore[union-attr]
        (lab.dir / "cgroup.procs").write_text(str(kernel))
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=60)
        content, _ = execute(kc, "%load_ext headroom_memory")
        assert content["status"] == "ok", content
        # The free floor off: the kernel's cgroup is full at once (its room is what the
        # guard, inside it too, calls free memory); the swap budget is what is tested.
        content, printed = execute(kc, "%%guard 150M kill_free=0 poll=0.2s\n" + GROW_CELL)
        # Interrupted in the cell: 200 chunks of 16 MiB never all came. (The reply is the
        # KeyboardInterrupt's error, as a rule; where IPython's own handling of the magic took
        # the interrupt, the cell still ended early.)
        assert "grew to the end" not in "".join(printed), (content, printed)
        if content["status"] != "ok":
            assert content["ename"] == "KeyboardInterrupt", content
        # The kernel lives, and answers the next cell with its state: the chunks the cell
        # made before its interrupt.
        assert km.is_alive()
        content, printed = execute(kc, "print(0 < len(chunks) < 200, 6 * 7)")
        assert content["status"] == "ok", content
        assert "True 42" in "".join(printed), printed
    finally:
        if kc is not None:
            kc.stop_channels()
        km.shutdown_kernel(now=True)
        lab.close()


def _sigint(how: str) -> Callable[[], None]:
    """In the child before exec: SIGINT handled by default, or ignored, as a script started
    in the background of another script inherits it (POSIX)."""
    handler = signal.SIG_IGN if how == "ignored" else signal.SIG_DFL

    def set_it() -> None:
        signal.signal(signal.SIGINT, handler)

    return set_it


@pytest.mark.parametrize("sigint", ["default", "ignored"])
def test_a_script_under_guard_gets_keyboard_interrupt(
    swap_lab, tmp_path: Path, sigint: str
) -> None:
    script = tmp_path / "grow.py"
    script.write_text(
        "import dataclasses, json, headroom_memory, time\n"
        "chunks = []\n"
        "guard = headroom_memory.guard('150M', poll='0.2s', kill_free=0)\n"
        "try:\n"
        "    with guard:\n"
        "        for i in range(200):\n"
        "            chunks.append(bytearray(b'\\x01') * (16 << 20))\n"
        "            time.sleep(0.05)\n"
        "    print('RESULT grew', flush=True)\n"
        "except KeyboardInterrupt:\n"
        "    print('RESULT interrupted', len(chunks), flush=True)\n"
        "print('VERDICT', json.dumps(dataclasses.asdict(guard.verdict)), flush=True)\n"
        "import signal\n"
        "print('SIGINT', 'ignored' if signal.getsignal(signal.SIGINT) == signal.SIG_IGN\n"
        "      else 'default', flush=True)\n"
    )
    lab = swap_lab(96, "guarded-script")
    try:
        out = subprocess.run(
            lab.wrap([sys.executable, str(script)]),
            capture_output=True,
            text=True,
            timeout=180,
            env={**os.environ, "HEADROOM_JOB_CGROUP": "off"},
            check=False,
            preexec_fn=_sigint(sigint),
        )
    finally:
        lab.close()
    assert out.returncode == 0, out.stderr
    assert "RESULT interrupted" in out.stdout, (out.stdout, out.stderr)
    # Heard inside the block even when the script was started with SIGINT ignored; the
    # ignore back after it.
    assert f"SIGINT {sigint}" in out.stdout, out.stdout
    assert "interrupted" in out.stderr and "SIGINT to pid" in out.stderr, out.stderr
    # The guard's verdict on the block, as a dataclass: swap grew past the budget (the
    # interrupt came at it), and the watch ended with the block, the process left running.
    line = next(line for line in out.stdout.splitlines() if line.startswith("VERDICT "))
    verdict = json.loads(line.split(" ", 1)[1])
    assert verdict["swap_growth_bytes"] >= 150 << 20, verdict
    assert verdict["ended"] == "interrupted" and verdict["fits"] is False, verdict
    assert verdict["seconds"] > 0 and verdict["processes"] >= 1, verdict


def test_guard_arguments_are_checked_before_anything_starts() -> None:
    with pytest.raises(ValueError, match="on_budget"):
        headroom_memory.guard("1G", on_budget="explode")
    with pytest.raises(TypeError, match="swap_budget"):
        headroom_memory.guard(1.5)  # type: ignore[arg-type]
    # A budget that is no size: the guard's own error, raised, nothing left running.
    with pytest.raises(headroom_memory.HeadroomError, match="ended at once"):
        with headroom_memory.guard("lots"):
            pass

