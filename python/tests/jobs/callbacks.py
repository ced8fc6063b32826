"""A job that registers on_pause and on_stop, marks "work", says READY and loops. Each pause
it hears is said as ``PAUSED <json>``; at a stop, its callback writes the stop it was given
to argv[1] (a checkpoint) before the process ends as SIGTERM ends it. With ``--before`` a
SIGTERM handler of the job's own is there first: it is called after the callback. With
``--fork`` a forked child (which inherits the handler) is said as ``CHILD <pid>``."""

import dataclasses
import json
import os
import signal
import sys
import time

from headroom_memory import mark, on_pause, on_stop
from say import say

checkpoint = sys.argv[1]

if "--before" in sys.argv:

    def own(signum, frame):
        say("OWN", signum)
        sys.exit(7)

    signal.signal(signal.SIGTERM, own)

heard = []
on_pause(heard.append)


@on_stop
def save(stop):
    with open(checkpoint, "w") as f:
        json.dump({**dataclasses.asdict(stop), "pid": os.getpid()}, f)


mark("work")
if "--fork" in sys.argv:
    child = os.fork()
    if child == 0:
        for _ in range(6000):  # until SIGTERM: the parent's callbacks must not run here
            time.sleep(0.01)
        os._exit(0)
    say("CHILD", child)
say("READY", os.getpid())
said = 0
for _ in range(6000):
    while said < len(heard):
        say("PAUSED", json.dumps(dataclasses.asdict(heard[said])))
        said += 1
    time.sleep(0.01)
