"""Finding and checking the guard's socket: which sockets may be connected to at all, and
who is on the other end.

A socket is only connected to when it is a socket file owned by this user, readable by
nobody else, in a folder nobody else may write; once connected, the kernel must say the
process on the other end runs as this user and is the process the socket is named after
(``<pid>.sock``). For the socket in ``$HEADROOM_MARK`` (set by ``headroom guard``), that
process must also be an ancestor of this one (Linux: ``/proc``), since the guard started
this job. Any other socket of the run folder (a ``headroom watch``, the app) is taken only
when it greets this process as a member of its job.
"""

from __future__ import annotations

import os
import socket
import stat
import struct
import sys
from pathlib import Path


class Refused(Exception):
    """A socket that must not be used, and why."""


def check_path(path: Path) -> int:
    """The pid the socket at ``path`` is named after, once its file and folder pass the
    checks above; raises :class:`Refused` otherwise."""
    uid = os.geteuid()
    try:
        st = os.lstat(path)
        folder = os.lstat(path.parent)
    except OSError as e:
        raise Refused(f"{path}: {e.strerror}") from None
    if not stat.S_ISSOCK(st.st_mode):
        raise Refused(f"{path} is not a socket")
    if st.st_uid != uid:
        raise Refused(f"{path} belongs to uid {st.st_uid}, not to this user ({uid})")
    if st.st_mode & 0o077:
        raise Refused(f"{path} is open to other users (mode {stat.S_IMODE(st.st_mode):o})")
    if folder.st_uid != uid or folder.st_mode & 0o022:
        raise Refused(f"{path.parent} may be written by other users")
    name = path.name
    if not name.endswith(".sock") or not name[: -len(".sock")].isdigit():
        raise Refused(f"{path} is not named after a Headroom process (<pid>.sock)")
    return int(name[: -len(".sock")])


def peer(sock: socket.socket) -> tuple[int | None, int | None]:
    """(pid, uid) of the process on the other end, as the kernel says; ``None`` where this
    OS does not tell."""
    if sys.platform.startswith("linux"):
        so_peercred = getattr(socket, "SO_PEERCRED", 17)
        raw = sock.getsockopt(socket.SOL_SOCKET, so_peercred, struct.calcsize("3i"))
        pid, uid, _gid = struct.unpack("3i", raw)
        return pid, uid
    if sys.platform == "darwin":
        sol_local, local_peercred, local_peerpid = 0, 1, 2
        pid = struct.unpack("i", sock.getsockopt(sol_local, local_peerpid, 4))[0]
        raw = sock.getsockopt(sol_local, local_peercred, 76)  # struct xucred
        _version, uid = struct.unpack("II", raw[:8])
        return pid, uid
    return None, None


def check_ancestor(named_pid: int) -> None:
    """Raises :class:`Refused` unless ``named_pid`` is an ancestor of this process (where
    the OS lets us see it): the guard that started this job. Checked before connecting."""
    if not is_ancestor(named_pid):
        raise Refused(f"pid {named_pid} did not start this job: it is not the job's guard")


def check_peer(sock: socket.socket, named_pid: int) -> None:
    """Raises :class:`Refused` unless the other end is this user's process ``named_pid``."""
    pid, uid = peer(sock)
    if uid is not None and uid != os.geteuid():
        raise Refused(f"the process at the other end runs as uid {uid}, not as this user")
    if pid is not None and pid != named_pid:
        raise Refused(
            f"the socket is named after pid {named_pid}, but pid {pid} listens on it"
        )


def is_ancestor(pid: int) -> bool:
    """True when ``pid`` is an ancestor of this process; True where it cannot be seen
    (no ``/proc``: macOS), so the check there rests on the owner and the greeting."""
    mine = ancestors()
    return True if mine is None else pid in mine


def ancestors() -> frozenset[int] | None:
    """The pids of this process's ancestors (its parent, the parent's parent, up to pid 1),
    from ``/proc``: a few small reads, no process started, nothing connected to. ``None``
    where the OS does not show them (no ``/proc``: macOS)."""
    proc = Path("/proc")
    if not (proc / "self" / "stat").exists():
        return None
    found: set[int] = set()
    current = os.getppid()
    while current >= 1 and current not in found and len(found) < 4096:
        found.add(current)  # pid 1 too: in a container, the guard may be pid 1
        if current == 1:
            break
        try:
            text = (proc / str(current) / "stat").read_text()
            current = int(text.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return frozenset(found)
