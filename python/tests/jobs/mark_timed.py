"""Marks and times the marks, catching anything a mark raises (it must not).

    mark_timed.py [--run-dir DIR] [--marks N] [--until-taken SECONDS] [--late-name NAME]
                  [--wait-stdin] [--on-warning]

``--run-dir`` stands for the binary's answer to ``headroom mark --run-dir`` (the folder the
client looks through when ``$HEADROOM_MARK`` is not set), so that no binary is needed.
``--until-taken`` marks every 0.05 s until one is taken (or the time is up), after the
``--marks`` first ones (``step-0``, ``step-1``...), each ``--late-name`` (``late``). ``--wait-stdin`` waits (5 s at most) for stdin to close before
exiting: the process stays alive while the other end looks at its connection.
``--on-warning`` registers a callback first (it records what it heard).

Says ``RESULT {...}`` on stderr: what each mark returned, the first mark's and all marks'
seconds, what was raised (``null``), and the warnings heard.
"""

from __future__ import annotations

import argparse
import json
import select
import sys
import time
from pathlib import Path

from say import say

import headroom_memory
from headroom_memory import _client

args = argparse.ArgumentParser()
args.add_argument("--run-dir")
args.add_argument("--marks", type=int, default=3)
args.add_argument("--until-taken", type=float, default=0.0)
args.add_argument("--late-name", default="late")
args.add_argument("--wait-stdin", action="store_true")
args.add_argument("--on-warning", action="store_true")
opts = args.parse_args()
if opts.run_dir:
    _client._run_dir[:] = [Path(opts.run_dir)]

heard: list[str] = []
raised = None
taken: list[bool] = []
first = total = 0.0
try:
    if opts.on_warning:
        headroom_memory.on_warning(lambda w: heard.append(repr(w)))
    start = time.perf_counter()
    for i in range(opts.marks):
        taken.append(headroom_memory.mark(f"step-{i}"))
        if i == 0:
            first = time.perf_counter() - start
    total = time.perf_counter() - start
    deadline = time.monotonic() + opts.until_taken
    while opts.until_taken and not any(taken) and time.monotonic() < deadline:
        time.sleep(0.05)
        taken.append(headroom_memory.mark(opts.late_name))
except BaseException as e:  # noqa: BLE001 - what a mark raised is the result
    raised = f"{type(e).__name__}: {e}"
if opts.wait_stdin:
    select.select([sys.stdin], [], [], 5.0)
    sys.stdin.read() if select.select([sys.stdin], [], [], 0)[0] else None
time.sleep(0.2)  # a push thread's trouble, if any, is printed by now
say("RESULT", json.dumps({"taken": taken, "first_s": first, "total_s": total,
                          "raised": raised, "heard": heard}))
