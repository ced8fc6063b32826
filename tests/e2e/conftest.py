"""Fixtures for the popover's end-to-end tests: an isolated HEADROOM_HOME, a real
notification server on the session bus, real swap, tauri-driver (WebKitWebDriver), and a
WebDriver session on the real app window.

Run through scripts/test-e2e, which provides Xvfb and a session D-Bus (dbus-run-session)."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest
from selenium import webdriver
from selenium.webdriver.common.options import ArgOptions

sys.path.insert(0, os.path.dirname(__file__))
from rig import Rig  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
ARTIFACTS = os.environ.get("HEADROOM_ARTIFACTS", os.path.join(ROOT, "artifacts"))


def need_root():
    if os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("the end-to-end tests need root (real swap) and CI must run them")
        pytest.skip("needs root: real swap (swapon, cgroups)")


@pytest.fixture(scope="session")
def home():
    d = tempfile.mkdtemp(prefix="headroom-e2e-")
    os.environ["HEADROOM_HOME"] = d
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def notifications(home):
    assert os.environ.get("DBUS_SESSION_BUS_ADDRESS"), "run under dbus-run-session (scripts/test-e2e)"
    path = os.path.join(home, "notifications.jsonl")
    open(path, "w").close()
    proc = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(__file__), "notifyd.py"), path],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "notifyd: ready"

    def read():
        with open(path) as f:
            return [json.loads(l) for l in f if l.strip()]

    yield read
    proc.terminate()
    proc.wait(5)


@pytest.fixture(scope="session")
def rig():
    need_root()
    with Rig(swap_mib=1024, limit_mib=64) as r:
        yield r


def _wait_port(port, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listens on {port}")


@pytest.fixture(scope="session")
def driver(home, notifications):
    app = os.path.join(TARGET, "debug/headroom-app")
    assert os.path.exists(app), f"{app} missing: scripts/test-e2e builds it"
    td = shutil.which("tauri-driver") or os.path.expanduser("~/.cargo/bin/tauri-driver")
    os.makedirs(ARTIFACTS, exist_ok=True)
    log = open(os.path.join(ARTIFACTS, "tauri-driver.log"), "w")
    env = dict(os.environ, HEADROOM_SHOW_WINDOW="1", HEADROOM_LOG="info", NO_AT_BRIDGE="1")
    # Its own process group: tauri-driver and the WebKitWebDriver it starts end together,
    # however the session ends (a session that failed to start left both running, and the
    # next run's driver could not take their ports).
    proc = subprocess.Popen([td], stdout=log, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)
    d = None
    try:
        _wait_port(4444)
        # tauri-driver hands the session to WebKitWebDriver: wait until it listens too.
        _wait_port(4445)
        opts = ArgOptions()
        opts.set_capability("tauri:options", {"application": app, "args": ["--show"]})
        d = webdriver.Remote(command_executor="http://127.0.0.1:4444", options=opts)
        d.implicitly_wait(0)
        yield d
    finally:
        try:
            if d is not None:
                d.quit()
        finally:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            proc.wait(10)
            log.close()
