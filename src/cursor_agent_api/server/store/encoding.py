"""JSON values serialized once, ahead of the insert: the engine's serializer passes
their text through (:func:`json_dumps`, the engine's ``json_serializer``).

Example:
    >>> json_dumps(_Encoded('{"a":1}')), json_dumps({"a": 1})
    ('{"a":1}', '{"a":1}')
"""

from __future__ import annotations

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
    return orjson.dumps(value).decode()


def _encode(value: Any) -> _Encoded | str:
    """``value`` serialized, or the reason it cannot be (a string)."""
    try:
        return _Encoded(orjson.dumps(value).decode())
    except (orjson.JSONEncodeError, TypeError, ValueError, RecursionError) as e:
        return f"{type(e).__name__}: {str(e)[:200]}"
