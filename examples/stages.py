#!/usr/bin/env python3
"""A three-stage job for Headroom's tests and docs (docs/commands.md): load, work, decode.

Each stage marks its start (one JSON line to the socket in $HEADROOM_MARK, which
`headroom guard` sets; without it, through `headroom mark` when it is on PATH) and holds more memory than the one
before: by default 20, 40 and 300 MiB, so under a small memory limit the decode grows swap.
Usage: stages.py [LOAD_MIB WORK_MIB DECODE_MIB] [--hold SECONDS] [--delay SECONDS] (--delay
waits before the first stage, e.g. to be picked in the popover). Dependency-free.
"""
import json
import os
import socket
import sys
import time


def mark(stage):
    """Marks the start of `stage`; the guard answers `ok`. Without $HEADROOM_MARK (a job
    watched by `headroom watch` or the app), `headroom mark` finds the watcher, if on PATH."""
    path = os.environ.get("HEADROOM_MARK")
    if not path:
        import shutil
        import subprocess
        if shutil.which("headroom"):
            subprocess.run(["headroom", "mark", stage], check=False)
        return
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(path)
        s.sendall(json.dumps({"stage": stage}).encode() + b"\n")
        reply = s.recv(256).decode().strip()
    if reply != "ok":
        sys.exit(f"stages.py: mark {stage}: {reply}")


def hold(mib):
    """Allocates and touches `mib` MiB (every page written, so it is resident)."""
    return bytearray(b"\x01") * (mib << 20)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    sizes = [int(a) for a in args[:3]] if len(args) >= 3 else [20, 40, 300]
    hold_s = float(sys.argv[sys.argv.index("--hold") + 1]) if "--hold" in sys.argv else 1.0
    if "--delay" in sys.argv:
        time.sleep(float(sys.argv[sys.argv.index("--delay") + 1]))
    kept = []
    for stage, mib in zip(["load", "work", "decode"], sizes):
        mark(stage)
        kept.append(hold(mib))
        time.sleep(hold_s)
    print(f"stages.py: done, {sum(sizes)} MiB held", flush=True)


if __name__ == "__main__":
    main()
