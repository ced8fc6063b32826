"""A job that marks stages every way the package offers, with no process started: spawning
is made to fail before the first mark. Prints RESULT <json> on stderr."""

import json
import os
import subprocess
import sys
import time

from headroom_memory import current_stage, mark, stage
from say import say  # one write per line: the guard writes to the same stderr


def no_spawn(*_args, **_kwargs):
    raise AssertionError("a mark started a process")


subprocess.Popen.__init__ = no_spawn  # type: ignore[method-assign]
os.fork = no_spawn
os.posix_spawn = no_spawn

results = {"setup": mark("setup")}


@stage("load")
def load():
    time.sleep(0.2)
    return current_stage()


results["load"] = load()
with stage("outer"):
    time.sleep(0.2)
    with stage("inner"):
        time.sleep(0.2)
    results["after_inner"] = current_stage()
    time.sleep(0.2)
results["end"] = mark("end")
say("RESULT", json.dumps(results))
