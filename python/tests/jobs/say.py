"""A test job's result line on stderr, in one write.

The guard writes its own lines ("headroom: stage x begins") to the same stderr. Python's
stderr is unbuffered when it is a pipe: ``print("RESULT", data, file=sys.stderr)`` makes four
writes, and a guard's line can land between them, cutting the result's line in two.
"""

import sys


def say(tag, value):
    """Writes ``TAG value`` and a newline to stderr in one write."""
    sys.stderr.write(f"{tag} {value}\n")
    sys.stderr.flush()
