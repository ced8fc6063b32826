"""Clients killed in the middle of a line (a session and a one-request connection), then a
mark from the job: the guard must lose nothing. Prints RESULT <json> on stderr."""

import json
import os
import subprocess
import sys

from headroom_memory import mark
from say import say  # one write per line: the guard writes to the same stderr

CHILD = r"""
import json, os, signal, socket, sys
path = os.environ["HEADROOM_MARK"]
s = socket.socket(socket.AF_UNIX)
s.connect(path)
if sys.argv[1] == "session":
    s.sendall(b'{"hello":2}\n')
    s.makefile("rb").readline()
s.sendall(b'{"stage":"hal')
os.kill(os.getpid(), signal.SIGKILL)
"""

mark("before")
for mode in ("session", "one"):
    child = subprocess.run([sys.executable, "-c", CHILD, mode], check=False)
    assert child.returncode == -9, child.returncode
say("RESULT", json.dumps({"after": mark("after")}))
