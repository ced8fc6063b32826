"""The wheel as a typed package with a version: ``py.typed`` installed (user code under
``mypy --strict`` sees the package's types, not ``Any``), and ``__version__``."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

import headroom_memory
from headroom_memory import _version

CARGO_TOML = Path(__file__).resolve().parents[2] / "Cargo.toml"


def test_the_wheel_installs_py_typed() -> None:
    files = metadata.files(headroom_memory.DISTRIBUTION) or []
    assert "headroom_memory/py.typed" in {f.as_posix() for f in files}, "not in RECORD"
    assert (Path(headroom_memory.__file__).parent / "py.typed").is_file()


def test_the_version_is_the_distributions_and_the_workspaces() -> None:
    version = headroom_memory.__version__
    assert isinstance(version, str) and version
    assert version == metadata.version(headroom_memory.DISTRIBUTION)
    # The wheel takes the Cargo workspace's version (pyproject: dynamic = ["version"]).
    assert version == _version.checkout_version(CARGO_TOML)


def test_the_checkout_version_is_read_from_the_workspace_table(tmp_path: Path) -> None:
    cargo = tmp_path / "Cargo.toml"
    cargo.write_text(
        '[workspace]\nmembers = ["."]\n\n[workspace.package]\nedition = "2021"\n'
        'version = "1.2.3"  # the one\n\n[package]\nname = "x"\nversion = "9.9.9"\n'
    )
    assert _version.checkout_version(cargo) == "1.2.3"
    cargo.write_text('[package]\nname = "x"\nversion = "9.9.9"\n')
    assert _version.checkout_version(cargo) is None
    assert _version.checkout_version(tmp_path / "missing.toml") is None


def test_user_code_under_mypy_strict_sees_the_packages_types(tmp_path: Path) -> None:
    # scripts/test-python passes the mypy it pins (HEADROOM_TEST_MYPY); else this venv's.
    mypy = os.environ.get("HEADROOM_TEST_MYPY")
    if mypy is None and importlib.util.find_spec("mypy") is None:
        if os.environ.get("CI"):
            pytest.fail("CI runs this test: scripts/test-python sets HEADROOM_TEST_MYPY")
        pytest.skip("no mypy: neither HEADROOM_TEST_MYPY nor mypy in this environment")
    command = [mypy] if mypy else [sys.executable, "-m", "mypy"]
    user = tmp_path / "user.py"
    user.write_text(
        "import headroom_memory\n"
        "from headroom_memory import Fit, fits, mark\n"
        "taken: bool = mark('decode')\n"
        "answer: Fit | None = fits(need=1)\n"
        "version: str = headroom_memory.__version__\n"
        "wrong: str = mark('decode')\n"
    )
    out = subprocess.run(
        [*command, "--strict", "--no-incremental",
         "--python-executable", sys.executable, str(user)],
        capture_output=True, text=True, cwd=tmp_path, timeout=300, check=False,
    )
    errors = [line for line in out.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1, out.stdout
    assert "user.py:6: error: Incompatible types in assignment" in errors[0], out.stdout


def test_python_m_runs_every_command_of_the_tool(binary: Path) -> None:
    from headroom_memory import __main__ as main

    help_text = subprocess.run([str(binary), "--help"], capture_output=True, text=True,
                               check=True).stdout
    listed = help_text.split("Commands:")[1].split("Options:")[0]
    commands = [line.split()[0] for line in listed.splitlines() if line.strip()]
    assert sorted(commands) == sorted(c for c in main.COMMANDS if not c.startswith("-"))
    for command in commands:
        # `help` takes a command, not a flag: alone it prints the tool's help.
        asked = [command] if command == "help" else [command, "--help"]
        out = subprocess.run([sys.executable, "-m", "headroom_memory", *asked],
                             capture_output=True, text=True, timeout=60, check=False)
        assert out.returncode == 0, (command, out.stderr)
        # The tool's own help, under the wheel's command name.
        assert "Usage: headroom-memory" in out.stdout, (command, out.stdout)
    version = subprocess.run([sys.executable, "-m", "headroom_memory", "--version"],
                             capture_output=True, text=True, timeout=60, check=True)
    assert version.stdout.strip() == f"headroom {headroom_memory.__version__}"
    # A bad flag is the tool's usage error, exit 2, naming the flag.
    bad = subprocess.run([sys.executable, "-m", "headroom_memory", "guard", "--swap-budjet", "1G"],
                         capture_output=True, text=True, timeout=60, check=False)
    assert bad.returncode == 2 and "--swap-budjet" in bad.stderr, bad
    # A script is still run as a script.
    usage = subprocess.run([sys.executable, "-m", "headroom_memory", "--help"],
                           capture_output=True, text=True, timeout=60, check=True)
    assert "COMMAND" in usage.stdout and "SCRIPT" in usage.stdout
