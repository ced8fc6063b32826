"""The popover stays on the screen, whatever its size: the app on a screen of 1280×800 and
of 1024×600 (an Xvfb of that size each, a D-Bus session of its own so the single-instance
check does not hand over to the session's app), its window rectangle read through WebDriver,
all of it inside the screen, the Jobs section reachable."""
import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.options import ArgOptions

from conftest import ARTIFACTS, TARGET, _wait_port


def free_display():
    for n in range(90, 130):
        if not os.path.exists(f"/tmp/.X11-unix/X{n}") and not os.path.exists(f"/tmp/.X{n}-lock"):
            return n
    raise RuntimeError("no free X display")


@pytest.mark.parametrize("width,height,port", [(1280, 800, 4460), (1024, 600, 4470)])
def test_the_popover_fits_on_small_screens(width, height, port):
    display = free_display()
    xvfb = subprocess.Popen(["Xvfb", f":{display}", "-screen", "0", f"{width}x{height}x24", "-nolisten", "tcp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    home = tempfile.mkdtemp(prefix="headroom-position-")
    td = shutil.which("tauri-driver") or os.path.expanduser("~/.cargo/bin/tauri-driver")
    env = dict(os.environ, DISPLAY=f":{display}", HEADROOM_HOME=home, HEADROOM_SHOW_WINDOW="1", NO_AT_BRIDGE="1")
    log = open(os.path.join(ARTIFACTS, f"tauri-driver-{width}x{height}.log"), "w")
    # Its own process group, so the whole of it (dbus-run-session, tauri-driver, WebKitWebDriver,
    # the app) is ended at the end.
    driver_proc = subprocess.Popen(["dbus-run-session", "--", td, "--port", str(port), "--native-port", str(port + 1)],
                                   stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    d = None
    try:
        deadline = time.time() + 10
        while not os.path.exists(f"/tmp/.X11-unix/X{display}") and time.time() < deadline:
            time.sleep(0.1)
        _wait_port(port)
        # tauri-driver hands the session to WebKitWebDriver: a session asked for before that
        # listens is dropped ("Remote end closed connection without response").
        _wait_port(port + 1)
        opts = ArgOptions()
        opts.set_capability("tauri:options", {"application": os.path.join(TARGET, "debug/headroom-app"),
                                              "args": ["--show"]})
        d = webdriver.Remote(command_executor=f"http://127.0.0.1:{port}", options=opts)
        # The page is up when its free % shows.
        end = time.time() + 30
        while time.time() < end and not d.find_elements(By.CSS_SELECTOR, "#chart-tabs .tab"):
            time.sleep(0.2)
        rect = d.get_window_rect()
        d.save_screenshot(os.path.join(ARTIFACTS, f"popover-{width}x{height}.png"))
        x, y, w, h = rect["x"], rect["y"], rect["width"], rect["height"]
        assert x >= 0 and y >= 0 and x + w <= width and y + h <= height, (rect, width, height)
        assert w >= 300 and h >= 500, rect
        # The Jobs section can be brought into view inside the window.
        jobs = d.find_element(By.ID, "jobs-title") if d.find_elements(By.ID, "jobs-title") else d.find_element(By.ID, "jobs-empty")
        d.execute_script("arguments[0].scrollIntoView()", jobs)
        top = d.execute_script("return arguments[0].getBoundingClientRect().top", jobs)
        inner = d.execute_script("return window.innerHeight")
        assert 0 <= top < inner, (top, inner)
    finally:
        if d is not None:
            d.quit()
        try:
            os.killpg(driver_proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        driver_proc.wait(10)
        log.close()
        xvfb.terminate()
        xvfb.wait(10)
        shutil.rmtree(home, ignore_errors=True)
