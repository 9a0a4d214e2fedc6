"""Bounds on connections, for ``serve``: unfinished requests time out, their number is capped,
the open-file limit is raised, and a lack of file descriptors is said in one line.

What uvicorn gives, and what it does not (uvicorn 0.54, ``protocols/http/httptools_impl.py``):
``timeout_keep_alive`` closes a connection idle *between* requests only (its timer is armed
when a response ends, and disarmed by any byte received); nothing times a request whose
headers or body never end, so a client that sends half a request holds its connection (and
a file descriptor) forever. ``limit_concurrency`` answers 503 only once a request's headers
are complete: a connection that never completes them is not counted against anything. So
:class:`GuardedHttp` (uvicorn's httptools protocol, which ``serve`` uses, and a few lines
more) adds:

* **a request timeout**: a request's headers must arrive within ``head_timeout`` seconds of
  its first byte (or of the connection's opening), and its body may not stop arriving for
  ``body_timeout`` seconds; else the connection is closed (with a ``408`` while no answer is
  under way; a pipelined request waiting behind another's answer is not timed out meanwhile);
* **a cap on connections**: past ``max_connections`` open ones (HTTP and WebSocket alike), a
  new connection is answered ``503`` (``too_many_connections``) and closed at once.

:func:`serving_limits` (called once by ``serve``) also raises the soft open-file limit to the
hard one (what servers usually do: the soft limit of a login shell or a systemd unit, 1024,
is a default for programs that do not know better) and sets the cap below it, and puts
:class:`AcceptErrors` on the ``asyncio`` logger: Python's loop logs, when ``accept()`` fails
for want of file descriptors, one traceback per slot of the listen backlog, every second
(thousands a second); that becomes one line at most every :data:`ACCEPT_ERROR_EVERY` seconds.

Example:
    >>> connection_cap(1024), connection_cap(1_048_576)
    (512, 1000)
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from collections.abc import Callable
from typing import Any

import orjson
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from .checks.headers import SECURITY_HEADERS

log = logging.getLogger(__name__)

HEAD_TIMEOUT = 10.0
"""Seconds for a request's headers to arrive (from its first byte, or the connection's opening)."""
BODY_TIMEOUT = 60.0
"""Seconds a request's body may stop arriving (from its headers, or its last bytes): a body that
keeps coming is never cut, whatever its size (``--max-body-bytes``)."""
MAX_CONNECTIONS = 1000
"""Open connections at most (fewer when the open-file limit is low: :func:`connection_cap`)."""
ACCEPT_ERROR_EVERY = 10.0
"""Seconds between two lines that say connections cannot be accepted or were refused."""

ACCEPT_ERROR = "socket.accept() out of system resource"
"""How asyncio's loop says ``accept()`` failed (EMFILE, ENFILE, ENOBUFS, ENOMEM)."""
RETRY_AFTER_CLOSE = "Exception in callback BaseSelectorEventLoop._start_serving"
"""How it says a retry of ``accept()`` (one is scheduled a second after each failure, and is not
cancelled when the server closes) found the listening socket closed: ``ValueError: Invalid file
descriptor: -1``, one traceback per retry still pending at shutdown."""


def connection_cap(open_files: int) -> int:
    """The connections to accept at most with a limit of ``open_files`` descriptors: half of
    them (the rest: the database, the agents' pipes, the logs), at most :data:`MAX_CONNECTIONS`."""
    return max(16, min(MAX_CONNECTIONS, open_files // 2))


def raise_open_file_limit() -> int:
    """Raise the soft ``RLIMIT_NOFILE`` to the hard limit; the soft limit now in force.

    Example:
        >>> raise_open_file_limit() == resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        True
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (OSError, ValueError) as exc:  # (a sandbox may refuse it: kept as it was)
            log.debug("the open-file limit stays %d: %s", soft, exc)
    return soft if soft != resource.RLIM_INFINITY else MAX_CONNECTIONS * 2


class Every:
    """Says whether a line is due (one per ``seconds``), counting the ones held back between.

    Example:
        >>> now = [0.0]
        >>> every = Every(10, clock=lambda: now[0])
        >>> every.due(), every.due(), every.due()
        (0, None, None)
        >>> now[0] = 10.0; every.due()  # (two held back since the last line)
        2
    """

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self.clock = clock
        self._last: float | None = None
        self._held = 0

    def due(self) -> int | None:
        """``None`` while a line is held back, else the number held back since the last."""
        now = self.clock()
        if self._last is not None and now - self._last < self.seconds:
            self._held += 1
            return None
        held, self._held, self._last = self._held, 0, now
        return held


class AcceptErrors(logging.Filter):
    """For the ``asyncio`` logger: its "socket.accept() out of system resource" error (with a
    traceback, once per slot of the backlog) becomes one line without a traceback, at most one
    every :data:`ACCEPT_ERROR_EVERY` seconds; the retries' tracebacks after the server closed
    (:data:`RETRY_AFTER_CLOSE`) are dropped; other records pass untouched.

    Example:
        >>> def failed_accept() -> logging.LogRecord:
        ...     return logging.LogRecord("asyncio", logging.ERROR, "", 0, ACCEPT_ERROR + "\\nsocket: <...>",
        ...                              None, (OSError, OSError(24, "Too many open files"), None))
        >>> errors, record = AcceptErrors(), failed_accept()
        >>> errors.filter(record), record.getMessage(), record.exc_info
        (True, 'cannot accept connections: [Errno 24] Too many open files (retried every second)', None)
        >>> errors.filter(failed_accept())  # (the next, within 10 s: held back)
        False
    """

    def __init__(self, every: Every | None = None) -> None:
        super().__init__()
        self.every = every or Every(ACCEPT_ERROR_EVERY)

    def filter(self, record: logging.LogRecord) -> bool:
        if str(record.msg).startswith(RETRY_AFTER_CLOSE) and record.exc_info and isinstance(
                record.exc_info[1], ValueError):
            return False  # (a retry of accept() on a listening socket closed since: moot)
        if not str(record.msg).startswith(ACCEPT_ERROR):
            return True
        held = self.every.due()
        if held is None:
            return False
        exc = record.exc_info[1] if record.exc_info else None
        more = f"; {held} more since the last line" if held else ""
        record.msg = f"cannot accept connections: {exc or 'out of resources'} (retried every second){more}"
        record.args = None
        record.exc_info = None
        record.exc_text = None
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


_SECURITY_HEADERS = b"".join(name + b": " + value + b"\r\n" for name, value in SECURITY_HEADERS)
"""The headers every answer of the app carries, on the answers written here too."""
_TOO_MANY = orjson.dumps({"detail": "too many connections to this server; retry shortly",
                          "code": "too_many_connections"})
TOO_MANY_CONNECTIONS = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
                        b"retry-after: 1\r\n" + _SECURITY_HEADERS + b"connection: close\r\ncontent-length: "
                        + str(len(_TOO_MANY)).encode() + b"\r\n\r\n" + _TOO_MANY)
"""The answer to a connection past the cap (before it sent anything: it is closed after)."""

_TIMED_OUT = orjson.dumps({"detail": "the request was not sent in time", "code": "request_timeout"})
REQUEST_TIMEOUT = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
                   + _SECURITY_HEADERS + b"connection: close\r\ncontent-length: "
                   + str(len(_TIMED_OUT)).encode() + b"\r\n\r\n" + _TIMED_OUT)
"""The answer to a request whose headers did not arrive in time (the connection is closed after)."""


class GuardedHttp(HttpToolsProtocol):
    """uvicorn's httptools protocol with a request timeout and a cap on connections (the
    module's docstring); made with its figures by :func:`guarded_http`."""

    head_timeout = HEAD_TIMEOUT
    body_timeout = BODY_TIMEOUT
    max_connections = MAX_CONNECTIONS
    refusals = Every(ACCEPT_ERROR_EVERY)
    cut_bodies = Every(ACCEPT_ERROR_EVERY)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._in_head = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.max_connections:
            held = self.refusals.due()
            if held is not None:
                log.warning("a connection refused: %d open, the most this server accepts%s",
                            self.max_connections, f" ({held} more since the last line)" if held else "")
            transport.write(TOO_MANY_CONNECTIONS)
            transport.close()
            return
        self._arm(self.head_timeout, head=True)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._deadline is None:  # (a next request on a kept-alive connection)
            self._arm(self.head_timeout, head=True)

    def on_headers_complete(self) -> None:
        self._arm(self.body_timeout, head=False)
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if self._deadline is not None and not self._in_head:  # (60 s without data, not in all)
            self._arm(self.body_timeout, head=False)
        super().on_body(body)

    def on_message_complete(self) -> None:
        self._disarm()
        super().on_message_complete()

    def on_response_complete(self) -> None:
        # What uvicorn read ahead of the app (up to 64 KiB) is let go with the answer: the rest
        # of a refused request's body is discarded as it comes (uvicorn's ``on_body``).
        # (``cycle`` is the newest request's: a pipelined one behind may have begun its body)
        if self.cycle is not None and self.cycle.response_complete and self.cycle.more_body:
            self.cycle.body = bytearray()
        super().on_response_complete()

    def handle_websocket_upgrade(self) -> None:
        self._disarm()
        super().handle_websocket_upgrade()

    def _arm(self, seconds: float, *, head: bool) -> None:
        self._disarm()
        self._in_head = head
        self._deadline = self.loop.call_later(seconds, self._timed_out)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _waits_its_turn(self) -> bool:
        """Whether the request timed is a pipelined one behind another whose answer is under
        way: its head (the answer before it still being written) or its body (uvicorn reads
        it only once its turn comes) is not late; the answer must not be cut, nor a 408
        written into it."""
        if self._in_head:
            return self.cycle is not None and not self.cycle.response_complete
        return any(cycle is self.cycle for cycle, _ in self.pipeline)

    def _timed_out(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        if self._waits_its_turn():
            self._arm(self.head_timeout if self._in_head else self.body_timeout, head=self._in_head)
            return
        if self._in_head:  # no answer under way on this connection
            self.transport.write(REQUEST_TIMEOUT)
        else:  # (a body cut short: the app reading it gets http.disconnect)
            held = self.cut_bodies.due()
            if held is not None:
                log.warning("a request's body stopped arriving for %g s: its connection closed%s",
                            self.body_timeout, f" ({held} more since the last line)" if held else "")
        self.transport.close()


def guarded_http(head_timeout: float = HEAD_TIMEOUT, body_timeout: float = BODY_TIMEOUT,
                 max_connections: int = MAX_CONNECTIONS) -> type[GuardedHttp]:
    """:class:`GuardedHttp` with these figures (uvicorn's ``http=`` takes a class).

    Example:
        >>> guarded_http(head_timeout=1.5).head_timeout
        1.5
    """
    return type("GuardedHttp", (GuardedHttp,), {
        "head_timeout": head_timeout, "body_timeout": body_timeout,
        "max_connections": max_connections, "refusals": Every(ACCEPT_ERROR_EVERY),
        "cut_bodies": Every(ACCEPT_ERROR_EVERY)})


def serving_limits() -> dict[str, Any]:
    """For ``serve``, once, before its ``uvicorn.Config``: raise the open-file limit, say a
    lack of descriptors in one line (:class:`AcceptErrors`); the ``uvicorn.Config`` arguments
    that bound the connections (``http=``: :class:`GuardedHttp`, capped by :func:`connection_cap`)."""
    open_files = raise_open_file_limit()
    logging.getLogger("asyncio").addFilter(AcceptErrors())
    return {"http": guarded_http(max_connections=connection_cap(open_files))}
