"""Where this package's own ``headroom`` binary is: the file its wheel installed, found
through the distribution's installed-files record (RECORD), never through ``PATH``.

maturin puts the binary in the wheel's scripts, so pip installs it as ``<env>/bin/headroom``.
Another package may install a ``headroom`` command at the same place (``headroom-ai`` does):
then the file is no longer ours, and its size no longer matches RECORD; that is said plainly
instead of running the other program.
"""

from __future__ import annotations

import functools
import os
from importlib import metadata
from pathlib import Path

from ._errors import HeadroomError

#: This package's distribution name on PyPI.
DISTRIBUTION = "headroom-memory"

_MAGIC = (
    b"\x7fELF",  # Linux
    b"\xcf\xfa\xed\xfe",  # Mach-O 64-bit
    b"\xca\xfe\xba\xbe",  # Mach-O universal
)


@functools.lru_cache(maxsize=1)
def binary_path() -> Path:
    """The ``headroom`` binary this package was installed with.

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
        if f.name in ("headroom", "headroom.exe") and f.parts[0] != "headroom_memory"
    ]
    if not entries:
        raise HeadroomError(f"{DISTRIBUTION}'s record lists no headroom binary")
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
        raise HeadroomError(f"{DISTRIBUTION}'s headroom binary at {path}: {e.strerror}") from None
    replaced = (size is not None and stat.st_size != size) or head not in _MAGIC
    if replaced:
        raise HeadroomError(
            f"{path} is not {DISTRIBUTION}'s headroom binary any more: another package "
            f"installed a 'headroom' command over it (headroom-ai does). Reinstall with "
            f"'pip install --force-reinstall {DISTRIBUTION}'"
        )
    if not os.access(path, os.X_OK):
        raise HeadroomError(f"{DISTRIBUTION}'s headroom binary at {path} is not executable")
