"""Text a JSON line may hold that ``orjson`` refuses: repaired so that the line can be decoded.

Two things make a line that is otherwise JSON not Unicode, and ``orjson`` rejects it:

* Node's ``JSON.stringify`` writes a string cut in the middle of a surrogate pair (an emoji
  sliced by a length limit) with the half it kept as an escape: ``"\\ud83d"``. RFC 8259 allows
  that, but such a string is not Unicode. Each escape of an unpaired surrogate
  (``\\uD800``–``\\uDFFF`` not in a high-low pair) is replaced with ``\\uFFFD`` (the replacement
  character); a valid pair, and a backslash written as ``\\\\`` before ``ud83d``, are left as
  they are.
* Bytes that are not UTF-8 (a Latin-1 ``é``, a string cut inside a character): the line is
  decoded with ``"replace"``, each such byte becoming U+FFFD, what a UTF-8 decoder shows.

:func:`loads_repaired` applies what the line needs and decodes it again; the parsers call it
(:func:`~.events.parse_event`, :class:`~.reader.EventReader`, ACP's
:func:`~.acp_codec.decode_message`: the client's and the server's turns alike). Only a line
``orjson`` refused is looked at again: the lines of a normal stream never come here. Each
repair is one linear pass over the line.

Example:
    >>> loads_repaired(b'{"t":"cut \\\\ud83d"}')
    {'t': 'cut \\ufffd'}
    >>> loads_repaired(b'{"t":"pair \\\\ud83d\\\\ude00, low \\\\ude00"}')
    {'t': 'pair 😀, low \\ufffd'}
    >>> loads_repaired(b'{"t":"caf\\xe9"}')
    {'t': 'caf\\ufffd'}
    >>> loads_repaired(b'{"t":"not JSON') is None
    True
"""

from __future__ import annotations

import re

import orjson

__all__ = ["loads_repaired", "replace_lone_surrogates"]

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


_SURROGATE_CHARS = re.compile("[\ud800-\udfff]")
"""A surrogate code point in text: a byte that was not UTF-8, read with ``"surrogateescape"``
(``\\udce9`` for ``\\xe9``), or half of a pair; never text ``orjson`` writes or reads."""


def loads_repaired(line: bytes | str) -> object | None:
    """Decode a line ``orjson`` refused, its bytes that are not UTF-8 and its lone surrogate
    escapes replaced (see the module); ``None`` when it has neither or is still not JSON.
    Text holding surrogates (bytes that were not UTF-8, read with ``"surrogateescape"``) is
    repaired as those bytes are: U+FFFD for each.

    Example:
        >>> loads_repaired(b'{"t":"caf\\xe9"}'.decode("utf-8", "surrogateescape"))
        {'t': 'caf\\ufffd'}
    """
    repaired = False
    if isinstance(line, bytes):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            line = line.decode("utf-8", "replace").encode("utf-8")
            repaired = True
        if b"\\ud" in line or b"\\uD" in line:
            line = replace_lone_surrogates(line)
            repaired = True
    else:
        if _SURROGATE_CHARS.search(line):  # text read with "surrogateescape": its bad bytes
            line = _SURROGATE_CHARS.sub("\ufffd", line)
            repaired = True
        if "\\ud" in line or "\\uD" in line:
            line = replace_lone_surrogates(line)
            repaired = True
    if not repaired:
        return None
    try:
        obj: object = orjson.loads(line)
    except ValueError:  # orjson.JSONDecodeError among them
        return None
    return obj
