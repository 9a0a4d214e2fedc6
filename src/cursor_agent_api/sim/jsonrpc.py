"""JSON-RPC 2.0 over stdio, one message per line, as ``agent acp`` speaks it (ACP.md §1):
the simulator's side of the pipe.

A reader thread turns stdin's lines into messages on a queue (a malformed line gets no
answer, as on the real builds; a line over :data:`MAX_LINE_BYTES` is dropped); the main
thread takes them with :meth:`Connection.next` and writes frames with :meth:`Connection.send`.
The agent's own requests are numbered from 0 (:meth:`Connection.request`); their answers come
back through :meth:`Connection.next` like everything else and are matched by the caller.

Hand-written rather than taken from a library: the ACP SDK's router does not reach
``cursor/*`` methods and the simulator needs byte-level control (noise, slow frames).

Example:
    >>> import os
    >>> r, w = os.pipe()
    >>> conn = Connection(in_fd=None, out_fd=w)
    >>> conn.result(1, {})
    >>> os.close(w); os.read(r, 100)
    b'{"jsonrpc":"2.0","id":1,"result":{}}\\n'
"""

from __future__ import annotations

import os
import queue
import threading
from dataclasses import dataclass
from typing import Any

import orjson

from . import node_text
from .writer import write_all

MAX_LINE_BYTES = 16 * 1024 * 1024

METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
AUTH_REQUIRED = -32000


@dataclass(frozen=True, slots=True)
class Message:
    """One incoming message. ``kind`` is ``request``, ``notification`` or ``response``.

    Example:
        >>> Message.parse(b'{"jsonrpc":"2.0","id":3,"method":"initialize","params":{}}').kind
        'request'
        >>> Message.parse(b'not json') is None
        True
    """

    kind: str
    id: Any = None
    method: str = ""
    params: Any = None
    result: Any = None
    error: Any = None

    @classmethod
    def parse(cls, line: bytes) -> Message | None:
        """A message, or ``None`` for a line that is not a JSON-RPC object."""
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(obj, dict):
            return None
        method = obj.get("method")
        if isinstance(method, str):
            if "id" in obj:
                return cls("request", obj["id"], method, obj.get("params"))
            return cls("notification", None, method, obj.get("params"))
        if "id" in obj and ("result" in obj or "error" in obj):
            return cls("response", obj["id"], result=obj.get("result"), error=obj.get("error"))
        return None


class Connection:
    """The stdio pipe: a reader thread for stdin, frames to stdout.

    ``before_write`` runs before every frame (the ``slow`` fault); ``after_write(n)`` after
    the ``n``-th (the ``banner`` fault's noise).
    """

    def __init__(self, *, in_fd: int | None = 0, out_fd: int = 1) -> None:
        self.out_fd = out_fd
        self.frames = 0
        self._next_id = 0
        self._queue: queue.Queue[Message | None] = queue.Queue()
        self.eof = False
        self.before_write: Any = None
        self.after_write: Any = None
        if in_fd is not None:
            threading.Thread(target=self._read, args=(in_fd,), daemon=True, name="acp-stdin").start()

    def _read(self, fd: int) -> None:
        pending = b""
        while True:
            try:
                chunk = os.read(fd, 65536)  # what has arrived: a buffered read would wait for more
            except OSError:
                chunk = b""
            if not chunk:
                break
            pending += chunk
            while True:
                nl = pending.find(b"\n")
                if nl < 0:
                    if len(pending) > MAX_LINE_BYTES:
                        pending = b""  # an endless line: dropped, like a malformed one
                    break
                line, pending = pending[:nl], pending[nl + 1 :]
                if line.strip() and len(line) <= MAX_LINE_BYTES:
                    message = Message.parse(line)
                    if message is not None:
                        self._queue.put(message)
        if pending.strip():
            message = Message.parse(pending)
            if message is not None:
                self._queue.put(message)
        self._queue.put(None)

    def next(self, timeout: float | None = None) -> Message | None:
        """The next message; ``None`` at EOF (then :attr:`eof` is set) or on ``timeout``."""
        if self.eof:
            return None
        try:
            message = self._queue.get(timeout=timeout)
        except queue.Empty:
            return None
        if message is None:
            self.eof = True
        return message

    def poll(self) -> Message | None:
        """The next message if one is waiting, else ``None`` at once."""
        return self.next(timeout=0) if not self._queue.empty() else None

    # ---- writing ------------------------------------------------------------------------------

    def send(self, frame: dict[str, Any]) -> None:
        """Write one frame as one line."""
        if self.before_write is not None:
            self.before_write()
        write_all(self.out_fd, node_text.dumps(frame) + b"\n")  # U+FFFD for undecodable bytes
        self.frames += 1
        if self.after_write is not None:
            self.after_write(self.frames)

    def raw(self, text: str) -> None:
        """Write a line that is not JSON (noise)."""
        write_all(self.out_fd, node_text.node_bytes(text + "\n"))

    def result(self, request_id: Any, result: Any) -> None:
        """Answer a request."""
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def error(self, request_id: Any, code: int, message: str, data: Any = None) -> None:
        """Answer a request with an error (``data`` omitted when ``None``)."""
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self.send({"jsonrpc": "2.0", "id": request_id, "error": error})

    def notify(self, method: str, params: dict[str, Any]) -> None:
        """Send a notification."""
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: dict[str, Any]) -> int:
        """Send a request of the agent's own (ids from 0); return its id."""
        request_id = self._next_id
        self._next_id += 1
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return request_id
