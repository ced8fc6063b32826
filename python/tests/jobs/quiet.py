"""Marks outside any guard: every call must return False and say nothing."""

import json
import sys

from headroom_memory import mark, stage
from say import say  # one write per line: the guard writes to the same stderr

with stage("a"):
    pass
say("RESULT", json.dumps([mark("b"), mark("c")]))
