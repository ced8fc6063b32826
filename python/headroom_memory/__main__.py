"""``python -m headroom_memory [-m MODULE | SCRIPT] [ARGS...]``: runs a Python program with
automatic stages and no change to its code, as ``python -m cProfile`` runs one profiled.

``python -m headroom_memory COMMAND [ARGS...]``, where COMMAND is one of the tool's commands
(``guard``, ``status``, ``fit``...: :data:`COMMANDS`), runs the tool itself: this package's own
binary, found by path (:func:`headroom_memory.binary_path`), in this process's place, so it
works whatever another package did to the ``headroom`` command. A script whose file is called
like a command is run as ``./NAME``.

Under ``headroom guard -- python -m headroom_memory gen.py`` every top-level PyTorch module
starts a stage named after its class when its work starts (``Class.method`` when it began in
a method other than ``forward``: :func:`headroom_memory.pytorch.watch_calls`), so the verdict
names the component that grew swap. Without PyTorch installed the program just runs.
Outside any guard nothing is marked.
"""

from __future__ import annotations

import importlib.util
import os
import runpy
import sys

from ._binary import binary_path
from ._errors import HeadroomError

#: The tool's commands (``headroom --help``), and its options that answer by themselves.
COMMANDS = (
    "status", "record", "guard", "watch", "mark", "resume", "pause", "stop", "serve",
    "trace", "history", "fit", "queue", "help", "--version", "-V",
)

USAGE = (
    "usage: python -m headroom_memory [-m MODULE | SCRIPT] [ARGS...]\n"
    "       python -m headroom_memory COMMAND [ARGS...]   (the headroom tool: "
    + ", ".join(c for c in COMMANDS if not c.startswith("-"))
    + ")"
)


def run_tool(argv: list[str]) -> int:
    """Runs this package's binary with ``argv`` in this process's place (exec: the same pid,
    so a guard's signals and a shell's job control reach the tool). Returns only when the
    binary cannot be found or run: 127, as a shell does."""
    binary = "headroom-memory"
    try:
        binary = str(binary_path())
        os.execv(binary, [binary, *argv])
    except HeadroomError as e:
        print(f"python -m headroom_memory: {e}", file=sys.stderr)
    except OSError as e:
        print(f"python -m headroom_memory: cannot run {binary}: {e.strerror}", file=sys.stderr)
    return 127


def main(argv: list[str]) -> int:
    """Runs the program named by ``argv``; returns the exit code for a usage error."""
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    if argv[0] in COMMANDS:
        return run_tool(argv)
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
