"""Another package's `headroom` command in the same venv (headroom-ai installs one): pip
writes both to <venv>/bin/headroom, the later install wins. The package then refuses to run
the other program as its binary and says how to get its own back. A stand-in distribution
with a `headroom` console script plays headroom-ai (a wheel made here, installed offline)."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest


def stand_in_wheel(folder: Path) -> Path:
    """A wheel of `headroom-ai-standin` whose console script is called `headroom`."""
    name, version = "headroom_ai_standin", "1.0"
    files = {
        f"{name}/__init__.py": "def main():\n    print('the other headroom')\n",
        f"{name}-{version}.dist-info/METADATA":
            f"Metadata-Version: 2.1\nName: headroom-ai-standin\nVersion: {version}\n",
        f"{name}-{version}.dist-info/WHEEL":
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{name}-{version}.dist-info/entry_points.txt":
            f"[console_scripts]\nheadroom = {name}:main\n",
    }
    record = []
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for path, text in files.items():
            data = text.encode()
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.append(f"{path},sha256={digest.decode()},{len(data)}")
            z.writestr(path, data)
        record.append(f"{name}-{version}.dist-info/RECORD,,")
        z.writestr(f"{name}-{version}.dist-info/RECORD", "\n".join(record) + "\n")
    return wheel


def test_another_headroom_command_over_ours_is_refused_clearly(tmp_path: Path) -> None:
    wheel = os.environ.get("HEADROOM_TEST_WHEEL")
    if not wheel:
        pytest.skip("scripts/test-python passes the wheel under test in HEADROOM_TEST_WHEEL")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "pip"), "install", "-q", "--no-index", "--disable-pip-version-check"]
    subprocess.run([*pip, wheel], check=True)
    check = [str(venv / "bin" / "python"), "-c",
             "import headroom_memory as h\ntry:\n    print(h.binary_path())\n"
             "except h.HeadroomError as e:\n    print('ERROR', e)"]
    ours = subprocess.run(check, capture_output=True, text=True, check=True).stdout
    assert ours.strip() == str(venv / "bin" / "headroom"), ours
    # The other package installed after ours: its script is now <venv>/bin/headroom.
    subprocess.run([*pip, str(stand_in_wheel(tmp_path))], check=True)
    other = subprocess.run([str(venv / "bin" / "headroom")], capture_output=True, text=True)
    assert other.stdout.strip() == "the other headroom"
    said = subprocess.run(check, capture_output=True, text=True, check=True).stdout
    assert said.startswith("ERROR ") and "another package installed a 'headroom'" in said, said
    assert "pip install --force-reinstall headroom-memory" in said
    # Reinstalled, ours is back (and the other package's command is gone).
    subprocess.run([*pip, "--force-reinstall", "--no-deps", wheel], check=True)
    back = subprocess.run(check, capture_output=True, text=True, check=True).stdout
    assert back.strip() == str(venv / "bin" / "headroom"), back
    status = subprocess.run([str(venv / "bin" / "headroom"), "status", "--top", "1"],
                            capture_output=True, text=True)
    assert status.returncode == 0 and status.stdout.startswith("Memory"), status
