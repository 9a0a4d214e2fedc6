"""Limits shared by the parser and everything that stores or sends its events.

:data:`MAX_JSON_DEPTH` is the one nesting limit of the project. The parser
(:func:`~cursor_agent_api.protocol.parse_event`, :class:`~cursor_agent_api.protocol.EventReader`)
turns an object nested deeper into a ``RAW`` event (``data["code"] == "too_deep"``, the
line kept), so no event that reaches a consumer is deeper than this. The limit leaves room
under ``orjson.dumps``'s own (255 levels) for the wrappings the server adds (a stored
payload, a WebSocket message): an event the parser accepts can always be serialized again.

Numbers likewise: every int the protocol derives from the agent's numbers (a timestamp, a
duration, token counts, an exit code, line numbers) goes through :func:`wire_int`, which keeps
it within a signed 64-bit integer (what ``orjson.dumps`` and the server's store take) and says
``None`` otherwise. The event's own ``data`` keeps what the agent wrote.

Example:
    >>> exceeds_depth({"a": [[1]]}, b'{"a":[[1]]}', limit=2)
    True
    >>> exceeds_depth({"a": [[1]]}, b'{"a":[[1]]}')
    False
"""

from __future__ import annotations

from typing import Any

MAX_JSON_DEPTH = 200
"""Deepest nesting of objects and arrays in an event the parser accepts (the top object is 1)."""


SHORTEST_TOO_DEEP = 2 * MAX_JSON_DEPTH + 2
"""A line shorter than this cannot nest deeper than :data:`MAX_JSON_DEPTH` (callers on a hot
path test the length first and call :func:`exceeds_depth` only for longer lines)."""


INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
"""The range of every int the protocol derives from the agent's numbers (see :func:`wire_int`)."""


def wire_int(value: Any) -> int | None:
    """The int the agent wrote as a number, or as a string of ASCII digits (the wire's
    ``"startedAtMs": "1789644703170"``); ``None`` for anything else: a bool, a non-finite
    number, a string with a sign or anything but digits, and a value out of the signed
    64-bit range.

    Out of range is ``None`` rather than clamped: ``1e23`` milliseconds or tokens is not a
    measure of anything, and a clamped value would look like one. A fraction is truncated
    (``1.9`` is ``1``).

    Example:
        >>> wire_int(17), wire_int(-17.9), wire_int("17"), wire_int("-3"), wire_int(INT64_MAX)
        (17, -17, 17, None, 9223372036854775807)
        >>> wire_int(1e23), wire_int(2**63), wire_int("99999999999999999999"), wire_int(True)
        (None, None, None, None)
        >>> wire_int(float("nan")), wire_int(float("inf")), wire_int("\u00b2"), wire_int("1_0")
        (None, None, None, None)
    """
    cls = value.__class__
    if cls is int:
        return value if INT64_MIN <= value <= INT64_MAX else None
    if cls is float:
        # NaN compares false; the bounds compare exactly (float(INT64_MAX) is 2**63: out)
        return int(value) if INT64_MIN <= value <= INT64_MAX else None
    if cls is str and len(value) <= 19 and value.isascii() and value.isdigit():
        number = int(value)
        return number if number <= INT64_MAX else None
    return None


def json_depth(value: Any) -> int:
    """How deeply ``value`` nests objects and arrays (a scalar is 0). Iterative: no recursion limit.

    Example:
        >>> json_depth({"a": [1, {"b": []}]}), json_depth("x")
        (4, 0)
    """
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > deepest:
            deepest = depth
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


def exceeds_depth(value: Any, line: bytes | str | None = None, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when the decoded ``value`` nests deeper than ``limit``.

    ``line``, the text it was decoded from, makes the common case cheap: a line shorter
    than ``2 * limit + 2`` characters, or with no more opening brackets than ``limit``,
    cannot nest deeper; only other ones are walked.

    Example:
        >>> deep = [[[[]]]]
        >>> exceeds_depth(deep, "[[[[]]]]", limit=3), exceeds_depth(deep, "[[[[]]]]", limit=4)
        (True, False)
        >>> exceeds_depth(deep, limit=3)
        True
    """
    if line is not None and len(line) < 2 * limit + 2:  # each level takes 2 characters
        return False
    if isinstance(line, bytes):
        if line.count(b"{") + line.count(b"[") <= limit:
            return False
    elif isinstance(line, str) and line.count("{") + line.count("[") <= limit:
        return False
    return json_depth(value) > limit
