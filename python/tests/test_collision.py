"""Another package's `headroom` command in the same venv (headroom-ai installs one): pip
writes both to <venv>/bin/headroom, the later install wins, and uninstalling either deletes
the file. The wheel's own `headroom-memory` command (the same tool, a name no other package
installs) and `python -m headroom_memory COMMAND` keep working whichever was installed first
and whichever is uninstalled. A stand-in distribution with a `headroom` console script plays
headroom-ai (a wheel made here, installed offline)."""

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


class Venv:
    """A fresh venv with pip that installs offline."""

    def __init__(self, root: Path) -> None:
        self.root = root
        subprocess.run([sys.executable, "-m", "venv", str(root)], check=True)
        self.bin = root / "bin"

    def pip(self, *args: str) -> None:
        offline = ["--no-index"] if args[0] == "install" else []
        subprocess.run([str(self.bin / "pip"), args[0], "-q", *offline,
                        "--disable-pip-version-check", *args[1:]], check=True)

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=60)

    def ours_works(self) -> None:
        """Our tool runs by its own name and through ``python -m``, and the package finds
        its binary."""
        own = self.run(str(self.bin / "headroom-memory"), "status", "--top", "1")
        assert own.returncode == 0 and own.stdout.startswith("Memory"), own
        module = self.run(str(self.bin / "python"), "-m", "headroom_memory", "status", "--top", "1")
        assert module.returncode == 0 and module.stdout.startswith("Memory"), module
        found = self.run(str(self.bin / "python"), "-c",
                         "import headroom_memory as h; print(h.binary_path())")
        assert found.stdout.strip() == str(self.bin / "headroom-memory"), found

    def headroom_is(self) -> str:
        """Whose program ``<venv>/bin/headroom`` is now: "ours", "other" or "none"."""
        path = self.bin / "headroom"
        if not path.exists():
            return "none"
        out = self.run(str(path), "--version")
        if out.stdout.startswith("headroom "):
            return "ours"
        assert "the other headroom" in out.stdout, out
        return "other"


def wheels(tmp_path: Path) -> tuple[str, str]:
    wheel = os.environ.get("HEADROOM_TEST_WHEEL")
    if not wheel:
        if os.environ.get("CI"):
            pytest.fail("scripts/test-python passes the wheel under test in HEADROOM_TEST_WHEEL")
        pytest.skip("scripts/test-python passes the wheel under test in HEADROOM_TEST_WHEEL")
    return wheel, str(stand_in_wheel(tmp_path))


def test_the_wheel_installs_both_names_of_one_tool(tmp_path: Path) -> None:
    ours, _ = wheels(tmp_path)
    venv = Venv(tmp_path / "venv")
    venv.pip("install", ours)
    assert venv.headroom_is() == "ours"
    venv.ours_works()
    named = venv.run(str(venv.bin / "headroom-memory"), "--help")
    assert "Usage: headroom-memory" in named.stdout, named.stdout


@pytest.mark.parametrize("first", ["ours", "other"])
@pytest.mark.parametrize("uninstalled", ["ours", "other"])
def test_ours_survives_the_other_headroom_in_either_order(
    tmp_path: Path, first: str, uninstalled: str
) -> None:
    ours, other = wheels(tmp_path)
    venv = Venv(tmp_path / "venv")
    order = [ours, other] if first == "ours" else [other, ours]
    for wheel in order:
        venv.pip("install", wheel)
    # The last install owns `headroom`; ours works by its own name either way.
    assert venv.headroom_is() == ("other" if first == "ours" else "ours")
    venv.ours_works()
    if uninstalled == "other":
        venv.pip("uninstall", "-y", "headroom-ai-standin")
        # pip deletes the paths a distribution's RECORD lists, whoever wrote them last:
        # <venv>/bin/headroom is gone in both orders, and ours works by its own name.
        assert venv.headroom_is() == "none"
        venv.ours_works()
    else:
        venv.pip("uninstall", "-y", "headroom-memory")
        assert not (venv.bin / "headroom-memory").exists()
        gone = venv.run(str(venv.bin / "python"), "-m", "headroom_memory", "status")
        assert gone.returncode != 0 and "No module named headroom_memory" in gone.stderr, gone
        # The same rule: <venv>/bin/headroom was in our RECORD, so it is gone in both orders
        # (the other package's reinstall brings its command back).
        assert venv.headroom_is() == "none"
        venv.pip("install", "--force-reinstall", "--no-deps", other)
        assert venv.headroom_is() == "other"
