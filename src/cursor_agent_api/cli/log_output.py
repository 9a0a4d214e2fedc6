"""Log lines written by a thread of their own: output nobody reads never stops the event loop.

``serve`` and ``worker`` log from their event loop. A plain ``logging.StreamHandler`` writes
each line there, so once stderr is a pipe nobody reads (``serve | less`` with less paused, a
supervisor whose log reader stalls) and the pipe's buffer (64 KiB) is full, the write blocks
the loop, and every request and run with it. Here the loop only formats the line (filters
and formatters run where the record was made) and queues it; :class:`LogLines`'s thread
writes the queue out. The queue is bounded (:data:`MAX_PENDING` characters): a line that does
not fit is dropped and counted, and where lines were dropped one line says how many, once the
output flows again. Only log lines are dropped: what the server stores never waits on them.

Example:
    >>> import io, logging
    >>> out = io.StringIO()
    >>> lines = LogLines(out, max_pending=14)  # not started: a stalled reader, as it were
    >>> log = logging.getLogger("log_output.example")
    >>> log.propagate = False
    >>> log.addHandler(lines.handler())
    >>> for i in range(4):
    ...     log.warning("line %d", i)  # 7 characters each: two fit
    >>> lines.start()
    >>> lines.close()  # what is queued is written; then the thread ends
    >>> log.warning("line 4")  # closed: written at once
    >>> print(out.getvalue(), end="")
    line 0
    line 1
    2 log lines dropped here: the log output was not read
    line 4
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import threading
from collections import deque
from typing import TextIO

__all__ = ["MAX_PENDING", "LogLineHandler", "LogLines"]

MAX_PENDING = 1024 * 1024
"""Characters of log lines waiting to be written, at most (beyond: dropped, and counted)."""
CLOSE_TIMEOUT = 5.0
"""Seconds :meth:`LogLines.close` waits for the lines still queued to be written."""


class _Dropped:
    """Where lines were dropped in the queue, and how many."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 1

    def line(self) -> str:
        s = "" if self.count == 1 else "s"
        return f"{self.count} log line{s} dropped here: the log output was not read\n"


class LogLines:
    """A bounded queue of lines for one stream, written out by a daemon thread.

    :meth:`put` never blocks. The thread writes to the stream's file descriptor when it has
    one (not through the stream's buffer: a write stuck in a pipe nobody reads then holds no
    lock the interpreter's exit needs), else to the stream. A stream that fails (a closed
    pipe) ends the writing; what comes later is dropped. Tested in ``tests/cli/test_unread_output.py``.
    """

    def __init__(self, stream: TextIO, max_pending: int = MAX_PENDING) -> None:
        self.stream = stream
        self.max_pending = max_pending
        self._queue: deque[str | _Dropped] = deque()
        self._pending = 0  # characters of the lines queued or being written
        self._cond = threading.Condition(threading.Lock())
        self._thread: threading.Thread | None = None
        self._closing = False
        self._broken = False  # the stream failed: nothing more is written
        self._stuck = False  # closed while the thread was still writing
        self._done = False  # the thread has written its last line
        try:
            self._fd: int | None = stream.fileno()
        except (AttributeError, OSError, ValueError):  # io.StringIO, a test's capture
            self._fd = None
        self._encoding = getattr(stream, "encoding", None) or "utf-8"

    def handler(self) -> LogLineHandler:
        """A logging handler whose lines go to this queue (its formatter and filters are
        set as any handler's)."""
        return LogLineHandler(self)

    def start(self) -> None:
        """Start the writing thread (once)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._write_all, name="log-lines", daemon=True)
            self._thread.start()

    def put(self, line: str) -> None:
        """Queue ``line`` (its end of line included), or count it as dropped; never blocks.
        Once closed, it is written at once (the writer had finished), or dropped (it had not)."""
        with self._cond:
            if self._broken or self._stuck:
                return
            closed = self._closing and (self._thread is None or self._done)
            if not closed:
                if self._pending and self._pending + len(line) > self.max_pending:
                    last = self._queue[-1] if self._queue else None
                    if isinstance(last, _Dropped):
                        last.count += 1
                    else:
                        self._queue.append(_Dropped())
                    return
                self._queue.append(line)
                self._pending += len(line)
                self._cond.notify()
        if closed:
            self._write(line)

    def close(self, timeout: float = CLOSE_TIMEOUT) -> None:
        """Write what is queued (waiting ``timeout`` seconds at most for a stalled reader),
        then stop the thread. Lines put later are written at once."""
        with self._cond:
            self._closing = True
            self._cond.notify()
        thread = self._thread
        if thread is None:
            with self._cond:
                text, lines = self._take()
            self._write(text)
            self._written(lines)
            return
        thread.join(timeout)
        if thread.is_alive():
            with self._cond:
                self._stuck = True

    def _take(self) -> tuple[str, int]:
        """Everything queued, as one text (with the lines on drops), and the characters of
        its lines; the queue is emptied. They still count as pending until :meth:`_written`
        (the bound holds the lines being written too)."""
        lines = sum(len(item) for item in self._queue if isinstance(item, str))
        text = "".join(item if isinstance(item, str) else item.line() for item in self._queue)
        self._queue.clear()
        return text, lines

    def _written(self, lines: int) -> None:
        with self._cond:
            self._pending -= lines

    def _write_all(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closing:
                    self._cond.wait()
                if not self._queue:
                    self._done = True
                    return
                text, lines = self._take()
            if not self._write(text):
                return
            self._written(lines)

    def _write(self, text: str) -> bool:
        """Write ``text`` (blocking: off the loop); False once the stream has failed."""
        if not text or self._broken:
            return not self._broken
        try:
            if self._fd is None:
                self.stream.write(text)
                self.stream.flush()
                return True
            data = text.encode(self._encoding, "backslashreplace")
            while data:
                try:
                    data = data[os.write(self._fd, data):]
                except BlockingIOError:  # a descriptor someone made non-blocking
                    select.select([], [self._fd], [])
        except (OSError, ValueError):  # a closed pipe, a closed stream: nothing more is written
            with self._cond:
                self._broken = self._done = True
                self._queue.clear()
            return False
        return True


class LogLineHandler(logging.Handler):
    """A handler that formats each record where it was made and queues the line in a
    :class:`LogLines` (the formatter of ``logging.config`` and the filters apply as usual)."""

    terminator = "\n"

    def __init__(self, lines: LogLines) -> None:
        super().__init__()
        self.lines = lines

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record) + self.terminator
        except Exception:  # as every handler: a record that cannot be formatted is said so
            self.handleError(record)
            return
        self.lines.put(line)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.lines.close()
        super().close()
