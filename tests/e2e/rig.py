"""Real swap for end-to-end tests and benchmarks (root, Linux): a swap file and a memory
cgroup with a small limit (cgroup v2 `memory.max`, else v1 `memory.limit_in_bytes` under our
own cgroup). Undone on exit, even when a test fails."""
import os
import subprocess
import time


def swaps_used_bytes():
    with open("/proc/swaps") as f:
        return sum(int(l.split()[3]) * 1024 for l in f.readlines()[1:])


def _sh(*args):
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)


class Rig:
    def __init__(self, swap_mib=1024, limit_mib=64, name="headroom-e2e"):
        self.swap_mib, self.limit_mib = swap_mib, limit_mib
        self.name = f"{name}-{os.getpid()}"

    def __enter__(self):
        if os.geteuid() != 0:
            raise RuntimeError("real swap needs root")
        self.swap = f"/var/tmp/{self.name}.swap"
        _sh("dd", "if=/dev/zero", f"of={self.swap}", "bs=1M", f"count={self.swap_mib}", "status=none")
        os.chmod(self.swap, 0o600)
        _sh("mkswap", self.swap)
        _sh("swapon", self.swap)
        limit = str(self.limit_mib << 20)
        v2 = "/sys/fs/cgroup/cgroup.controllers"
        if os.path.exists(v2) and "memory" in open(v2).read().split():
            try:
                open("/sys/fs/cgroup/cgroup.subtree_control", "w").write("+memory")
            except OSError:
                pass
            self.cg = f"/sys/fs/cgroup/{self.name}"
            os.makedirs(self.cg, exist_ok=True)
            open(f"{self.cg}/memory.max", "w").write(limit)
        else:
            rel = [l.split(":memory:")[1].strip().lstrip("/")
                   for l in open("/proc/self/cgroup") if ":memory:" in l][0]
            self.cg = os.path.join("/sys/fs/cgroup/memory", rel, self.name)
            os.makedirs(self.cg, exist_ok=True)
            open(f"{self.cg}/memory.limit_in_bytes", "w").write(limit)
            open(f"{self.cg}/memory.swappiness", "w").write("100")
        return self

    def wrap(self, argv):
        """argv run inside the cgroup."""
        return ["sh", "-c", f"echo $$ > {self.cg}/cgroup.procs && exec \"$@\"", "sh", *argv]

    def __exit__(self, *exc):
        for _ in range(50):
            try:
                pids = open(f"{self.cg}/cgroup.procs").read().split()
            except OSError:
                break
            if not pids:
                break
            for p in pids:
                try:
                    os.kill(int(p), 9)
                except ProcessLookupError:
                    pass
            time.sleep(0.05)
        try:
            os.rmdir(self.cg)
        except OSError:
            pass
        subprocess.run(["swapoff", self.swap])
        os.remove(self.swap)
