"""Text as the real CLI (a Node program) shows it: bytes that are not UTF-8 become U+FFFD.

Python hands the simulator undecodable bytes of ``argv`` and of file names as lone
surrogates (``surrogateescape``); orjson refuses them, and they cannot be encoded as UTF-8.
Node decodes the same bytes with replacement (``process.argv``, ``fs.readdir``), so the
real CLI writes ``U+FFFD`` where a name had a byte that is not UTF-8. Everything the
simulator writes (stdout, stderr, the chat store) goes through here. The simulator still
works on the real paths: only what it shows is replaced.

Example:
    >>> name = b"caf\\xe9.txt".decode("utf-8", "surrogateescape")
    >>> node_str(name)
    'caf�.txt'
    >>> dumps({"files": [name]}).decode()
    '{"files":["caf�.txt"]}'
"""

from __future__ import annotations

import re
from typing import Any

import orjson

__all__ = ["dumps", "node_bytes", "node_json", "node_str"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def node_str(text: str) -> str:
    """``text`` with each undecodable byte (a lone surrogate) as U+FFFD, as Node decodes it.

    Example:
        >>> node_str("ok"), node_str("a\\udce9b"), node_str("\\ud800\\udce9")
        ('ok', 'a�b', '��')
    """
    if text.isascii():
        return text
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:  # a lone surrogate that is no escaped byte (JSON's "\ud800")
        return _SURROGATE.sub("\ufffd", text)


def node_bytes(text: str) -> bytes:
    """``text`` as UTF-8 bytes, each undecodable byte written as U+FFFD.

    Example:
        >>> node_bytes("caf\\udce9")
        b'caf\\xef\\xbf\\xbd'
    """
    try:
        return text.encode()
    except UnicodeEncodeError:
        return node_str(text).encode()


def node_json(obj: Any) -> Any:
    """``obj`` (JSON data: dicts, lists, strings…) with every string passed through
    :func:`node_str`, keys too.

    Example:
        >>> node_json({"a\\udce9": ["x\\udce9", 1]})
        {'a�': ['x�', 1]}
    """
    if isinstance(obj, str):
        return node_str(obj)
    if isinstance(obj, dict):
        return {node_json(k): node_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [node_json(v) for v in obj]
    return obj


def dumps(obj: Any) -> bytes:
    """``orjson.dumps(obj)``; when a string in it holds undecodable bytes, they are written
    as U+FFFD (the plain path costs nothing more).

    Example:
        >>> dumps({"a": 1}), dumps(["\\udce9"])
        (b'{"a":1}', b'["\\xef\\xbf\\xbd"]')
    """
    try:
        return orjson.dumps(obj)
    except orjson.JSONEncodeError:
        return orjson.dumps(node_json(obj))
