"""Marks outside any guard: every call must return False and say nothing."""

import json
import sys

from headroom_memory import mark, stage

with stage("a"):
    pass
print("RESULT", json.dumps([mark("b"), mark("c")]), file=sys.stderr)
