"""Terminal escape sequences: strip them from text meant for a person or a log.

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
