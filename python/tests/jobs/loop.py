"""Marks stage-N every 0.1 s for SECONDS seconds (argv[1]); prints how many were taken and
exits 0 whatever happens to the guard."""

import json
import sys
import time

from headroom_memory import mark
from say import say  # one write per line: the guard writes to the same stderr

taken = 0
end = time.monotonic() + float(sys.argv[1])
n = 0
while time.monotonic() < end:
    taken += mark(f"stage-{n % 50}")
    n += 1
    time.sleep(0.1)
say("RESULT", json.dumps({"taken": taken, "sent": n}))
