"""Lone surrogate escapes in a JSON line: replaced so that the line can be decoded.

Node's ``JSON.stringify`` writes a string cut in the middle of a surrogate pair (an emoji
sliced by a length limit) with the half it kept as an escape: ``"\\ud83d"``. RFC 8259 allows
that, but such a string is not Unicode and ``orjson`` rejects the line. The parser then
calls :func:`loads_replacing_lone_surrogates`, which replaces each escape of an unpaired
surrogate (``\\uD800``–``\\uDFFF`` not in a high-low pair) with ``\\uFFFD`` (the replacement
character, what a UTF-8 decoder gives for bytes it cannot read) and decodes again. A valid
pair, and a backslash written as ``\\\\`` before ``ud83d``, are left as they are.

Only a line ``orjson`` refused and that holds ``\\ud``/``\\uD`` is looked at again: the
lines of a normal stream never come here. One pass of a regular expression over the line
(each escape matched once, left to right): linear in the line's length.

Example:
    >>> loads_replacing_lone_surrogates(b'{"t":"cut \\\\ud83d"}')
    {'t': 'cut \\ufffd'}
    >>> loads_replacing_lone_surrogates(b'{"t":"pair \\\\ud83d\\\\ude00, low \\\\ude00"}')
    {'t': 'pair 😀, low \\ufffd'}
    >>> loads_replacing_lone_surrogates(b'{"t":"not JSON') is None
    True
"""

from __future__ import annotations

import re

import orjson

__all__ = ["loads_replacing_lone_surrogates", "replace_lone_surrogates"]

# Every escape, left to right, so that "\\\\" is consumed whole and the "ud83d" after it is
# plain text. A high-low pair is matched first (kept), then a lone surrogate (replaced), then
# any other escape (kept).
_PAIR = r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
_LONE = r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}"
_ESCAPES_BYTES = re.compile(f"({_PAIR})|({_LONE})|\\\\.".encode(), re.DOTALL)
_ESCAPES_STR = re.compile(f"({_PAIR})|({_LONE})|\\\\.", re.DOTALL)


def _keep_bytes(m: re.Match[bytes]) -> bytes:
    return b"\\uFFFD" if m.group(2) is not None else m.group(0)


def _keep_str(m: re.Match[str]) -> str:
    return "\\uFFFD" if m.group(2) is not None else m.group(0)


def replace_lone_surrogates(line: bytes | str) -> bytes | str:
    """``line`` with each escape of an unpaired surrogate replaced by ``\\uFFFD``.

    Example:
        >>> replace_lone_surrogates(r'["\\ud83d", "\\\\ud83d", "\\ud83d\\ude00"]')
        '["\\\\uFFFD", "\\\\\\\\ud83d", "\\\\ud83d\\\\ude00"]'
    """
    if isinstance(line, bytes):
        return _ESCAPES_BYTES.sub(_keep_bytes, line)
    return _ESCAPES_STR.sub(_keep_str, line)


def loads_replacing_lone_surrogates(line: bytes | str) -> object | None:
    """Decode a line ``orjson`` refused, its lone surrogate escapes replaced; ``None`` when
    it has none or is still not JSON."""
    if isinstance(line, bytes):
        if b"\\ud" not in line and b"\\uD" not in line:
            return None
    elif "\\ud" not in line and "\\uD" not in line:
        return None
    try:
        obj: object = orjson.loads(replace_lone_surrogates(line))
    except ValueError:  # orjson.JSONDecodeError among them
        return None
    return obj
