"""Text helpers for what a person or a log sees: terminal escapes stripped, JSON shown.

Example:
    >>> strip_ansi("\\x1b[33m⚠ Warning\\x1b[0m: bad key")
    '⚠ Warning: bad key'
"""

from __future__ import annotations

import re

_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC: titles, hyperlinks
    r"|\x1b[()*+][0-9A-Za-z]"  # character set selection
    r"|\x1b[@-Z\\-_]"  # two-byte escapes
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
)


def strip_ansi(text: str) -> str:
    """Return ``text`` without ANSI/VT escape sequences."""
    if "\x1b" not in text and "\x9b" not in text:
        return text
    return _ANSI.sub("", text)


def json_text(value: object) -> str:
    """Compact JSON text of ``value``; never raises (falls back to the stdlib, then ``repr``).

    Example:
        >>> json_text({"a": [1, 2]})
        '{"a":[1,2]}'
        >>> json_text({"big": 2**70})
        '{"big":1180591620717411303424}'
    """
    import orjson

    try:
        return orjson.dumps(value).decode()
    except TypeError:
        import json

        try:
            return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=repr)
        except (TypeError, ValueError):
            return repr(value)
