"""Writing the turn: stdout as bytes, one write (or, with ``split-writes``, many) per line,
nothing buffered — like the real CLI, whose output a client reads as it comes.

:class:`Writer` knows the three output formats (``stream-json`` writes every event; ``json``
only the ``result`` object, at the end; ``text`` only the final answer, at the end — 2026
behaviour) and the faults that act on the bytes: ``banner``, ``split-writes``, ``slow``,
``stderr-flood``.

Example:
    >>> import os
    >>> r, w = os.pipe()
    >>> writer = Writer("stream-json", SimSettings(), out_fd=w)
    >>> writer.emit({"type": "user", "message": {"role": "user", "content": []}, "session_id": "s"})
    >>> os.close(w); os.read(r, 100)
    b'{"type":"user","message":{"role":"user","content":[]},"session_id":"s"}\\n'
"""

from __future__ import annotations

import os
import time
from typing import Any

from . import node_text, wire
from .messages import BOLD, RESET, YELLOW
from .node_text import node_bytes
from .settings import Fault, SimSettings

STDERR_FLOOD_BYTES = 10 * 1024 * 1024
_FLOOD_STEP = 1024 * 1024
_SPLIT_SIZES = (1, 2, 3, 5, 7, 11, 4, 6)

BANNER_LINES = (
    f"{BOLD}Cursor Agent{RESET} v2026.09.15 {YELLOW}(simulated){RESET}",
    f"{YELLOW}⚠ A newer version is available: run `agent update`.{RESET}",
)
BANNER_AMONG = f"\x1b[2K\r{YELLOW}Warning:{RESET} slow network detected, retrying…"


def write_all(fd: int, data: bytes) -> None:
    """``os.write`` until every byte is written (pipes may take fewer).

    Example:
        >>> import os
        >>> r, w = os.pipe(); write_all(w, b"hi"); os.read(r, 2)
        b'hi'
    """
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


class Writer:
    """Writes events to stdout in the chosen format, applying the byte-level faults.

    ``emit`` takes a wire object; ``checked=False`` writes it as it is (replayed lines).

    Example:
        >>> import os
        >>> r, w = os.pipe()
        >>> writer = Writer("json", SimSettings(), out_fd=w)
        >>> writer.emit({"type": "thinking", "subtype": "completed", "session_id": "s", "timestamp_ms": 1})
        >>> writer.emit({"type": "result", "subtype": "success", "result": "ok", "session_id": "s"})
        >>> os.close(w); os.read(r, 200)
        b'{"type":"result","subtype":"success","result":"ok","session_id":"s"}\\n'
    """

    def __init__(
        self, output_format: str, settings: SimSettings, *, out_fd: int = 1, err_fd: int = 2
    ) -> None:
        self.output_format = output_format
        self.settings = settings
        self.out_fd = out_fd
        self.err_fd = err_fd
        self.lines = 0
        self.result: dict[str, Any] | None = None
        self._flood_left = STDERR_FLOOD_BYTES if settings.has(Fault.STDERR_FLOOD) else 0
        self._flood_line = 0
        self._banner = settings.has(Fault.BANNER)
        if self._banner:
            for line in BANNER_LINES:
                self._write((line + "\n").encode())

    # ---- bytes -----------------------------------------------------------------------------

    def _write(self, data: bytes) -> None:
        if not self.settings.has(Fault.SPLIT_WRITES):
            write_all(self.out_fd, data)
            return
        for chunk in split_chunks(data):
            write_all(self.out_fd, chunk)
            time.sleep(0.001)

    def stderr(self, text: str) -> None:
        """Write ``text`` and a newline to stderr."""
        write_all(self.err_fd, node_bytes(text + "\n"))

    def _flood(self, amount: int) -> None:
        amount = min(amount, self._flood_left)
        while amount > 0:
            line = f"[cursor-agent-sim] stderr-flood {self._flood_line:08d} " + "x" * 80 + "\n"
            n = min(amount, 64 * 1024)
            write_all(self.err_fd, (line.encode() * (n // len(line) + 1))[:n])
            amount -= n
            self._flood_left -= n
            self._flood_line += 1

    # ---- events ----------------------------------------------------------------------------

    def raw(self, text: str) -> None:
        """A non-JSON line on stdout (a banner, a replayed raw line)."""
        self._write((text + "\n").encode("utf-8", "surrogateescape"))

    def emit(self, obj: dict[str, Any], *, checked: bool = True) -> None:
        """Write one event (stream-json), or keep it for the end (json, text)."""
        if self.settings.has(Fault.SLOW):
            time.sleep(self.settings.delay_for(Fault.SLOW))
        is_result = obj.get("type") == "result"
        if is_result:
            self._flood(self._flood_left)
        elif self._flood_left:
            self._flood(_FLOOD_STEP)
        line = wire.encode(obj, checked=checked)
        if is_result and self.result is None:
            self.result = obj
        if self.output_format == "stream-json":
            self._write(line)
        elif is_result and self.result is obj:
            if self.output_format == "json":
                self._write(line)
            else:
                text = obj.get("result")
                self._write(node_bytes((text if isinstance(text, str) else "") + "\n"))
        self.lines += 1
        if self._banner and self.lines == 2:
            self._write((BANNER_AMONG + "\n").encode())


def split_chunks(data: bytes) -> list[bytes]:
    """Cut a line into small pieces for ``split-writes``: sizes cycle through 1-11 bytes
    (at most about 64 pieces per line), and the first multi-byte UTF-8 character is always
    cut in two.

    Example:
        >>> chunks = split_chunks("a é b".encode())
        >>> b"".join(chunks) == "a é b".encode(), any(c.endswith(b"\\xc3") for c in chunks)
        (True, True)
    """
    cuts: set[int] = set()
    for i, byte in enumerate(data):
        if byte >= 0xC0:  # a lead byte: cut right after it
            cuts.add(i + 1)
            break
    floor = max(1, len(data) // 64)
    pos, k = 0, 0
    while pos < len(data):
        pos += max(floor, _SPLIT_SIZES[k % len(_SPLIT_SIZES)])
        k += 1
        if pos < len(data):
            cuts.add(pos)
    out: list[bytes] = []
    start = 0
    for cut in sorted(cuts):
        if 0 < cut < len(data):
            out.append(data[start:cut])
            start = cut
    out.append(data[start:])
    return [c for c in out if c]


def dumps(obj: Any) -> bytes:
    """``orjson.dumps`` (for the few plain JSON lines the simulator prints), undecodable bytes
    as U+FFFD (:mod:`.node_text`).

    Example:
        >>> dumps({"a": 1})
        b'{"a":1}'
    """
    return node_text.dumps(obj)
