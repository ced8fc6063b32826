#!/usr/bin/env python3
"""Screenshots of the mock harness in WebKitGTK (the engine of the Linux app), via WebDriver.

Needs: apt-get install -y webkit2gtk-driver xvfb xauth. Run under Xvfb:
    xvfb-run -a ui-tests/webkit-screenshot.py            -> ui-tests/out/webkit-{light,dark}.png
Dark mode comes from the GTK theme (GTK_THEME=Adwaita:dark for the dark run).
Also prints page checks: ids present, no horizontal overflow, no page errors.
"""
import base64
import json
import os
import pathlib
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out"
MINIBROWSER = "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url, seconds=10):
    end = time.time() + seconds
    while True:
        try:
            urllib.request.urlopen(url, timeout=1)
            return
        except Exception:
            if time.time() > end:
                raise
            time.sleep(0.1)


class Driver:
    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"
        self.session = None

    def req(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        r = urllib.request.Request(self.base + path, data=data, method=method,
                                   headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(r, timeout=60) as resp:
            return json.loads(resp.read() or b"{}").get("value")

    def start(self):
        caps = {"capabilities": {"alwaysMatch": {"webkitgtk:browserOptions": {
            "binary": MINIBROWSER, "args": ["--automation"]}}}}
        self.session = self.req("POST", "/session", caps)["sessionId"]

    def s(self, method, path, body=None):
        return self.req(method, f"/session/{self.session}{path}", body)

    def run(self, script, *args):
        return self.s("POST", "/execute/sync", {"script": script, "args": list(args)})


def shoot(scheme, http_port, query, name, height):
    env = dict(os.environ)
    env["GTK_THEME"] = "Adwaita:dark" if scheme == "dark" else "Adwaita"
    port = free_port()
    drv_proc = subprocess.Popen(["WebKitWebDriver", f"--port={port}"], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_http(f"http://127.0.0.1:{port}/status")
        d = Driver(port)
        d.start()
        try:
            d.s("POST", "/window/rect", {"width": 400, "height": height + 100})
            q = urllib.parse.quote(query.lstrip("?"), safe="")
            d.s("POST", "/url", {"url": f"http://127.0.0.1:{http_port}/ui-tests/frame.html?h={height}&q={q}"})
            frame = d.s("POST", "/element", {"using": "css selector", "value": "#popover"})
            d.s("POST", "/frame", {"id": frame})
            end = time.time() + 10
            while not d.run("return document.querySelectorAll('.proc').length > 0 && !!document.querySelector('#chart svg')"):
                if time.time() > end:
                    raise SystemExit("webkit: the page never rendered its data")
                time.sleep(0.1)
            time.sleep(0.8)
            report = d.run("""
                const ids = ['free-percent','swap-used','pressure','chart','jobs','processes','search','settings'];
                return {
                  missing: ids.filter((id) => !document.getElementById(id)),
                  dark: matchMedia('(prefers-color-scheme: dark)').matches,
                  width: document.documentElement.scrollWidth, inner: innerWidth,
                  free: document.getElementById('free-percent').textContent,
                  jobs: document.querySelectorAll('.job').length,
                  procs: document.querySelectorAll('.proc').length,
                  toasts: [...document.querySelectorAll('.toast')].map((t) => t.textContent),
                };""")
            d.s("POST", "/frame/parent", {})
            # A viewport screenshot: the frame sits top-left on grey (WebKit's element
            # screenshots of a frame with scrolled content come out shifted).
            png = base64.b64decode(d.s("GET", "/screenshot"))
            OUT.mkdir(exist_ok=True)
            (OUT / f"{name}.png").write_bytes(png)
            print(name, json.dumps(report))
            return report
        finally:
            d.s("DELETE", "")
    finally:
        drv_proc.terminate()
        drv_proc.wait(5)


def main():
    subprocess.run([sys.executable, str(HERE / "make-harness.py")], check=True, stdout=subprocess.DEVNULL)
    http_port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(http_port), "--bind", "127.0.0.1",
                               "--directory", str(ROOT)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ok = True
    try:
        wait_http(f"http://127.0.0.1:{http_port}/ui-tests/harness.html")
        for scheme in ("light", "dark"):
            r = shoot(scheme, http_port, "", f"webkit-{scheme}", 900)
            ok &= not r["missing"] and r["inner"] == 380 and r["width"] <= r["inner"] and not r["toasts"]
            ok &= r["dark"] == (scheme == "dark")
        shoot("light", http_port, "?demo=guard", "webkit-guard-form-light", 900)
        shoot("dark", http_port, "?demo=settings", "webkit-settings-dark", 560)
    finally:
        server.terminate()
        server.wait(5)
    print("webkit: ok" if ok else "webkit: FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
