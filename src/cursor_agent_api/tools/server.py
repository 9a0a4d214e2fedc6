"""The tool server: ``@tool`` functions served over MCP (streamable HTTP) on 127.0.0.1.

What lives here: :class:`ToolServer` — the official ``mcp`` SDK's low-level ``Server`` (v2
API: handlers passed as ``on_list_tools=``/``on_call_tool=``; see docs/tools.md for why the
low-level one) served by uvicorn on a free loopback port, behind :class:`Guard`, a small ASGI
wrapper that refuses, before the SDK sees anything:

* a ``Host`` other than ``127.0.0.1:<port>`` / ``localhost:<port>`` → 421 (DNS rebinding);
* a request without ``Authorization: Bearer <the server's token>`` → 401;
* a declared body over ``max_body_bytes`` → 413 (the SDK also bounds the body it reads).

The token is random per server (``secrets.token_urlsafe(32)``); it reaches the agent only
through its environment (see :mod:`.host`), on the Unix socket of the relay fallback too.
The server also records each call
(:class:`~.tool.LocalInvocation`) so the stream's tool calls can be linked to them
(:meth:`ToolServer.claim`), and which MCP sessions each turn's agent opened
(:mod:`.mcp_scopes`), so that they end with it (:meth:`ToolServer.end_scope`); the SDK ends an
MCP session idle for :data:`MCP_SESSION_IDLE_TIMEOUT` and keeps at most
:data:`MCP_MAX_SESSIONS`. What does not live here: the workspace's files (:mod:`.inject`),
which turns use the server (:mod:`.host`).

Example:
    >>> import asyncio, httpx
    >>> from .functions import tool
    >>> @tool
    ... def ping() -> str:
    ...     '''Answer pong.'''
    ...     return "pong"
    >>> async def main():
    ...     server = ToolServer([ping])
    ...     await server.start()
    ...     try:
    ...         async with httpx.AsyncClient() as http:
    ...             r = await http.post(server.url, json={})
    ...         return r.status_code, server.url.startswith("http://127.0.0.1:")
    ...     finally:
    ...         await server.stop()
    >>> asyncio.run(main())
    (401, True)
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import math
import os
import secrets
import socket
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

import httpx2
import uvicorn
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.transport_security import TransportSecuritySettings

from .functions import LocalInvocation, Tool, describe, log_exception, to_texts
from .mcp_scopes import SCOPE_HEADER, McpScopes

__all__ = ["DEFAULT_MAX_BODY_BYTES", "Guard", "ToolServer"]

log = logging.getLogger("cursor_agent_api.tools")

DEFAULT_MAX_BODY_BYTES = 1024 * 1024
"""The largest request the tool server reads (1 MiB: tool arguments, not uploads)."""

MAX_RESULT_BYTES = 8 * 1024 * 1024
"""The largest tool result the server sends: its JSON (``CallToolResult``, as on the wire),
8 MiB. Above any model's context window (a million tokens is about 4 MiB of text), so nothing
an agent could use is refused, while a runaway result (a whole database, a binary read as text)
is refused before the host, the relay and the agent each hold copies of it: the agent gets an
``isError`` result naming the size and the bound instead (docs/tools.md)."""

RESULT_EVENT_MARGIN = 64 * 1024
"""What a client reading the server's results allows beyond :data:`MAX_RESULT_BYTES` for one
SSE event: the JSON-RPC envelope and the event's own fields."""

RELAY_AUTHORITY = "tools.relay.invalid:1"
"""The ``Host`` the stdio relay sends over the Unix socket (a name, not an address)."""

CANCELLED = "cancelled: the turn that made this call ended"
"""The error of a call still running when its turn ended (see :meth:`ToolServer.end_calls`)."""

MCP_SESSION_IDLE_TIMEOUT = 600.0
"""Seconds after which the SDK ends an MCP session with no request in flight (an agent that
keeps its session open has its event stream open): one whose scope was never ended."""

MCP_MAX_SESSIONS = 1000
"""The most MCP sessions the server holds at once (beyond: the SDK answers 503)."""

_KEEP_UNCLAIMED = 1000
"""How many unclaimed calls the server remembers for linking (oldest dropped first)."""

_KEEP_UNCLAIMED_BYTES = 64 * 1024 * 1024
"""How many bytes of result text the unclaimed calls may hold (oldest dropped first): a call is
kept only until its turn links it (or ends), but a turn may make many calls it never links."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


async def _refuse(send: Send, status: int, text: str, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    body = text.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


class Guard:
    """ASGI wrapper: Host allowlist (421), bearer token (401), declared body size (413).

    Example:
        >>> g = Guard(None, token="t", hosts=["127.0.0.1:8"], max_body_bytes=10)  # type: ignore[arg-type]
        >>> g.want
        b'Bearer t'
    """

    def __init__(self, app: ASGIApp, *, token: str, hosts: Iterable[str], max_body_bytes: int,
                 scopes: McpScopes | None = None) -> None:
        self.app = app
        self.scopes = scopes
        """Where the MCP sessions opened with a :data:`~.mcp_scopes.SCOPE_HEADER` are noted."""
        self.want = f"Bearer {token}".encode()
        self.hosts = {h.encode() for h in hosts}
        self.max_body_bytes = max_body_bytes
        self.refused = 0
        """Requests refused for a missing or wrong token (a CLI that does not expand ``${env:…}``)."""
        self.admitted = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)  # lifespan: the SDK's session manager
            return
        headers = dict(scope.get("headers") or ())
        if headers.get(b"host") not in self.hosts:
            await _refuse(send, 421, "misdirected request: wrong Host")
            return
        if not hmac.compare_digest(headers.get(b"authorization", b""), self.want):
            self.refused += 1
            await _refuse(send, 401, "unauthorized", [(b"www-authenticate", b"Bearer")])
            return
        length = headers.get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body_bytes):
            await _refuse(send, 413, "request too large")
            return
        self.admitted += 1
        if self.scopes is not None:
            send = _note_session(self.scopes, scope["method"], headers, send)
        await self.app(scope, receive, send)


_SCOPE = SCOPE_HEADER.lower().encode()
_SESSION = b"mcp-session-id"


def _note_session(scopes: McpScopes, method: str, headers: dict[bytes, bytes], send: Send) -> Send:
    """``send``, noting in ``scopes`` the MCP session a scoped request opens (the SDK names it
    in its answer); a ``DELETE`` (the agent ends its session) is noted at once."""
    session = headers.get(_SESSION)
    if session is not None:
        if method == "DELETE":
            scopes.closed(session.decode("latin-1"))
        return send
    tag = headers.get(_SCOPE)
    if not tag:
        return send

    async def noting(message: Message) -> None:
        if message["type"] == "http.response.start" and message.get("status", 500) < 400:
            opened = dict(message.get("headers") or ()).get(_SESSION)
            if opened:
                scopes.opened(tag.decode("latin-1"), opened.decode("latin-1"))
        await send(message)

    return noting


class _OwnLoggingConfig(uvicorn.Config):
    """uvicorn's settings without its logging set-up: ``Config`` would otherwise configure the
    process's ``uvicorn*`` loggers (handlers, levels, the access log cut off), which belong to
    the host program (its own uvicorn, if it runs one, included)."""

    def configure_logging(self) -> None:
        return None


class _QuietServer(uvicorn.Server):
    """uvicorn without its signal handlers: Ctrl-C belongs to the host program, not to us."""

    @contextlib.contextmanager
    def capture_signals(self) -> Any:
        yield


class ToolServer:
    """``tools`` served over MCP on ``127.0.0.1:<free port>/mcp``, with a bearer token.

    :meth:`start` on an event loop (the port is chosen and bound at once), :meth:`stop` on the
    same loop. :attr:`url`, :attr:`token`. Each call is recorded; :meth:`claim` hands the first
    unclaimed record of a tool with the same arguments to the tool call that caused it.

    Example:
        >>> ToolServer([]).url
        Traceback (most recent call last):
        ...
        RuntimeError: the tool server is not started
    """

    def __init__(self, tools: Iterable[Tool], *, name: str = "python-tools",
                 max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
                 max_result_bytes: int = MAX_RESULT_BYTES) -> None:
        self.tools: dict[str, Tool] = {}
        for t in tools:
            if not isinstance(t, Tool):
                raise TypeError(f"tools must be @tool functions, got {t!r} (decorate it with @tool)")
            if t.method_of is not None:
                raise TypeError(f"tool {t.name}: {t._attribute} is a method of {t.method_of.__name__}: "
                                f"pass it bound to an instance, tools=[obj.{t._attribute}]")
            if t.name in self.tools:
                raise ValueError(f"two tools are named {t.name!r}")
            self.tools[t.name] = t
        self.name = name
        self.token = secrets.token_urlsafe(32)
        self.max_body_bytes = max_body_bytes
        self.max_result_bytes = max_result_bytes
        self._port: int | None = None
        self._server: _QuietServer | None = None
        self._task: asyncio.Task[None] | None = None
        self._guard: Guard | None = None
        self._lock = threading.Lock()
        self._unclaimed: deque[tuple[float, LocalInvocation]] = deque()
        """Finished calls not yet linked, with when they started (``time.monotonic()``): at
        most ``_KEEP_UNCLAIMED`` of them, holding at most ``_KEEP_UNCLAIMED_BYTES``."""
        self._unclaimed_bytes = 0
        self._running: dict[asyncio.Task[LocalInvocation], float] = {}
        """Calls in flight (on the server's loop), with when they started."""
        self.calls = 0
        """How many tool calls the server answered (their values are not kept: a call's record
        goes to the turn that links it, :meth:`claim`)."""
        self.listed = 0
        """How many ``tools/list`` requests the server answered (an agent that loaded it lists)."""
        self.scopes = McpScopes(MCP_MAX_SESSIONS)
        """The MCP sessions each turn's agent opened (:meth:`end_scope`)."""
        self._hosts: list[str] = []
        self._manager: Any = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>/mcp`` once started."""
        if self._port is None:
            raise RuntimeError("the tool server is not started")
        return f"http://127.0.0.1:{self._port}/mcp"

    @property
    def running(self) -> bool:
        """True between :meth:`start` and :meth:`stop` (and while its task lives)."""
        return self._task is not None and not self._task.done()

    @property
    def refused(self) -> int:
        """How many requests came without the right token."""
        return self._guard.refused if self._guard is not None else 0

    @property
    def admitted(self) -> int:
        """How many requests the server admitted (an agent that loaded it sends several)."""
        return self._guard.admitted if self._guard is not None else 0

    # ---- MCP ---------------------------------------------------------------------------

    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        self.listed += 1
        return types.ListToolsResult(tools=[
            types.Tool(name=t.name, description=t.description, input_schema=t.input_schema)
            for t in self.tools.values()])

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        found = self.tools.get(params.name)
        if found is None:
            return types.CallToolResult(
                content=[types.TextContent(text=f"unknown tool {params.name!r}")], is_error=True)
        began, started_at = time.monotonic(), time.time()
        call = asyncio.ensure_future(found.invoke(params.arguments))
        self._running[call] = began
        try:
            await asyncio.wait({call})
        except BaseException:  # the request itself was cancelled (the session or server closes)
            call.cancel()
            raise
        finally:
            self._running.pop(call, None)
        failed = None if call.cancelled() else call.exception()
        if call.cancelled() or failed is not None:
            # cancelled: end_calls (the turn that made it ended, its agent is gone); failed:
            # invoke never raises, but what would reach the SDK's task group ends the server
            error = CANCELLED if failed is None else f"the tool's call failed: {describe(failed)}"
            if failed is not None:
                log_exception(logging.ERROR, failed, "tool %s: %s", found.name, error)
            record = LocalInvocation(found.name, dict(params.arguments or {}), started_at=started_at,
                                     exception=failed, error=error, texts=[error],
                                     duration_ms=(time.monotonic() - began) * 1000)
        else:
            record = call.result()
        result = _answer(record)
        size = len(result.model_dump_json(by_alias=True, exclude_none=True).encode())
        if size > self.max_result_bytes:  # (the agent would never see it)
            record.value, record.exception = None, None
            record.error = (f"the tool's result is {size:,} bytes of JSON, over the tool server's "
                            f"bound of {self.max_result_bytes:,} bytes: return less (or write it to a "
                            "file and return its path)")
            record.texts = [record.error]
            log.warning("tool %s: %s", found.name, record.error)
            result = _answer(record)
        if not call.cancelled() and failed is None:
            self._keep(began, record)
        self.calls += 1
        return result

    def _keep(self, began: float, record: LocalInvocation) -> None:
        """Keep ``record`` for :meth:`claim`, within the bounds (the oldest go first)."""
        with self._lock:
            self._unclaimed.append((began, record))
            self._unclaimed_bytes += _weight(record)
            while len(self._unclaimed) > _KEEP_UNCLAIMED or (
                    self._unclaimed_bytes > _KEEP_UNCLAIMED_BYTES and len(self._unclaimed) > 1):
                self._unclaimed_bytes -= _weight(self._unclaimed.popleft()[1])

    def claim(self, tool_name: str | None, arguments: Any,
              since: float = -math.inf) -> LocalInvocation | None:
        """The first unclaimed call of ``tool_name`` with these arguments that started at or
        after ``since`` (``time.monotonic()``: when the linking turn began), then claimed; or None.

        Example:
            >>> s = ToolServer([])
            >>> s._unclaimed.append((1.0, LocalInvocation("t", {"a": 1})))
            >>> s.claim("t", {"a": 2}), s.claim("t", {"a": 1}, since=2.0)
            (None, None)
            >>> s.claim("t", {"a": 1}).tool, s.claim("t", {"a": 1})
            ('t', None)
        """
        want = _canonical(arguments if isinstance(arguments, dict) else {})
        with self._lock:
            for item in self._unclaimed:
                began, record = item
                if began >= since and record.tool == tool_name and _canonical(record.arguments) == want:
                    self._unclaimed.remove(item)
                    self._unclaimed_bytes -= _weight(record)
                    return record
        return None

    def end_calls(self, before: float) -> int:
        """Cancel the calls in flight that started before ``before`` (``time.monotonic()``; no
        live turn began earlier, so their agents are gone) and forget the unclaimed ones of then.
        Their agents get an error result ``cancelled: …``. On the server's loop. Returns how many
        were cancelled.

        Example:
            >>> s = ToolServer([])
            >>> s._unclaimed.append((1.0, LocalInvocation("t", {})))
            >>> s.end_calls(before=2.0), s.claim("t", {})
            (0, None)
        """
        with self._lock:
            kept = [item for item in self._unclaimed if item[0] >= before]
            self._unclaimed.clear()
            self._unclaimed.extend(kept)
            self._unclaimed_bytes = sum(_weight(record) for _, record in kept)
        stale = [call for call, began in self._running.items() if began < before]
        for call in stale:
            call.cancel()
        return len(stale)

    async def end_scope(self, scope: str) -> int:
        """End the MCP sessions opened with ``scope`` (as their agent would: ``DELETE``), now
        that their agent is gone or has let go of them; how many. On the server's loop.

        Example:
            >>> asyncio.run(ToolServer([]).end_scope("turn-1"))
            0
        """
        ids = self.scopes.take(scope)
        guard = self._guard
        if not ids or guard is None or not self.running:
            return 0
        transport = httpx2.ASGITransport(app=guard.app)  # the SDK's app: not counted as admitted
        async with httpx2.AsyncClient(transport=transport, base_url=f"http://{self._hosts[0]}",
                                      trust_env=False) as http:
            for sid in ids:
                with contextlib.suppress(Exception):  # (one the SDK ended meanwhile: 404)
                    await http.delete("/mcp", headers={_SESSION.decode(): sid})
        return len(ids)

    # ---- lifecycle ---------------------------------------------------------------------

    async def start(self, unix_path: str | None = None) -> None:
        """Bind ``127.0.0.1:0`` and serve; returns once the server accepts connections.

        With ``unix_path`` (the relay fallback, see :mod:`.relay`), serve on a Unix socket
        there instead (mode 0600; put it in a private directory): no TCP port, the same token
        (any of the user's processes reaches the socket, another client's agent included).
        """
        if self.running:
            return
        self._task = None  # one that died (see _serve) is replaced
        if unix_path is not None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.bind(unix_path)
            except OSError as exc:
                sock.close()
                size = len(os.fsencode(unix_path))
                hint = (f" ({size} bytes; a socket's path may have 103 on macOS, 107 on Linux: "
                        "set TMPDIR to a shorter directory)" if size > 103 else "")
                raise OSError(f"cannot serve the tools on the Unix socket {unix_path}{hint}: "
                              f"{exc.strerror or exc}") from exc
            os.chmod(unix_path, 0o600)
            hosts = [RELAY_AUTHORITY]
            self._port = 0
        else:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", 0))
            port = self._port = sock.getsockname()[1]
            hosts = [f"127.0.0.1:{port}", f"localhost:{port}"]
        lowlevel: Server[Any] = Server(self.name, version="1", on_list_tools=self._list_tools,
                                       on_call_tool=self._call_tool)
        app = lowlevel.streamable_http_app(
            max_request_body_size=self.max_body_bytes,
            session_idle_timeout=MCP_SESSION_IDLE_TIMEOUT, max_sessions=MCP_MAX_SESSIONS,
            transport_security=TransportSecuritySettings(
                enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                allowed_origins=[f"http://{h}" for h in hosts]))
        self.scopes.clear()
        self._hosts = hosts
        self._manager = lowlevel.session_manager  # (the SDK's MCP sessions)
        self._guard = Guard(app, token=self.token, hosts=hosts, max_body_bytes=self.max_body_bytes,
                            scopes=self.scopes)
        # the SDK's session manager runs around the server here, not in a Starlette lifespan:
        # cancelled with its loop (asyncio.run's end), a lifespan prints a traceback
        config = _OwnLoggingConfig(self._guard, log_level="warning", lifespan="off",
                                access_log=False, timeout_graceful_shutdown=1,
                                proxy_headers=False)  # no X-Forwarded-* trusted
        server = self._server = _QuietServer(config)
        self._task = asyncio.get_running_loop().create_task(
            _serve(server, sock, lowlevel.session_manager.run()))
        self._task.add_done_callback(self._ended)
        while not server.started:
            if self._task.done():
                self._task.result()  # raises what stopped it
                raise RuntimeError("the tool server stopped while starting")
            await asyncio.sleep(0.005)

    def _ended(self, task: asyncio.Task[None]) -> None:
        """The server's task ended on its own (not stopped): said (:meth:`start` serves again)."""
        error = None if task.cancelled() else task.exception()
        if task is self._task and error is not None:
            log_exception(logging.ERROR, error, "the tool server %s stopped: %s; it is served again "
                          "when the next turn starts", self.name, describe(error))

    async def stop(self) -> None:
        """Stop serving (open streams are closed); idempotent. Calls still in flight are
        cancelled first (their agents get ``cancelled: …``; a sync function's thread is left to
        finish on its own), so the server stops at once rather than after its grace period."""
        task, server = self._task, self._server
        self._task = None
        if task is None or server is None:
            return
        running = list(self._running)
        if self.end_calls(before=math.inf):  # bounded: a tool may ignore its cancel
            await asyncio.wait(running, timeout=1)
            await asyncio.sleep(0)  # their handlers record them and answer
        server.should_exit = True
        await asyncio.wait({task}, timeout=5)
        if not task.done():
            server.force_exit = True
            task.cancel()
            await asyncio.wait({task})
        self.scopes.clear()  # (their sessions ended with the server)
        # what ended a server that died was logged then (_ended): its stop raises nothing


async def _serve(server: uvicorn.Server, sock: socket.socket,
                 sessions: contextlib.AbstractAsyncContextManager[None]) -> None:
    try:
        async with sessions:
            await server.serve(sockets=[sock])
    finally:  # a serve cut short (the SDK's task group ended) would leave its listener open
        for listener in getattr(server, "servers", ()):
            listener.close()
        sock.close()


def _answer(record: LocalInvocation) -> types.CallToolResult:
    """What the agent is sent for ``record``."""
    structured = to_texts(record.value)[1] if record.ok else None
    return types.CallToolResult(content=[types.TextContent(text=t) for t in record.texts],
                                structured_content=structured, is_error=record.is_error)


def _weight(record: LocalInvocation) -> int:
    """What a kept record weighs: the length of its texts (its value is about as big)."""
    return sum(len(text) for text in record.texts)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
