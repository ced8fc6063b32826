"""Bad stage names: each is a warning and False, never an exception; a good mark after them
is taken. Prints RESULT <json> on stderr."""

import json
import sys

from headroom_memory import mark
from say import say  # one write per line: the guard writes to the same stderr

results = [mark(""), mark("   "), mark("x" * 201), mark("é" * 101), mark(b"bytes"),
           mark(42), mark(None), mark("a\x07b"), mark("good")]
say("RESULT", json.dumps(results))
