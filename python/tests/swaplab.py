"""The swap lab of the Rust tests (tests/it/support/mod.rs), for the Python tests: a swap file
and a memory cgroup with a small limit, so that a job's memory past the limit goes to real
swap. Needs root; everything is undone on exit, even when a test fails.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

CGROUP = Path("/sys/fs/cgroup")


class SwapFile:
    """A swap file of ``mib`` MiB, on while the ``with`` block runs."""

    def __init__(self, mib: int) -> None:
        self.mib = mib
        self.path = Path(f"/var/tmp/headroom-pytest-{os.getpid()}.swap")

    def __enter__(self) -> SwapFile:
        subprocess.run(["swapoff", str(self.path)], stderr=subprocess.DEVNULL, check=False)
        subprocess.run(
            ["dd", "if=/dev/zero", f"of={self.path}", "bs=1M", f"count={self.mib}", "status=none"],
            check=True,
        )
        self.path.chmod(0o600)
        subprocess.run(["mkswap", str(self.path)], check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["swapon", str(self.path)], check=True)
        return self

    def __exit__(self, *exc: object) -> None:
        subprocess.run(["swapoff", str(self.path)], check=False)
        self.path.unlink(missing_ok=True)


class MemCgroup:
    """A memory cgroup limited to ``limit_mib`` MiB, swap unlimited (v2 ``memory.max``, else
    v1 ``memory.limit_in_bytes`` under this process's own memory cgroup)."""

    def __init__(self, limit_mib: int, tag: str = "") -> None:
        name = f"headroom-pytest-{tag}{os.getpid()}"
        limit = str(limit_mib << 20)
        controllers = CGROUP / "cgroup.controllers"
        if controllers.exists() and "memory" in controllers.read_text().split():
            try:
                (CGROUP / "cgroup.subtree_control").write_text("+memory")
            except OSError:
                pass
            self.dir = CGROUP / name
            self.dir.mkdir(exist_ok=True)
            (self.dir / "memory.max").write_text(limit)
            try:
                (self.dir / "memory.swap.max").write_text("max")
            except OSError:
                pass
        else:
            own = Path("/proc/self/cgroup").read_text()
            rel = next(
                line.split(":memory:", 1)[1].lstrip("/")
                for line in own.splitlines()
                if ":memory:" in line
            )
            self.dir = CGROUP / "memory" / rel / name
            self.dir.mkdir(exist_ok=True)
            (self.dir / "memory.limit_in_bytes").write_text(limit)
            try:
                (self.dir / "memory.swappiness").write_text("100")
            except OSError:
                pass

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` run inside this cgroup (``sh -c 'echo $$ > cgroup.procs; exec "$@"'``)."""
        procs = self.dir / "cgroup.procs"
        return ["sh", "-c", f'echo $$ > {procs} && exec "$@"', "sh", *argv]

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in (self.dir / "cgroup.procs").read_text().split()]
        except OSError:
            return []

    def close(self) -> None:
        for _ in range(50):
            pids = self.pids()
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.05)
        try:
            self.dir.rmdir()
        except OSError:
            pass


def swap_used_bytes() -> int:
    """System swap in use (``/proc/meminfo``)."""
    fields = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        key, _, rest = line.partition(":")
        fields[key] = int(rest.split()[0]) * 1024
    return fields["SwapTotal"] - fields["SwapFree"]
