"""Marks from 8 threads at once, then from a forked child (which must open its own
connection), then from the parent again. Prints RESULT <json> on stderr."""

import json
import os
import sys
import threading

from headroom_memory import mark
from headroom_memory._client import CLIENT
from say import say  # one write per line: the guard writes to the same stderr

results = {}
ok = []


def worker(n):
    for i in range(10):
        ok.append(mark(f"t{n}-{i}"))


threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
results["threads"] = sum(ok)
parent_fd = CLIENT._sock.fileno() if CLIENT._sock else None
pid = os.fork()
if pid == 0:
    child_ok = mark("child")
    child_fd = CLIENT._sock.fileno() if CLIENT._sock else None
    say("CHILD", json.dumps({"ok": child_ok, "fd": child_fd, "connected": CLIENT.connected()}))
    os._exit(0)
os.waitpid(pid, 0)
results["parent_after"] = mark("parent-after")
results["parent_fd"] = parent_fd
say("RESULT", json.dumps(results))
