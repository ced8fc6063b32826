"""Where this package's own binary is: the file its wheel installed, found through the
distribution's installed-files record (RECORD), never through ``PATH``.

maturin puts the root crate's binaries in the wheel's scripts, so pip installs the tool twice
over: as ``<env>/bin/headroom`` and as ``<env>/bin/headroom-memory``. Another package may
install a ``headroom`` command at the same place (``headroom-ai`` does), which replaces ours,
and uninstalling that package deletes the file. ``headroom-memory`` is a name no other package
installs, so it is the one this package runs. Should it still be replaced, its size no longer
matches RECORD, and that is said plainly instead of running another program.
"""

from __future__ import annotations

import functools
import os
from importlib import metadata
from pathlib import Path

from ._errors import HeadroomError

#: This package's distribution name on PyPI.
DISTRIBUTION = "headroom-memory"

#: The command only this distribution installs (the same tool as ``headroom``).
COMMAND = "headroom-memory"

_MAGIC = (
    b"\x7fELF",  # Linux
    b"\xcf\xfa\xed\xfe",  # Mach-O 64-bit
    b"\xca\xfe\xba\xbe",  # Mach-O universal
)


@functools.lru_cache(maxsize=1)
def binary_path() -> Path:
    """The binary this package was installed with (``<env>/bin/headroom-memory``).

    Raises :class:`HeadroomError` when it cannot be found or is not ours any more."""
    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        raise HeadroomError(
            f"{DISTRIBUTION} is not installed (its binary comes with the wheel): "
            f"pip install {DISTRIBUTION}"
        ) from None
    entries = [
        f
        for f in dist.files or []
        if f.name in (COMMAND, f"{COMMAND}.exe") and f.parts[0] != "headroom_memory"
    ]
    if not entries:
        raise HeadroomError(
            f"{DISTRIBUTION}'s record lists no {COMMAND} binary: reinstall with "
            f"'pip install --force-reinstall {DISTRIBUTION}'"
        )
    entry = entries[0]
    path = Path(os.path.normpath(str(entry.locate())))
    _check(path, entry.size)
    return path


def _check(path: Path, size: int | None) -> None:
    """Raises unless ``path`` is the executable this package installed there."""
    try:
        stat = path.stat()
        with path.open("rb") as f:
            head = f.read(4)
    except OSError as e:
        raise HeadroomError(
            f"{DISTRIBUTION}'s {COMMAND} binary at {path}: {e.strerror}; reinstall with "
            f"'pip install --force-reinstall {DISTRIBUTION}'"
        ) from None
    replaced = (size is not None and stat.st_size != size) or head not in _MAGIC
    if replaced:
        raise HeadroomError(
            f"{path} is not {DISTRIBUTION}'s {COMMAND} binary any more: something wrote "
            f"another file over it. Reinstall with 'pip install --force-reinstall {DISTRIBUTION}'"
        )
    if not os.access(path, os.X_OK):
        raise HeadroomError(f"{DISTRIBUTION}'s {COMMAND} binary at {path} is not executable")
