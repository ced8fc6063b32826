#!/usr/bin/env python3
"""`headroom serve` against a real Prometheus (Debian's), as a fleet would run it.

1. `promtool check metrics` is clean on the endpoint's output (text format), and the
   OpenMetrics output ends in `# EOF`.
2. Prometheus scrapes it every second; through Prometheus's HTTP API,
   `headroom_swap_used_bytes` equals SwapTotal - SwapFree from /proc/meminfo, with swap in
   use for real (as root: the swap lab of the e2e tests, a hog pushed into a 1 GiB swap file
   by a 64 MiB cgroup), and `headroom_memory_total_bytes` equals MemTotal.
3. A guarded job that the guard stops (a 100 % free floor: stopped on its second reading)
   shows up in `headroom_guard_stops_total{reason="low_free"}`.
4. The example config and alert rules pass `promtool check config|rules`; the Grafana
   dashboard is valid JSON and every metric it queries is one the endpoint serves.

Usage: check.py HEADROOM_BIN HOG_BIN WORKDIR
"""
import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests/e2e"))
from rig import Rig  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, accept=None):
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.headers.get("Content-Type"), r.read().decode()


def wait_for(what, fn, timeout=60):
    end = time.time() + timeout
    while time.time() < end:
        try:
            v = fn()
            if v is not None:
                return v
        except OSError:
            pass
        time.sleep(0.25)
    sys.exit(f"check.py: timed out waiting for {what}")


def query(prom, expr):
    url = f"http://127.0.0.1:{prom}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    _, body = get(url)
    data = json.loads(body)
    assert data["status"] == "success", data
    return data["data"]["result"]


def swap_used_bytes():
    info = dict(l.split(":", 1) for l in open("/proc/meminfo"))
    kib = lambda k: int(info[k].split()[0]) * 1024
    return kib("SwapTotal") - kib("SwapFree")


def swap_lab():
    """The swap lab as root; without root, no lab (CI runs as root and must have it)."""
    if os.geteuid() == 0:
        return Rig(swap_mib=1024, limit_mib=64, name="headroom-prom")
    if os.environ.get("CI"):
        sys.exit("check.py: real swap needs root, and CI must run it")
    print("check.py: not root: swap in use is compared as it is (maybe 0), without the swap lab")
    return contextlib.nullcontext()


def main(bin_path, hog_path, work):
    with swap_lab() as rig:
        run(bin_path, hog_path, work, rig)


def run(bin_path, hog_path, work, rig):
    env = dict(os.environ, HEADROOM_HOME=os.path.join(work, "home"))
    port, prom = free_port(), free_port()
    procs = []
    try:
        if rig is not None:
            procs.append(subprocess.Popen(rig.wrap([hog_path, "200M", "--hold", "600"]), stderr=subprocess.DEVNULL))
            wait_for("the hog in swap", lambda: True if swap_used_bytes() > (100 << 20) else None)
        serve = subprocess.Popen([bin_path, "serve", "--listen", f"127.0.0.1:{port}", "--interval", "0.5s"],
                                 env=env, stderr=subprocess.PIPE, text=True)
        procs.append(serve)
        assert "serving metrics" in serve.stderr.readline()
        metrics_url = f"http://127.0.0.1:{port}/metrics"
        ctype, text = get(metrics_url)
        assert ctype.startswith("text/plain; version=0.0.4"), ctype
        lint = subprocess.run(["promtool", "check", "metrics"], input=text, text=True, capture_output=True)
        print(lint.stdout + lint.stderr, end="")
        assert lint.returncode == 0 and not (lint.stdout + lint.stderr).strip(), "promtool check metrics found problems"
        print("check.py: promtool check metrics: clean")
        ctype, om = get(metrics_url, "application/openmetrics-text; version=1.0.0")
        assert ctype.startswith("application/openmetrics-text") and om.endswith("# EOF\n"), ctype

        config = os.path.join(work, "prometheus.yml")
        with open(config, "w") as f:
            f.write(f"global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: headroom\n"
                    f"    static_configs:\n      - targets: ['127.0.0.1:{port}']\n")
        procs.append(subprocess.Popen(
            ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={work}/data",
             f"--web.listen-address=127.0.0.1:{prom}"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "prometheus.log"), "w")))
        wait_for("Prometheus's first scrape", lambda: query(prom, "headroom_swap_used_bytes") or None)
        # Compare with /proc while swap is steady: the same value three reads in a row.
        for _ in range(20):
            before = swap_used_bytes()
            time.sleep(2.5)  # a newer reading (0.5 s) and a newer scrape (1 s)
            seen = float(query(prom, "headroom_swap_used_bytes")[0]["value"][1])
            after = swap_used_bytes()
            if before == after:
                assert seen == after, f"Prometheus has {seen}, /proc says {after}"
                print(f"check.py: headroom_swap_used_bytes = {int(seen)} = /proc's SwapTotal - SwapFree")
                break
            print(f"check.py: swap moved ({before} -> {after}); again")
        else:
            sys.exit("check.py: swap never held still for the comparison")

        info = dict(l.split(":", 1) for l in open("/proc/meminfo"))
        total = float(query(prom, "headroom_memory_total_bytes")[0]["value"][1])
        assert total == int(info["MemTotal"].split()[0]) * 1024, total
        stops = 'headroom_guard_stops_total{reason="low_free"}'
        start = float(wait_for("the stops counter", lambda: query(prom, stops) or None)[0]["value"][1])
        guard = subprocess.run([bin_path, "guard", "--wait-free", "0", "--kill-free", "100", "--", "sleep", "30"],
                               env=env, capture_output=True, text=True, timeout=60)
        assert guard.returncode == 3, guard.stderr
        wait_for("the stop in Prometheus",
                 lambda: True if float(query(prom, stops)[0]["value"][1]) == start + 1 else None, timeout=30)
        print(f"check.py: {stops} went {int(start)} -> {int(start) + 1} after the guard's stop")
        finished = query(prom, 'headroom_jobs_finished_total{verdict="doesnt_fit"}')
        assert float(finished[0]["value"][1]) >= 1, finished

        docs = os.path.join(ROOT, "docs/prometheus")
        for args in (["check", "config", os.path.join(docs, "prometheus.yml")],
                     ["check", "rules", os.path.join(docs, "alerts.yml")]):
            out = subprocess.run(["promtool", *args], capture_output=True, text=True)
            assert out.returncode == 0, out.stdout + out.stderr
            print(f"check.py: promtool {' '.join(args[:2])} {os.path.basename(args[2])}: ok")
        _, text = get(metrics_url)  # now with a job in it
        served = set(re.findall(r"^(headroom_[a-z_]+)", text, re.M))
        dashboard = json.load(open(os.path.join(docs, "grafana-dashboard.json")))
        exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
        exprs += [v["definition"] for v in dashboard["templating"]["list"]]
        used = set(re.findall(r"headroom_[a-z_]+", " ".join(exprs)))
        missing = sorted(used - served)
        assert not missing, f"the dashboard queries metrics the endpoint does not serve: {missing}"
        with open(os.path.join(docs, "alerts.yml")) as f:
            missing = sorted(set(re.findall(r"headroom_[a-z_]+", f.read())) - served)
        assert not missing, f"the alert rules use metrics the endpoint does not serve: {missing}"
        print(f"check.py: the Grafana dashboard's {len(used)} metrics are all served: {sorted(used)}")
    finally:
        for p in procs:
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
