"""Cutting long values: strings over a byte limit cut (never half a character), each cut
noted by its JSON pointer, and reading a value back by its pointer.

Example:
    >>> utf8_prefix("naïve", 3)
    'na'
"""

from __future__ import annotations

from typing import Any

from .records import EventRecord


def utf8_size(text: str) -> int:
    """``len(text.encode())``, without the copy when the text is ASCII.

    Example:
        >>> utf8_size("abc"), utf8_size("é")
        (3, 2)
    """
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def utf8_prefix(text: str, limit: int) -> str:
    """The longest prefix of ``text`` of at most ``limit`` UTF-8 bytes (never half a character).

    Example:
        >>> utf8_prefix("naïve", 3)
        'na'
    """
    if len(text) <= limit // 4:
        return text
    if text.isascii():
        return text[:limit]
    return text[: limit + 1].encode("utf-8", "surrogatepass")[:limit].decode("utf-8", "ignore")


def _pointer_token(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def cut_value(value: Any, limit: int, path: str, cuts: list[dict[str, Any]]) -> Any:
    """``value`` with every string over ``limit`` UTF-8 bytes cut to that many; each cut is
    noted in ``cuts`` as ``{"field": <JSON pointer from path>, "bytes": <whole size>}``.
    Containers are copied only where something was cut.

    Example:
        >>> cuts = []
        >>> cut_value({"a": ["xxxxxx", "ok"]}, 4, "/payload", cuts), cuts
        ({'a': ['xxxx', 'ok']}, [{'field': '/payload/a/0', 'bytes': 6}])
    """
    if isinstance(value, str):
        if len(value) * 4 <= limit:
            return value
        size = utf8_size(value)
        if size <= limit:
            return value
        cuts.append({"field": path, "bytes": size})
        return utf8_prefix(value, limit)
    if isinstance(value, dict):
        out: dict[str, Any] | None = None
        for k, v in value.items():
            new = cut_value(v, limit, f"{path}/{_pointer_token(str(k))}", cuts)
            if new is not v:
                if out is None:
                    out = dict(value)
                out[k] = new
        return value if out is None else out
    if isinstance(value, list):
        items: list[Any] | None = None
        for i, v in enumerate(value):
            new = cut_value(v, limit, f"{path}/{i}", cuts)
            if new is not v:
                if items is None:
                    items = list(value)
                items[i] = new
        return value if items is None else items
    return value


def cut_record(
    rec: EventRecord, limit: int, *, raw_size: int | None = None, include_raw: bool = False
) -> EventRecord:
    """``rec`` with its fields over ``limit`` bytes cut (``truncated`` says which and how long).

    ``raw_size`` is the whole line's length when ``rec.raw`` was already read cut;
    ``include_raw`` rebuilds (then cuts) a line stored as its data.

    Example:
        >>> r = cut_record(EventRecord(1, "c", None, 0, "agent", "assistant", None,
        ...                            {"text": "x" * 10}, "y" * 10), 4)
        >>> r.payload["text"], r.raw, [t["field"] for t in r.truncated]
        ('xxxx', 'yyyy', ['/payload/text', '/raw'])
    """
    rec = rec.restored(raw=rec.raw is not None or include_raw)
    hint = rec.size_hint
    if hint is not None and hint <= limit and (rec.raw is None or len(rec.raw) <= limit // 4):
        return rec  # nothing in it can be over the limit: no walk
    cuts: list[dict[str, Any]] = list(rec.truncated or ())
    payload = cut_value(rec.payload, limit, "/payload", cuts)
    raw = rec.raw
    if raw is not None:
        size = raw_size if raw_size is not None else utf8_size(raw) if len(raw) * 4 > limit else len(raw)
        if size > limit:
            cuts.append({"field": "/raw", "bytes": max(size, utf8_size(raw))})
            raw = utf8_prefix(raw, limit)
    if not cuts:
        return rec
    return EventRecord(
        rec.seq, rec.chat_id, rec.run_id, rec.ts_ms, rec.source, rec.type, rec.subtype, payload, raw, cuts
    )


def resolve_pointer(document: Any, pointer: str) -> Any:
    """The value at a JSON pointer (RFC 6901) in ``document``; ``KeyError`` if there is none.

    Example:
        >>> resolve_pointer({"payload": {"a/b": [0, "x"]}}, "/payload/a~1b/1")
        'x'
        >>> resolve_pointer(["x"], "/\u00b2")  # a digit to str.isdigit, not an array index
        Traceback (most recent call last):
        ...
        KeyError: '/²'
        >>> try:
        ...     resolve_pointer(["x"], "/" + "9" * 5000)  # more digits than int() takes
        ... except KeyError:
        ...     print("no such index")
        no such index
    """
    if pointer == "":
        return document
    if not pointer.startswith("/"):
        raise KeyError(pointer)
    node = document
    for token in pointer[1:].split("/"):
        key = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif (isinstance(node, list) and len(key) < 20 and key.isascii() and key.isdigit()
              and int(key) < len(node)):
            node = node[int(key)]
        else:
            raise KeyError(pointer)
    return node
