"""Framing: bytes as they arrive from the agent's stdout -> complete lines.

Sans-I/O: no processes, sockets or threads. Feed chunks of any size; get back
complete lines (``bytes``, without the ``\\n`` and without a trailing ``\\r``)
and, for a line past the size limit, a :class:`LineTooLong` marker. Lines are
split on ``\\n`` only, so a UTF-8 character split across chunks is never cut:
decoding happens per whole line, later. Blank lines are skipped.

What does *not* live here: JSON, event types (see :mod:`.events`).

Example:
    >>> framer = LineFramer()
    >>> framer.feed(b'{"a": 1}\\n{"b"')
    [b'{"a": 1}']
    >>> framer.feed(b': 2}\\r\\n\\n')
    [b'{"b": 2}']
    >>> framer.close()
    []
"""

from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
"""Default limit for one line: 64 MiB. Real lines reach several megabytes
(whole files in read and edit results, MCP schemas)."""

HEAD_BYTES = 4096
"""How much of an over-long line is kept (:attr:`LineTooLong.head`): enough for a JSON-RPC
frame's ``"jsonrpc"``, ``"id"`` and ``"method"``, which the agent writes before ``"params"``."""


@dataclass(frozen=True, slots=True)
class LineTooLong:
    """A line longer than the limit: its bytes were dropped as they arrived.

    ``size`` is the number of bytes the line had (without its newline);
    ``limit`` the limit in force; ``head`` its first bytes (at most :data:`HEAD_BYTES`, and
    never more than ``limit``), enough to read the ``id`` of a request that must be answered.

    Example:
        >>> LineTooLong(size=10, limit=4).size
        10
    """

    size: int
    limit: int
    head: bytes = field(default=b"", repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class Tail:
    """The unfinished last line at end of input (no ``\\n`` came after it).

    Example:
        >>> Tail(b'{"type": "res').data
        b'{"type": "res'
    """

    data: bytes


Frame = bytes | LineTooLong | Tail
"""What the framer yields: a complete line, an over-long line's marker, or the tail."""


def _is_blank(line: bytes) -> bool:
    return not line or line.isspace()


class LineFramer:
    """Split a byte stream into lines, with bounded memory.

    ``max_line_bytes`` bounds one line. Past it, the line's bytes are dropped as
    they arrive (memory stays bounded) and, once its newline comes, a
    :class:`LineTooLong` marker takes its place; the stream goes on.

    Example:
        >>> f = LineFramer(max_line_bytes=4)
        >>> f.feed(b"abcdefgh")
        []
        >>> f.feed(b"ij\\nok\\n")
        [LineTooLong(size=10, limit=4), b'ok']
    """

    __slots__ = ("_buf", "_dropped", "_dropping", "_head", "max_line_bytes")

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be at least 1")
        self.max_line_bytes = max_line_bytes
        self._buf = bytearray()
        self._dropping = False
        self._dropped = 0
        self._head = b""

    def feed(self, data: bytes) -> list[Frame]:
        """Take one chunk; return the frames it completes, in order.

        ``data`` is bytes, as read from a pipe: a ``str`` is a ``TypeError`` (checked once
        per call, not per line), and changes nothing.

        Example:
            >>> LineFramer().feed("{}\\n")  # doctest: +ELLIPSIS
            Traceback (most recent call last):
            ...
            TypeError: feed() takes bytes (...), got str: pass text.encode()
        """
        if isinstance(data, str):
            raise TypeError("feed() takes bytes (the agent's output as read from its pipe), "
                            "got str: pass text.encode()")
        out: list[Frame] = []
        if not data:
            return out
        limit = self.max_line_bytes
        if self._dropping:
            nl = data.find(b"\n")
            if nl < 0:
                self._dropped += len(data)
                return out
            self._dropped += nl
            out.append(LineTooLong(self._dropped, limit, self._head))
            self._dropping = False
            self._dropped = 0
            self._head = b""
            data = data[nl + 1 :]
            if not data:
                return out
        parts = data.split(b"\n")
        tail = parts.pop()
        if parts:
            if self._buf:
                self._buf += parts[0]
                parts[0] = bytes(self._buf)
                self._buf.clear()
            append = out.append
            for line in parts:
                if not line:
                    continue
                if len(line) > limit:
                    append(LineTooLong(len(line), limit, line[:min(limit, HEAD_BYTES)]))
                    continue
                if line[-1] == 13:  # \r of a \r\n
                    line = line[:-1]
                    if not line:
                        continue
                if line[0] == 123 or not line.isspace():  # 123 = "{": the usual case
                    append(line)
        if tail:
            if len(self._buf) + len(tail) > limit:
                self._dropping = True
                self._dropped = len(self._buf) + len(tail)
                keep = min(limit, HEAD_BYTES)
                self._head = bytes(self._buf[:keep]) + tail[:max(0, keep - len(self._buf))]
                self._buf.clear()
            else:
                self._buf += tail
        return out

    def close(self) -> list[Frame]:
        """End of input: return the unfinished tail (if any) as a :class:`Tail`."""
        out: list[Frame] = []
        if self._dropping:
            out.append(LineTooLong(self._dropped, self.max_line_bytes, self._head))
            self._dropping = False
            self._dropped = 0
            self._head = b""
        elif self._buf:
            data = bytes(self._buf)
            self._buf.clear()
            if data[-1:] == b"\r":
                data = data[:-1]
            if not _is_blank(data):
                out.append(Tail(data))
        return out

    @property
    def buffered(self) -> int:
        """Bytes held for the line in progress (0 while a too-long line is dropped)."""
        return len(self._buf)
