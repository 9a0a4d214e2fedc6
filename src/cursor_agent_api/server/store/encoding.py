"""JSON values serialized once, ahead of the insert: the engine's serializer passes
their text through (:func:`json_dumps`, the engine's ``json_serializer``).

Example:
    >>> json_dumps(_Encoded('{"a":1}')), json_dumps({"a": 1})
    ('{"a":1}', '{"a":1}')
"""

from __future__ import annotations

import json
from typing import Any

import orjson


class _Encoded:
    """A JSON value serialized ahead of the insert (see :meth:`Store.append`): the engine's
    serializer passes its text through instead of serializing the value again."""

    __slots__ = ("text",)

    def __init__(self, text: str | bytes) -> None:
        self.text = text



def json_dumps(value: Any) -> Any:
    if value.__class__ is _Encoded:
        return value.text
    return _dumps(value)


def json_bytes(value: Any) -> bytes:
    """``value`` as compact JSON (UTF-8). The agent's integers have no bound (a token count
    past 64 bits, the protocol's int of a float): orjson stops at 64 bits, the standard
    library writes any integer, so it writes those values (JSON has no limit; no column
    refuses them). Hand-written because orjson has no option for big integers.

    Example:
        >>> json_bytes({"input_tokens": 10**20, "s": "é"}).decode()
        '{"input_tokens":100000000000000000000,"s":"é"}'
    """
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError as e:
        if "Integer exceeds 64-bit range" not in str(e):
            raise
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def _dumps(value: Any) -> str:
    return json_bytes(value).decode()


def _encode(value: Any) -> _Encoded | str:
    """``value`` serialized, or the reason it cannot be (a string)."""
    try:
        return _Encoded(_dumps(value))
    except (orjson.JSONEncodeError, TypeError, ValueError, RecursionError) as e:
        return f"{type(e).__name__}: {str(e)[:200]}"
