"""The pause order across the app and terminal guards, on real swap: the youngest pausing job
pauses first, whoever guards it. A terminal guard's older job that passes its budget has the
app's younger job paused in its place (through the app's socket); the app's older job that
passes its budget has a terminal guard's younger job paused (through that guard's socket).
Every state change is watched in /proc from outside."""
import json
import os
import signal
import subprocess
import threading
import time

from selenium.webdriver.common.by import By

from conftest import TARGET
from test_popover import guard_from_row, shot, state_of, wait_for

CLI = os.path.join(TARGET, "debug/headroom")
HOG = os.path.join(TARGET, "debug/examples/hog")
# Grows about 340 MiB of swap from 8 s after its start (inside the rig's 64 MiB cgroup).
GROWER = ["400M", "--delay", "8000", "--step-ms", "8"]
PAUSING = ["--wait-free", "0", "--on-budget", "pause", "--max-pauses", "5",
           "--resume-free", "1", "--resume-calm", "2s", "--grace", "2s"]


def frozen(pid):
    """Whether `pid` is in a frozen cgroup, v1 or v2 (a guard with a job cgroup of its own
    pauses by the freezer: its processes are not in state T)."""
    try:
        lines = open(f"/proc/{pid}/cgroup").read().splitlines()
    except OSError:
        return False
    found = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "freezer":
            found.append((f"/sys/fs/cgroup/freezer{path}/freezer.state", "FROZEN"))
        elif controllers == "":
            found += [(f"{root}{path}/cgroup.events", "frozen 1")
                      for root in ("/sys/fs/cgroup/unified", "/sys/fs/cgroup")]
    for file, word in found:
        try:
            if word in open(file).read():
                return True
        except OSError:
            pass
    return False


def paused(pid):
    """Stopped by SIGSTOP, or frozen."""
    return state_of(pid) == "T" or frozen(pid)


class Stops:
    """The first moment each pid is seen paused, polled every 10 ms."""

    def __init__(self, pids):
        self.first = {}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, args=(pids,), daemon=True)
        self._thread.start()

    def _watch(self, pids):
        while not self._done.is_set():
            for pid in pids:
                if pid not in self.first and paused(pid):
                    self.first[pid] = time.monotonic()
            time.sleep(0.01)

    def stop(self):
        self._done.set()
        self._thread.join()
        return self.first


def hog_pid(tag):
    """The hog process whose command line carries `tag` (wrapped commands exec into it)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = open(f"/proc/{entry}/cmdline", "rb").read().split(b"\0")
            exe = os.readlink(f"/proc/{entry}/exe")
        except OSError:
            continue
        if exe == os.path.realpath(HOG) and tag.encode() in cmdline:
            return int(entry)
    return None


def status_job(pid):
    out = subprocess.run([CLI, "status", "--json"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return next((j for j in json.loads(out.stdout)["jobs"] if j["pid"] == pid), None)


def stop(pid):
    out = subprocess.run([CLI, "stop", str(pid)], capture_output=True, text=True, timeout=30)
    return out.returncode, out.stderr


def test_a_terminal_guards_older_job_has_the_apps_younger_job_paused(driver, rig):
    tag = f"e2e-order-a-{os.getpid()}"
    younger = subprocess.Popen([HOG, "8M", "--tag", f"{tag}-app", "--hold", "600"], stderr=subprocess.DEVNULL)
    terminal = subprocess.Popen([CLI, "guard", *PAUSING, "--swap-budget", "100M", "--",
                                 *rig.wrap([HOG, *GROWER, "--tag", f"{tag}-cli", "--hold", "1"])],
                                stderr=subprocess.PIPE, text=True)
    stops = None
    try:
        older = wait_for(lambda: hog_pid(f"{tag}-cli"), what="the terminal's hog")
        time.sleep(1)  # the app's job is the younger by a second at least
        row = guard_from_row(driver, younger.pid, f"{tag}-app", "900M", on_budget="pause")
        stops = Stops([older, younger.pid])
        wait_for(lambda: row.get_attribute("data-state") == "paused", timeout=90,
                 what="the app's younger job paused in the older one's place")
        shot(driver, "order-app-yields.png")
        # The app's job is in job files: `headroom status` sees it, paused, guarded by the app.
        listed = wait_for(lambda: status_job(younger.pid), what="the app's job in status")
        assert listed["state"] == "paused", listed
        _, said = terminal.communicate(timeout=120)
        first = stops.stop()
        assert younger.pid in first, f"never paused: {said}"
        assert first[younger.pid] < first.get(older, float("inf")), \
            f"the older job paused before the younger: {first} {said}"
        assert f"the younger job of pid {younger.pid} is paused in its place" in said, said
        # Still paused (the app's job resumes only when asked), stopped from a terminal through
        # the app's socket.
        assert paused(younger.pid)
        code, err = stop(younger.pid)
        assert code == 0, err
        assert younger.wait(30) != 0
    finally:
        if stops:
            stops.stop()
        for proc in (terminal, younger):
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_the_apps_older_job_has_a_terminal_guards_younger_job_paused(driver, rig, notifications):
    tag = f"e2e-order-b-{os.getpid()}"
    seen = max([n["id"] for n in notifications()] or [0])
    grower = subprocess.Popen(rig.wrap([HOG, *GROWER, "--tag", f"{tag}-app", "--hold", "60"]),
                              stderr=subprocess.DEVNULL)
    terminal = None
    stops = None
    try:
        row = guard_from_row(driver, grower.pid, f"{tag}-app", "100M", on_budget="pause")
        time.sleep(1)  # the terminal's job is the younger by a second at least
        terminal = subprocess.Popen([CLI, "guard", *PAUSING, "--swap-budget", "900M", "--",
                                     HOG, "8M", "--tag", f"{tag}-cli", "--hold", "600"],
                                    stderr=subprocess.PIPE, text=True)
        younger = wait_for(lambda: hog_pid(f"{tag}-cli"), what="the terminal's hog")
        stops = Stops([grower.pid, younger])
        wait_for(lambda: paused(younger), timeout=90,
                 what="the terminal's younger job paused in the app's job's place")
        made_room = wait_for(lambda: [n for n in notifications()
                                      if n["id"] > seen and n["summary"] == "Paused a younger job"],
                             what="the app's notification")
        assert str(younger) in made_room[0]["body"], made_room
        # The app's job goes on past that crossing; it pauses itself only at a later one.
        wait_for(lambda: row.get_attribute("data-state") == "paused", timeout=90,
                 what="the app's job paused at its next crossing")
        first = stops.stop()
        assert first[younger] < first.get(grower.pid, float("inf")), first
        code, err = stop(younger)
        assert code == 0, err
        _, said = terminal.communicate(timeout=30)
        assert "to make room for an older guarded job" in said, said
        # Killed from outside while paused (kill -9, Force Quit): while the kernel frees its
        # swap it is in `exit`, never a paused job that runs again.
        os.kill(grower.pid, signal.SIGKILL)
        assert grower.wait(30) == -signal.SIGKILL
        wait_for(lambda: row.find_elements(By.CSS_SELECTOR, ".verdict"), what="the app job's verdict")
        again = [n for n in notifications() if n["id"] > seen and n["summary"] == "A paused job runs again"]
        assert not again, again
    finally:
        if stops:
            stops.stop()
        for proc in (terminal, grower):
            if proc and proc.poll() is None:
                proc.kill()
                proc.wait()
