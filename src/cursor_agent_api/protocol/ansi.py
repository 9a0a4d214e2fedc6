"""Text helpers for what a person or a log sees: terminal escapes stripped, JSON shown.

Example:
    >>> strip_ansi("\\x1b[33m⚠ Warning\\x1b[0m: bad key")
    '⚠ Warning: bad key'
"""

from __future__ import annotations

import re

_ANSI = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"  # CSI, 7- and 8-bit: colours, cursor moves
    # strings, payload included: OSC (titles, hyperlinks), DCS, SOS, PM, APC (a payload stops
    # at any escape or introducer: an unterminated string is not rescanned to the end)
    r"|(?:\x1b[]PX^_]|[\x90\x98\x9d-\x9f])[^\x07\x1b\x90\x98\x9c-\x9f]*(?:\x07|\x1b\\|\x9c)"
    r"|\x1b[ -/]*[0-~]"  # any other escape: intermediates, then its final byte (ESC 7, ESC c…)
    r"|[\x1b\x80-\x9f]"  # what is left: a lone ESC, the other 8-bit controls
)
_ESCAPES = re.compile(r"[\x1b\x80-\x9f]")


def strip_ansi(text: str) -> str:
    """Return ``text`` without ANSI/VT escape sequences and 8-bit control characters.

    Every escape a terminal would obey goes, not only colours: ``ESC 7`` / ``ESC 8`` (save and
    restore the cursor, to draw one text over another), ``ESC c`` (reset), device control
    strings with their payload.

    Example:
        >>> strip_ansi("\\x1b7rm -rf ~\\x1b8ls\\x1bc")
        'rm -rf ~ls'
    """
    if _ESCAPES.search(text) is None:
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
