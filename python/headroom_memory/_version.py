"""The package's version: the installed distribution's (its metadata), else, run from a
checkout (``python/`` on ``sys.path``), the version its wheel would get: the Cargo
workspace's ``[workspace.package] version``, which ``pyproject.toml`` takes (``dynamic =
["version"]``, filled in by maturin)."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from ._binary import DISTRIBUTION

#: What ``__version__`` says when neither the metadata nor the checkout tells.
UNKNOWN = "0+unknown"


def version() -> str:
    """The version of this package (see the module docs)."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return checkout_version(Path(__file__).resolve().parents[2] / "Cargo.toml") or UNKNOWN


def checkout_version(cargo_toml: Path) -> str | None:
    """``version`` of the ``[workspace.package]`` table of ``cargo_toml``; ``None`` when the
    file or the key is not there."""
    try:
        lines = cargo_toml.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    table = ""
    for raw in lines:
        line = raw.split("#", 1)[0].strip()
        if line.startswith("["):
            table = line
        elif table == "[workspace.package]" and line.replace(" ", "").startswith("version="):
            value = line.split("=", 1)[1].strip().strip('"').strip("'")
            return value or None
    return None
