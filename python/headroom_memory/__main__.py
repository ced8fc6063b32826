"""``python -m headroom_memory [-m MODULE | SCRIPT] [ARGS...]``: runs a Python program with
automatic stages and no change to its code, as ``python -m cProfile`` runs one profiled.

Under ``headroom guard -- python -m headroom_memory gen.py`` every PyTorch module called
while no other module runs starts a stage named after its class
(:func:`headroom_memory.pytorch.watch_calls`), so the verdict names the component that grew
swap. Without PyTorch installed the program just runs. Outside any guard nothing is marked.
"""

from __future__ import annotations

import importlib.util
import os
import runpy
import sys

USAGE = "usage: python -m headroom_memory [-m MODULE | SCRIPT] [ARGS...]"


def main(argv: list[str]) -> int:
    """Runs the program named by ``argv``; returns the exit code for a usage error."""
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    if importlib.util.find_spec("torch") is not None:
        from .pytorch import watch_calls

        watch_calls()
    if argv[0] == "-m":
        if len(argv) < 2:
            print(USAGE, file=sys.stderr)
            return 2
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return 0
    script = argv[0]
    if not os.path.exists(script):
        print(f"python -m headroom_memory: can't open file {script!r}", file=sys.stderr)
        return 2
    sys.argv = list(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
