"""A training loop: STEPS steps (argv[1]), each marking forward, backward and optimizer, as
a real loop marks thousands of times; prints how many marks were taken and exits 0 whatever
happens to the guard."""

import json
import sys

from headroom_memory import mark
from say import say  # one write per line: the guard writes to the same stderr

steps = int(sys.argv[1])
taken = 0
for _ in range(steps):
    for name in ("forward", "backward", "optimizer"):
        taken += mark(name)
say("RESULT", json.dumps({"taken": taken, "sent": 3 * steps}))
