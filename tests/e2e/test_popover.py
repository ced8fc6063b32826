"""The popover end to end, as a user sees it: real numbers and chart, a memory hog found by
searching, guarded from its row with a 100M budget, stopped on real swap, its verdict in the
Jobs list, and the notifications delivered to a real notification server."""
import os
import re
import shutil
import subprocess
import time

from selenium.webdriver.common.by import By

from conftest import ARTIFACTS, ROOT, TARGET


def wait_for(fn, timeout=30, what="condition"):
    end = time.time() + timeout
    last = None
    while time.time() < end:
        try:
            v = fn()
            if v:
                return v
        except Exception as e:  # the page may be re-rendering
            last = e
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}: {last}")


def shot(driver, name):
    path = os.path.join(ARTIFACTS, name)
    driver.save_screenshot(path)
    return path


def test_header_and_chart_show_real_numbers(driver):
    free = wait_for(lambda: re.search(r"\d", driver.find_element(By.ID, "free-percent").text)
                    and driver.find_element(By.ID, "free-percent").text.strip(), what="free %")
    assert re.search(r"\d+\s*%", free), free
    meminfo = dict(l.split(":", 1) for l in open("/proc/meminfo"))
    expected = int(meminfo["MemAvailable"].split()[0]) * 100 / int(meminfo["MemTotal"].split()[0])
    assert abs(float(re.search(r"\d+", free).group()) - expected) < 3, (free, expected)
    svg = wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "#chart svg"), what="chart svg")
    assert svg
    for tab in driver.find_elements(By.CSS_SELECTOR, ".tab[data-window]"):
        tab.click()
        wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "#chart svg"), what="chart after tab")
    shot(driver, "popover-start.png")


def open_guard_form(driver, query, pid):
    """Searches the process list for `query` and opens the Guard form of `pid`'s row; returns
    the search box."""
    search = driver.find_element(By.ID, "search")
    search.clear()
    search.send_keys(query)
    row = wait_for(lambda: driver.find_element(By.CSS_SELECTOR, f".proc[data-pid='{pid}']"),
                   what="the process's row")
    # Toasts sit at the bottom of the window: the row is clicked in the middle of it.
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", row)
    row.find_element(By.CSS_SELECTOR, "[data-action='guard']").click()
    return search


def test_guard_a_hog_from_the_list(driver, rig, notifications):
    tag = f"e2e-hog-{os.getpid()}"
    hog = os.path.join(TARGET, "debug/examples/hog")
    proc = subprocess.Popen(rig.wrap([hog, "400M", "--delay", "4000", "--tag", tag]),
                            stderr=subprocess.DEVNULL)
    try:
        open_guard_form(driver, tag, proc.pid)
        budget = wait_for(lambda: driver.find_element(By.ID, "guard-budget"), what="guard form")
        budget.clear()
        budget.send_keys("100M")
        driver.find_element(By.ID, "guard-submit").click()
        # Its own row: earlier tests' finished jobs stay listed for an hour.
        def job_row():
            return next((j for j in driver.find_elements(By.CSS_SELECTOR, "#jobs .job")
                         if j.find_element(By.CSS_SELECTOR, ".job-pid").text.strip() == f"pid {proc.pid}"), None)
        wait_for(job_row, what="the hog's job row")
        verdict = wait_for(lambda: job_row().find_element(By.CSS_SELECTOR, ".verdict").text.strip(),
                           timeout=90, what="the verdict")
        assert "doesn't fit" in verdict, verdict
        assert proc.wait(10) != 0, "the hog was stopped by a signal"
        shot(driver, "popover-guarded.png")
        job_text = job_row().text.lower()
        assert "stopped" in job_text, job_text
        sent = wait_for(lambda: [n for n in notifications() if "doesn't fit" in (n["summary"] + n["body"])],
                        what="the verdict notification")
        summaries = [n["summary"] for n in notifications()]
        assert "Stopped a job" in summaries, summaries
        assert sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if os.environ.get("HEADROOM_UPDATE_SCREENSHOT") == "1":
        shutil.copy(os.path.join(ARTIFACTS, "popover-guarded.png"), os.path.join(ROOT, "docs/screenshot.png"))


def external_jobs(driver, needle):
    """Rows of read-only terminal jobs whose command contains `needle`."""
    return [j for j in driver.find_elements(By.CSS_SELECTOR, "#jobs .job")
            if j.get_attribute("data-mode") == "external" and needle in j.get_attribute("textContent")]


def test_a_terminal_guard_shows_up_read_only(driver):
    cli = os.path.join(TARGET, "debug/headroom")
    proc = subprocess.Popen([cli, "guard", "--", "sleep", "4"], stderr=subprocess.DEVNULL)
    try:
        row = wait_for(lambda: external_jobs(driver, "sleep 4"), what="the terminal job")[0]
        assert not any(b.is_displayed() for b in row.find_elements(By.CSS_SELECTOR, ".release")), \
            "read-only: no Unguard button"
        assert proc.wait(30) == 0
        verdict = wait_for(lambda: [v.get_attribute("textContent") for j in external_jobs(driver, "sleep 4")
                                    for v in j.find_elements(By.CSS_SELECTOR, ".verdict")],
                           what="the terminal job's verdict")[0]
        assert "fits: swap +" in verdict and "doesn't" not in verdict, verdict
    except AssertionError:
        shot(driver, "terminal-job-failure.png")
        with open(os.path.join(ARTIFACTS, "terminal-job-failure.html"), "w") as f:
            f.write(driver.page_source)
        raise
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_second_start_hands_over_and_exits(driver):
    """Autostart plus a manual start: the second instance hands over to the first (which shows
    its popover) and exits; the first goes on."""
    app = os.path.join(TARGET, "debug/headroom-app")
    env = dict(os.environ, HEADROOM_LOG="info", NO_AT_BRIDGE="1")
    second = subprocess.run([app], env=env, capture_output=True, text=True, timeout=60)
    assert second.returncode == 0, second.stderr
    # The first instance still answers.
    free = wait_for(lambda: driver.find_element(By.ID, "free-percent").text.strip(), what="free % after")
    assert re.search(r"\d", free), free


def test_a_watched_job_shows_its_stages(driver, rig, notifications):
    """examples/stages.py watched from its row: it marks load, work and decode through
    `headroom mark` (no $HEADROOM_MARK: the app is the watcher), its row lists the stages, and
    the verdict notification names the stage that grew swap."""
    env = dict(os.environ, PATH=os.path.join(TARGET, "debug") + ":" + os.environ["PATH"])
    env.pop("HEADROOM_MARK", None)
    script = os.path.join(ROOT, "examples/stages.py")
    proc = subprocess.Popen(rig.wrap(["python3", script, "20", "30", "250", "--hold", "2", "--delay", "6"]),
                            env=env, stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    try:
        search = driver.find_element(By.ID, "search")
        search.clear()
        search.send_keys("stages.py")
        row = wait_for(lambda: driver.find_element(By.CSS_SELECTOR, f".proc[data-pid='{proc.pid}']"),
                       what="the job's row")
        row.find_element(By.CSS_SELECTOR, "[data-action='watch']").click()
        job = wait_for(lambda: [j for j in driver.find_elements(By.CSS_SELECTOR, "#jobs .job")
                                if "stages.py" in j.get_attribute("textContent")
                                and j.get_attribute("data-mode") == "watch"], what="the watch row")[0]
        assert proc.wait(60) == 0
        stages = wait_for(lambda: job.find_element(By.CSS_SELECTOR, ".job-stages").get_attribute("textContent"),
                          timeout=30, what="the stages in the row")
        assert "load" in stages and "work" in stages and "decode" in stages, stages
        # The history chart marks them too (dashed lines named in the SVG).
        chart = wait_for(lambda: [t for t in [driver.find_element(By.ID, "chart").get_attribute("innerHTML")]
                                  if all(f">\n{n}" in t for n in ("load", "work", "decode"))],
                         timeout=30, what="the stages in the chart")
        assert "decode +" in chart[0], "the chart labels decode with the swap it added"
        # (The notification shortens the command, so it is found by its stage words.)
        verdict = wait_for(lambda: [n for n in notifications() if "(decode +" in n["body"]],
                           timeout=30, what="a verdict notification naming decode")
        assert "doesn't fit" in verdict[0]["body"], verdict
        shot(driver, "popover-stages.png")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def click(notification, key):
    """A click on button `key` of `notification`, as the notification server reports it."""
    assert key in notification["actions"], notification
    subprocess.run(["dbus-send", "--session", "--type=method_call", "--dest=org.freedesktop.Notifications",
                    "/org/freedesktop/Notifications", "org.headroom.TestNotifyd.Click",
                    f"uint32:{notification['id']}", f"string:{key}"], check=True, timeout=10)


def state_of(pid):
    """The process's state letter (T when stopped), or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[1][0]
    except (OSError, IndexError):
        return None


# Allocates 320 MiB in 8 MiB steps every 50 ms (slow enough that the guard warns before it
# would act), then holds it.
# Allocates 320 MB in a 64 MiB cgroup (about 256 MB swapped) once a line comes on stdin: only
# after the guard has started, so all of it counts against the budget (a warning at 80 % of
# 300M needs 240 MB of growth; a job that swapped before its guard began may never get there).
ALLOCATE = ("import sys, time\nsys.stdin.readline()\nheld = []\nfor _ in range(40):\n    held.append(bytearray(b'x' * (8 << 20)))\n"
            "    time.sleep(0.05)\ntime.sleep(120)\n")


def go(proc):
    """Lets an ALLOCATE job start allocating."""
    proc.stdin.write(b"go\n")
    proc.stdin.flush()


def guard_from_row(driver, pid, needle, budget, on_budget="stop"):
    search = driver.find_element(By.ID, "search")
    search.clear()
    search.send_keys(needle)
    row = wait_for(lambda: driver.find_element(By.CSS_SELECTOR, f".proc[data-pid='{pid}']"), what="the row")
    # (A toast may cover the row's button: the click goes to the button itself.)
    driver.execute_script("arguments[0].click()", row.find_element(By.CSS_SELECTOR, "[data-action='guard']"))
    field = wait_for(lambda: driver.find_element(By.ID, "guard-budget"), what="guard form")
    field.clear()
    field.send_keys(budget)
    driver.execute_script(f"document.getElementById('guard-on-budget').value = '{on_budget}'")
    driver.execute_script("arguments[0].click()", driver.find_element(By.ID, "guard-submit"))
    return wait_for(lambda: [j for j in driver.find_elements(By.CSS_SELECTOR, "#jobs .job")
                             if f"pid {pid}" in j.get_attribute("textContent")
                             and j.get_attribute("data-mode") == "guard"], what="the guard row")[0]


def newest(notifications, summary, after):
    found = [n for n in notifications() if n["summary"] == summary and n["id"] > after]
    return found[-1] if found else None


def test_notification_buttons_pause_resume_stop_and_spare(driver, rig, notifications):
    """The warning's "Pause now" pauses the job (every process stopped, row paused); the pause's
    "Resume" continues it; a pause from the row, then its notification's "Stop", stops it. A
    second job's warning "Spare it" lets it go, running. Clicked through D-Bus ActionInvoked."""
    seen = max([n["id"] for n in notifications()] or [0])
    first = subprocess.Popen(rig.wrap(["python3", "-c", ALLOCATE, "e2e-buttons-1"]),
                             stdin=subprocess.PIPE, stderr=subprocess.DEVNULL)
    second = None
    try:
        job = guard_from_row(driver, first.pid, "e2e-buttons-1", "300M")
        go(first)
        warning = wait_for(lambda: newest(notifications, "Guard about to stop a job", seen),
                           timeout=60, what="the warning")
        # The buttons, and "default": a click on the notification itself opens the popover.
        # "show" first: a click that names no action (macOS "Options") opens the popover.
        assert set(warning["actions"]) == {"show", "spare", "pause", "default"}, warning
        click(warning, "pause")
        wait_for(lambda: state_of(first.pid) == "T", what="paused by the notification")
        wait_for(lambda: job.get_attribute("data-state") == "paused", what="the row says paused")
        pause = wait_for(lambda: newest(notifications, "Paused a job", warning["id"]), what="the pause notification")
        assert set(pause["actions"]) == {"show", "resume", "stop", "default"}, pause
        shot(driver, "popover-paused.png")
        click(pause, "resume")
        wait_for(lambda: state_of(first.pid) not in ("T", None), what="resumed by the notification")
        wait_for(lambda: job.get_attribute("data-state") == "running", what="the row says running")
        job.find_element(By.CSS_SELECTOR, "[data-action='pause']").click()
        wait_for(lambda: state_of(first.pid) == "T", what="paused from the row")
        again = wait_for(lambda: newest(notifications, "Paused a job", pause["id"]), what="the second pause")
        click(again, "stop")
        assert first.wait(30) != 0, "stopped by a signal"
        wait_for(lambda: job.get_attribute("data-state") == "stopped", what="the row says stopped")
        verdict = job.find_element(By.CSS_SELECTOR, ".verdict").get_attribute("textContent")
        assert "paused twice" in verdict, verdict

        latest = max(n["id"] for n in notifications())
        second = subprocess.Popen(rig.wrap(["python3", "-c", ALLOCATE, "e2e-buttons-2"]),
                                  stdin=subprocess.PIPE, stderr=subprocess.DEVNULL)
        guard_from_row(driver, second.pid, "e2e-buttons-2", "300M")
        go(second)
        warning = wait_for(lambda: newest(notifications, "Guard about to stop a job", latest),
                           timeout=60, what="the second warning")
        click(warning, "spare")
        wait_for(lambda: not [j for j in driver.find_elements(By.CSS_SELECTOR, "#jobs .job")
                              if f"pid {second.pid}" in j.get_attribute("textContent")
                              and j.get_attribute("data-state") == "running"], what="the spared job let go")
        time.sleep(1)
        assert second.poll() is None and state_of(second.pid) not in ("T", None), "spared: still running"
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
