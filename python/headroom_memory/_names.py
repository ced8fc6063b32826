"""Stage names, checked as the guard checks them (``headroom_rules::stages::check_name``):
text, not empty once trimmed, at most 200 bytes of UTF-8, no control characters."""

from __future__ import annotations

import unicodedata

#: Longest stage name, bytes of UTF-8 (the guard's limit).
MAX_NAME_BYTES = 200


def check_name(name: object, what: str = "a stage name") -> str:
    """Returns ``name`` trimmed, or raises :class:`TypeError` (not text) or
    :class:`ValueError` (empty, too long, control characters) saying why."""
    if not isinstance(name, str):
        raise TypeError(f"{what} must be text (str), not {type(name).__name__}")
    trimmed = name.strip()
    if not trimmed:
        raise ValueError(f"{what} cannot be empty")
    size = len(trimmed.encode("utf-8", errors="surrogatepass"))
    if size > MAX_NAME_BYTES:
        raise ValueError(f"{what} is at most {MAX_NAME_BYTES} bytes, not {size}")
    if any(unicodedata.category(c) == "Cc" for c in trimmed):
        raise ValueError(f"{what} cannot hold control characters")
    try:
        trimmed.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"{what} is not valid text: {e.reason}") from None
    return trimmed
