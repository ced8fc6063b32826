"""A job that keeps a 300 MiB cache, then grows by 10 MiB every 0.2 s up to 200 MiB. With
--shed it registers `on_warning` and drops the cache when the guard warns. Prints RESULT
<json> on stderr."""

import gc
import json
import os
import sys
import time

from headroom_memory import mark, on_warning
from say import say  # one write per line: the guard writes to the same stderr

MIB = 1 << 20
say("PID", os.getpid())
cache = [bytearray(b"\x01") * (300 * MIB)]
heard = []

if "--shed" in sys.argv:

    @on_warning
    def shed(warning):
        heard.append(warning.__dict__)
        cache.clear()
        gc.collect()
        mark("shed")  # a callback may mark: it does not run on the connection's reader


mark("grow")
work = []
for _ in range(20):
    work.append(bytearray(b"\x01") * (10 * MIB))
    time.sleep(0.2)
say("RESULT", json.dumps({"heard": heard, "cache_kept": bool(cache)}))
