""""Will it fit?" in the popover, end to end: a key with a past run (a trace imported with
the real CLI into the app's own run history) shows "fits now"; a real process that takes
6 GB of free memory turns it into "won't fit"; when the process ends it fits again."""
import json
import os
import subprocess
import tempfile

from selenium.webdriver.common.by import By

from conftest import ARTIFACTS, TARGET
from test_popover import open_guard_form, shot, wait_for

GIB = 1 << 30
CLI = os.path.join(TARGET, "debug/headroom")
HOG = os.path.join(TARGET, "debug/examples/hog")


def meminfo(field):
    for line in open("/proc/meminfo"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


def room():
    """Free memory above the default free floor (10 %), as the app counts it."""
    return meminfo("MemAvailable") - meminfo("MemTotal") // 10


def cli(*args):
    out = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, (args, out.stdout, out.stderr)
    return out.stdout


def seed(key, need_bytes):
    """One past run of `key` that took `need_bytes` of free memory on this machine."""
    total = meminfo("MemTotal")
    drop = need_bytes / total * 100
    samples = [
        {"type": "start", "interval": 0.5},
        {"type": "sample", "t": 0.0, "footprint": 1_000_000, "swap_used": 0, "level": 99.0},
        {"type": "sample", "t": 1.0, "footprint": need_bytes, "swap_used": 0, "level": 99.0 - drop},
        {"type": "end"},
    ]
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        f.write("".join(json.dumps(s) + "\n" for s in samples))
    cli("history", "forget", key)
    cli("history", "import", f.name, "--key", key, "--total-memory", str(total))
    os.unlink(f.name)
    # All of this machine's memory free: the prediction, whether it fits (0) or not (1).
    out = subprocess.run([CLI, "fit", "--key", key, "--json", "--free", "100%", "--", "x"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode in (0, 1), (out.stdout, out.stderr)
    return json.loads(out.stdout)["prediction"]["need_bytes"]


def answer(driver, key):
    for row in driver.find_elements(By.CSS_SELECTOR, "#fits .fit"):
        if row.get_attribute("data-key") == key:
            return row.find_element(By.CSS_SELECTOR, ".fit-answer").get_attribute("textContent")
    return None


def test_the_answer_follows_free_memory(driver):
    key = f"e2e-fit-{os.getpid()}"
    assert room() > 10 * GIB, f"the test needs 10 GiB of room, has {room() / GIB:.1f}"
    # Predicted need: 3 GiB under the room now (the prediction adds its margin: scaled to it).
    target = room() - 3 * GIB
    predicted = seed(key, 4 * GIB)
    predicted = seed(key, int(4 * GIB * target / predicted))
    assert abs(predicted - target) < GIB // 2, (predicted, target)
    hog = None
    try:
        text = wait_for(lambda: answer(driver, key), what="the key's answer")
        assert text.startswith("fits now"), text
        # A real process takes 6 GiB: 3 GiB short.
        hog = subprocess.Popen([HOG, "6G", "--hold", "120"], stderr=subprocess.PIPE, text=True)
        assert "holding" in hog.stderr.readline()
        text = wait_for(lambda: (answer(driver, key) or "").startswith("won't fit") and answer(driver, key),
                        timeout=20, what="won't fit while the hog holds its memory")
        assert " short" in text, text
        shot(driver, "popover-wont-fit.png")
        hog.kill()
        hog.wait(10)
        text = wait_for(lambda: (answer(driver, key) or "").startswith("fits now") and answer(driver, key),
                        timeout=20, what="fits again once the hog is gone")
    except AssertionError:
        shot(driver, "fits-failure.png")
        with open(os.path.join(ARTIFACTS, "fits-failure.html"), "w") as f:
            f.write(driver.page_source)
        raise
    finally:
        if hog and hog.poll() is None:
            hog.kill()
        cli("history", "forget", key)


def test_the_guard_form_shows_the_prediction_of_the_process_picked(driver):
    seconds = str(3000 + os.getpid() % 1000)
    key = f"sleep {seconds}"  # the key of the process's command line
    seed(key, 1 * GIB)
    proc = subprocess.Popen(["sleep", seconds])
    try:
        search = open_guard_form(driver, seconds, proc.pid)
        line = wait_for(lambda: driver.find_element(By.ID, "guard-fit").get_attribute("data-fits")
                        and driver.find_element(By.ID, "guard-fit"), what="the prediction in the form")
        text = line.get_attribute("textContent")
        assert text.startswith("Needs about ") and "(1 past run): fits now" in text, text
        assert text.endswith("Last: fits"), text
        assert line.get_attribute("title") == f"Key: {key}"
        shot(driver, "guard-form-fit.png")
        driver.find_element(By.ID, "guard-cancel").click()
        search.clear()
    except AssertionError:
        shot(driver, "guard-form-fit-failure.png")
        raise
    finally:
        proc.kill()
        proc.wait(5)
        cli("history", "forget", key)


def test_a_key_typed_in_the_guard_form_is_its_history(driver):
    """The Guard form's key field: the prediction shown is the typed key's, and the run the
    app guards is recorded under that key (with the memory it ran in)."""
    seconds = str(4000 + os.getpid() % 1000)
    key = f"e2e-named-{os.getpid()}"
    seed(key, 2 * GIB)
    proc = subprocess.Popen(["sleep", seconds])
    try:
        open_guard_form(driver, seconds, proc.pid)
        line = wait_for(lambda: driver.find_element(By.ID, "guard-fit").get_attribute("data-key")
                        and driver.find_element(By.ID, "guard-fit"), what="the form's first answer")
        assert "No past run of sleep " in line.get_attribute("textContent"), line.get_attribute("textContent")
        field = driver.find_element(By.ID, "guard-key")
        assert field.get_attribute("placeholder") == f"sleep {seconds}"
        field.send_keys(key)
        wait_for(lambda: line.get_attribute("data-key") == key and line.get_attribute("data-fits"),
                 what="the typed key's prediction")
        text = line.get_attribute("textContent")
        assert text.startswith("Needs about ") and "(1 past run)" in text, text
        shot(driver, "guard-form-key.png")
        driver.find_element(By.ID, "guard-submit").click()
        wait_for(lambda: not driver.find_elements(By.ID, "guard-form"), what="the form to close")
        proc.terminate()
        proc.wait(5)

        def runs():
            rows = json.loads(cli("history", key, "--json"))
            return [r for r in rows if r["command"].startswith("sleep ")] or None
        recorded = wait_for(runs, timeout=20, what="the app's run recorded under the typed key")
        assert recorded[0]["total_bytes"] == meminfo("MemTotal"), recorded[0]
        assert recorded[0]["free_start_percent"] is not None, recorded[0]
    except AssertionError:
        shot(driver, "guard-form-key-failure.png")
        raise
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
        driver.find_element(By.ID, "search").clear()
        cli("history", "forget", key)
        # The page as the next test expects it: the toasts of this guard gone.
        wait_for(lambda: not driver.find_elements(By.CSS_SELECTOR, "#toasts .toast"), timeout=15,
                 what="the toasts to go")
