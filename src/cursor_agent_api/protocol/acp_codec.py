"""The ACP codec, sans-I/O: JSON-RPC 2.0 messages over ``agent acp``'s stdio, one per line.

Bytes from the agent's stdout -> :class:`RpcRequest` (the agent asks the client:
``session/request_permission``, ``cursor/ask_question``…), :class:`RpcNotification`
(``session/update``), :class:`RpcResponse` (the answer to one of our requests) or
:class:`RpcNoise` (a line that is not a JSON-RPC message: a banner, a log line, a line over
the size bound). Lines are split by :class:`~.framing.LineFramer` with its bounds; nesting
is bounded by :data:`~.limits.MAX_JSON_DEPTH`. :class:`AcpEncoder` builds the client's
frames, numbering its requests from 1 (the agent numbers its own from 0, independently).

What does *not* live here: what the messages mean (:mod:`.acp_mapper`), processes.

Example:
    >>> dec = AcpDecoder()
    >>> response, noise = dec.feed(b'{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}\\nhi\\n')
    >>> response
    RpcResponse(id=1, result={'stopReason': 'end_turn'}, error=None)
    >>> noise
    RpcNoise(line=b'hi', reason='not JSON')
    >>> enc = AcpEncoder()
    >>> enc.request("session/cancel", {"sessionId": "s"})
    (1, b'{"jsonrpc":"2.0","id":1,"method":"session/cancel","params":{"sessionId":"s"}}\\n')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from .framing import DEFAULT_MAX_LINE_BYTES, HEAD_BYTES, LineFramer, LineTooLong, Tail
from .limits import SHORTEST_TOO_DEEP, exceeds_depth
from .surrogates import loads_repaired

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "AcpDecoder",
    "AcpEncoder",
    "RpcError",
    "RpcMessage",
    "RpcNoise",
    "RpcNotification",
    "RpcRequest",
    "RpcResponse",
    "decode_message",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

RequestId = int | str


@dataclass(frozen=True, slots=True)
class RpcError:
    """A JSON-RPC error object. ``data`` comes in three shapes on Cursor's builds
    (``{message}``, a Zod issue array, ``{details}``): :attr:`detail` reads each.

    Example:
        >>> RpcError(-32602, "Invalid params", {"message": "Session \\"x\\" not found"}).detail
        'Session "x" not found'
    """

    code: int
    message: str
    data: Any = None

    @property
    def detail(self) -> str:
        """The most specific text the error carries."""
        data = self.data
        if isinstance(data, dict):
            for key in ("message", "details"):
                if isinstance(data.get(key), str) and data[key]:
                    return str(data[key])
        if isinstance(data, list):
            parts = [str(i.get("message")) for i in data if isinstance(i, dict) and i.get("message")]
            if parts:
                return "; ".join(parts)
        if isinstance(data, str) and data:
            return data
        return self.message


@dataclass(frozen=True, slots=True)
class RpcRequest:
    """A request (it has an ``id``: it must be answered)."""

    id: RequestId
    method: str
    params: dict[str, Any]


@dataclass(frozen=True, slots=True)
class RpcNotification:
    """A notification (no ``id``: no answer)."""

    method: str
    params: dict[str, Any]


@dataclass(frozen=True, slots=True)
class RpcResponse:
    """The answer to a request: ``result`` or ``error``. ``id`` may be ``None`` (an error
    about a message the agent could not read)."""

    id: RequestId | None
    result: Any
    error: RpcError | None


@dataclass(frozen=True, slots=True)
class RpcNoise:
    """A line that is not a JSON-RPC message (kept for diagnostics), or one the codec cannot
    decode: nested too deeply, over the line's size bound, not JSON.

    Such a line may still be a request the agent waits on: when its ``id`` and ``method`` can
    be read (from the decoded object, or from the first bytes of a line too long or not JSON:
    see :func:`head_request`), :attr:`request_id` and :attr:`method` say so, and :attr:`code`
    is the JSON-RPC error to answer it with (``-32600`` for a request nested too deeply,
    ``-32700`` for one that could not be parsed).

    Example:
        >>> noise = decode_message('{"id":3,"method":"m","params":' + '[' * 300 + ']' * 300 + '}')
        >>> noise.reason, noise.request_id, noise.method, noise.code
        ('nested too deeply', 3, 'm', -32600)
    """

    line: bytes
    reason: str
    request_id: RequestId | None = field(default=None, repr=False, compare=False)
    method: str | None = field(default=None, repr=False, compare=False)
    code: int = field(default=PARSE_ERROR, repr=False, compare=False)


RpcMessage = RpcRequest | RpcNotification | RpcResponse | RpcNoise


def _request_id(value: Any) -> RequestId | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, str)):
        return value
    return None


_SPACE = b" \t\r\n"


def _skip_space(head: bytes, i: int) -> int:
    while i < len(head) and head[i] in _SPACE:
        i += 1
    return i


def _string_end(head: bytes, i: int) -> int:
    """The index past the string that opens at ``head[i]`` (a quote); -1 if it does not end."""
    i += 1
    while i < len(head):
        c = head[i]
        if c == 92:  # backslash: skip the escaped character
            i += 2
            continue
        if c == 34:
            return i + 1
        i += 1
    return -1


def _value_end(head: bytes, i: int) -> int:
    """The index past the JSON value at ``head[i]``; -1 if it does not end within ``head``."""
    if i >= len(head):
        return -1
    if head[i] == 34:
        return _string_end(head, i)
    depth = 0
    while i < len(head):
        c = head[i]
        if c == 34:
            i = _string_end(head, i)
            if i < 0:
                return -1
            continue
        if c in b"{[":
            depth += 1
        elif c in b"}]":
            if depth == 0:
                return i
            depth -= 1
            if depth == 0:
                return i + 1
        elif c == 44 and depth == 0:  # a comma ends a scalar
            return i
        i += 1
    return -1


def _loads(value: bytes) -> Any:
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:
        return loads_repaired(value)


def head_request(head: bytes) -> tuple[RequestId | None, str | None]:
    """The ``id`` and ``method`` of a request read from the first bytes of a line that cannot
    be decoded whole (too long, or not JSON past its start): the top-level members are read in
    order, each value skipped, up to the first one that does not end within ``head``. A member
    written after such a value (``"id"`` after a huge ``"params"``) cannot be read this way.

    Example:
        >>> head_request(b'{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"a":"xx')
        (7, 'session/request_permission')
        >>> head_request(b'{"jsonrpc":"2.0","params":{"id":7,"method":"m","a":"xx')
        (None, None)
    """
    found: dict[str, Any] = {}
    i = _skip_space(head, 0)
    if head[i:i + 1] != b"{":
        return None, None
    i += 1
    while len(found) < 2:
        i = _skip_space(head, i)
        end = _string_end(head, i) if head[i:i + 1] == b'"' else -1
        if end < 0:
            break
        key = _loads(head[i:end])
        i = _skip_space(head, end)
        if head[i:i + 1] != b":":
            break
        i = _skip_space(head, i + 1)
        end = _value_end(head, i)
        if end < 0:
            break
        if key in ("id", "method"):
            found[str(key)] = _loads(head[i:end])
        i = _skip_space(head, end)
        if head[i:i + 1] != b",":
            break
        i += 1
    method = found.get("method")
    rid = _request_id(found.get("id"))
    if not isinstance(method, str) or rid is None:
        return None, None
    return rid, method


def _unreadable(raw: bytes, reason: str, head: bytes) -> RpcNoise:
    rid, method = head_request(head)
    return RpcNoise(raw, reason, rid, method)


def decode_message(line: bytes | str) -> RpcMessage:
    """One line -> one message. Never raises.

    Example:
        >>> decode_message('{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s"}}')
        RpcNotification(method='session/update', params={'sessionId': 's'})
        >>> decode_message('{"jsonrpc":"2.0","id":0,"error":{"code":-32601,"message":"nope"}}').error.code
        -32601
        >>> decode_message('[1]').reason
        'not a JSON-RPC message'
    """
    raw = line.encode("utf-8", "replace") if isinstance(line, str) else line
    try:
        data = orjson.loads(raw)
    except (orjson.JSONDecodeError, ValueError):
        data = loads_repaired(raw)  # not UTF-8, or Node's lone "\\ud83d" (see .surrogates)
        if data is None:
            return _unreadable(raw, "not JSON", raw[:HEAD_BYTES])
    if not isinstance(data, dict):
        return RpcNoise(raw, "not a JSON-RPC message")
    method = data.get("method")
    if len(raw) >= SHORTEST_TOO_DEEP and exceeds_depth(data, raw):
        rid = _request_id(data.get("id")) if isinstance(method, str) else None
        return RpcNoise(raw, "nested too deeply", rid, method if rid is not None else None,
                        INVALID_REQUEST)
    params = data.get("params")
    if not isinstance(params, dict):
        params = {}
    if isinstance(method, str):
        if "id" in data and data["id"] is not None:
            rid = _request_id(data["id"])
            if rid is None:
                return RpcNoise(raw, "a request with an invalid id")
            return RpcRequest(rid, method, params)
        return RpcNotification(method, params)
    if "result" in data or "error" in data:
        rid = _request_id(data.get("id"))
        err = data.get("error")
        error: RpcError | None = None
        if err is not None:
            if isinstance(err, dict):
                code = err.get("code")
                msg = err.get("message")
                error = RpcError(code if isinstance(code, int) and not isinstance(code, bool) else -32603,
                                 msg if isinstance(msg, str) else "error", err.get("data"))
            else:
                error = RpcError(-32603, str(err))
        return RpcResponse(rid, data.get("result"), error)
    return RpcNoise(raw, "not a JSON-RPC message")


class AcpDecoder:
    """Bytes as they arrive -> messages, with :class:`~.framing.LineFramer`'s bounds.

    Example:
        >>> d = AcpDecoder(max_line_bytes=8)
        >>> d.feed(b'x' * 20 + b'\\n')
        [RpcNoise(line=b'', reason='line of 20 bytes over the 8-byte limit')]
    """

    __slots__ = ("_framer",)

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self._framer = LineFramer(max_line_bytes)

    def _decode(self, frames: list[bytes | LineTooLong | Tail]) -> list[RpcMessage]:
        out: list[RpcMessage] = []
        for frame in frames:
            if isinstance(frame, LineTooLong):
                out.append(_unreadable(b"", f"line of {frame.size} bytes over the "
                                            f"{frame.limit}-byte limit", frame.head))
            elif isinstance(frame, Tail):
                out.append(decode_message(frame.data))
            else:
                out.append(decode_message(frame))
        return out

    def feed(self, data: bytes) -> list[RpcMessage]:
        """Take one chunk; the messages it completes, in order."""
        return self._decode(self._framer.feed(data))

    def close(self) -> list[RpcMessage]:
        """End of input: the unfinished last line, if any."""
        return self._decode(self._framer.close())


def _frame(obj: dict[str, Any]) -> bytes:
    return orjson.dumps(obj) + b"\n"


class AcpEncoder:
    """The client's frames, one line each; requests numbered 1, 2, 3…

    Example:
        >>> enc = AcpEncoder()
        >>> enc.result(0, {"outcome": {"outcome": "cancelled"}})
        b'{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}\\n'
        >>> enc.error(3, -32601, "Method not found: x/y")
        b'{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"Method not found: x/y"}}\\n'
    """

    __slots__ = ("_next",)

    def __init__(self, first_id: int = 1) -> None:
        self._next = first_id

    def request(self, method: str, params: dict[str, Any]) -> tuple[int, bytes]:
        """A request frame and its id."""
        rid = self._next
        self._next += 1
        return rid, _frame({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})

    @staticmethod
    def notification(method: str, params: dict[str, Any]) -> bytes:
        """A notification frame (no id)."""
        return _frame({"jsonrpc": "2.0", "method": method, "params": params})

    @staticmethod
    def result(rid: RequestId, result: Any) -> bytes:
        """The answer to one of the agent's requests."""
        return _frame({"jsonrpc": "2.0", "id": rid, "result": result})

    @staticmethod
    def error(rid: RequestId, code: int, message: str, data: Any = None) -> bytes:
        """An error answer to one of the agent's requests."""
        err: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            err["data"] = data
        return _frame({"jsonrpc": "2.0", "id": rid, "error": err})
