"""The simulator as an MCP client: it loads the configured servers like the CLI and calls their tools.

What lives here: :class:`McpSession` — at the start of a print-mode turn it reads both
``mcp.json`` files (:mod:`.mcp_config`), keeps the approved servers, resolves their
interpolations, connects to each with the official ``mcp`` SDK's client (streamable HTTP, then
SSE, for a ``url`` entry; stdio for a ``command`` entry, started in the agent's workspace with its
``envFile`` and ``env``: :func:`read_env_file`; ``initialize`` handshake as Cursor,
``clientInfo {name: "Cursor", version: "1.0.0"}``) and lists its tools; a server that cannot
be reached, or does not answer ``initialize`` and ``tools/list`` within
:func:`connect_timeout` (20 s; ``CURSOR_AGENT_SIM_MCP_TIMEOUT``), is not loaded (nothing
printed, as the CLI; a stdio server's process is stopped). :meth:`McpSession.call` performs
``tools/call`` and returns the wire outcome of the ``mcpToolCall`` completion (the nested
``content[].text.text``, ``isError``), or ``rejected`` when the call is neither allowlisted nor
forced. :func:`mcp_calls` reads which tools a prompt asks for. The SDK is async and the
simulator is not: the connections live on an anyio blocking portal (a private event-loop
thread) for the turn. What does not: the events (:mod:`.agent`, through :mod:`.wire`).

Example:
    >>> mcp_calls('Use lookup_order {"order_id": "A1"}, then ping.', {"lookup_order": "s", "ping": "s"})
    [('s', 'lookup_order', {'order_id': 'A1'}), ('s', 'ping', {})]
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import wire
from .mcp_config import (
    approval_root,
    configured_servers,
    given_approval_keys,
    interpolate,
    is_approved,
    recorded_approvals,
    tool_allowed,
)
from .settings import ACP_GIVEN_ENV, MCP_TIMEOUT_ENV
from .workspace import WAIT_TICK

if TYPE_CHECKING:  # at run time imported by a session that has servers to connect to
    import concurrent.futures

__all__ = ["ACP_GIVEN_ENV", "McpSession", "connect_timeout", "mcp_calls"]

CONNECT_TIMEOUT = 20.0
"""Seconds to connect to a server (HTTP or stdio: ``initialize``) and list its tools before it
counts as not loaded (a stdio server's process is then stopped)."""

_REAP_TIMEOUT = 10.0
"""Seconds to wait for a closed connection's end (the SDK's own shutdown of a stdio server is
bounded: stdin closed, 2 s, SIGTERM, then SIGKILL)."""

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""The largest message (one SSE event) the simulator reads from a streamable HTTP server: all
that the client's own tool server sends (up to its bound, 8 MiB: docs/tools.md), where the
``mcp`` SDK's default stops at 1 MiB (the real CLI's limit, if any, is not known); still
bounded, against a server that never ends an event."""

CALL_TIMEOUT = 300.0
"""Seconds one ``tools/call`` may take before the call ends in an ``error`` outcome."""


def connect_timeout(env: Mapping[str, str]) -> float:
    """:data:`CONNECT_TIMEOUT`, or ``CURSOR_AGENT_SIM_MCP_TIMEOUT`` when it is a positive number.

    Example:
        >>> env = MCP_TIMEOUT_ENV
        >>> connect_timeout({}), connect_timeout({env: "0.5"}), connect_timeout({env: "x"})
        (20.0, 0.5, 20.0)
    """
    try:
        value = float(env.get(MCP_TIMEOUT_ENV, ""))
    except ValueError:
        return CONNECT_TIMEOUT
    return value if 0 < value < float("inf") else CONNECT_TIMEOUT


def mcp_error_text(error: BaseException) -> str:
    """How the CLI words a failed ``tools/call``: ``MCP error <code>: <message>`` for a JSON-RPC
    error from the server (ACP.md §7), ``MCP error: <what>`` for anything else.

    Example:
        >>> from mcp import MCPError
        >>> mcp_error_text(MCPError(-32601, "Method not found")), mcp_error_text(TimeoutError("late"))
        ('MCP error -32601: Method not found', 'MCP error: late')
    """
    code, message = getattr(error, "code", None), getattr(error, "message", None)
    if isinstance(code, int) and isinstance(message, str):
        return f"MCP error {code}: {message}"
    return f"MCP error: {error}"


def mcp_calls(prompt: str, tools: Mapping[str, str]) -> list[tuple[str, str, dict[str, Any]]]:
    """``(server, tool, arguments)`` for each tool named in ``prompt``, in the order named.

    A tool is asked for by its name as a word; its arguments are the JSON object that follows
    the name (``lookup_order {"order_id": "A1"}`` or ``lookup_order({...})``), else ``{}``.

    Example:
        >>> mcp_calls("no tools here", {"ping": "s"})
        []
    """
    found: list[tuple[int, str, str, dict[str, Any]]] = []
    decoder = json.JSONDecoder()
    for name, server in tools.items():
        for m in re.finditer(rf"(?<![\w-]){re.escape(name)}(?![\w-])", prompt):
            args: dict[str, Any] = {}
            rest = re.match(r"\s*(?:with\s+|\(\s*)?", prompt[m.end():])
            start = m.end() + (rest.end() if rest else 0)
            if prompt[start:start + 1] == "{":
                with contextlib.suppress(ValueError):
                    value, _ = decoder.raw_decode(prompt, start)
                    if isinstance(value, dict):
                        args = value
            found.append((m.start(), server, name, args))
    return [(server, name, args) for _, server, name, args in sorted(found, key=lambda f: f[0])]


def read_env_file(path: Path) -> dict[str, str]:
    r"""The variables of a local entry's ``envFile``: ``KEY=VALUE`` lines (an ``export `` prefix
    and quotes around the value are dropped; blank lines and ``#`` comments are skipped; no
    interpolation, no multi-line values). An unreadable file raises ``OSError``.

    Example:
        >>> import tempfile
        >>> f = Path(tempfile.mkdtemp()) / ".env"
        >>> _ = f.write_text("# c\nA=1\nexport B='two words'\nbad line\nC=\"x=y\"\n")
        >>> read_env_file(f)
        {'A': '1', 'B': 'two words', 'C': 'x=y'}
    """
    out: dict[str, str] = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if line.startswith("export "):
            line = line[len("export "):].lstrip()
        key, eq, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not key or key.startswith("#"):
            continue
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        out[key] = value
    return out


def _stdio_env(entry: Mapping[str, Any], cwd: Path) -> dict[str, str]:
    """The server's environment: the simulator's, then the ``envFile``'s (relative to ``cwd``),
    then ``env`` (the entry's own variables win)."""
    env = dict(os.environ)
    env_file = entry.get("envFile")
    if isinstance(env_file, str) and env_file:
        env.update(read_env_file(cwd / Path(env_file).expanduser()))
    env.update({str(k): str(v) for k, v in (entry.get("env") or {}).items()})
    return env


@contextlib.asynccontextmanager
async def _http(entry: Mapping[str, Any], timeout: float, info: Any, *, sse: bool) -> AsyncIterator[Any]:
    """A ``url`` entry's connection: streamable HTTP, or the legacy HTTP+SSE transport."""
    import httpx2
    from mcp import Client
    from mcp.client.sse import sse_client
    from mcp.client.streamable_http import streamable_http_client

    headers = {str(k): str(v) for k, v in (entry.get("headers") or {}).items()}
    bounds = httpx2.Timeout(timeout, read=CALL_TIMEOUT)
    if sse:
        def factory(headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None,
                    auth: httpx2.Auth | None = None) -> httpx2.AsyncClient:
            return httpx2.AsyncClient(headers=headers, timeout=timeout or bounds, auth=auth,
                                      trust_env=False)

        transport = sse_client(entry["url"], headers=headers, timeout=timeout,
                               sse_read_timeout=CALL_TIMEOUT, httpx_client_factory=factory)
        async with Client(transport, mode="legacy", client_info=info) as client:
            yield client
        return
    async with httpx2.AsyncClient(headers=headers, trust_env=False, timeout=bounds) as http, \
            Client(streamable_http_client(entry["url"], http_client=http,
                                         max_sse_event_size=MAX_MESSAGE_BYTES), mode="legacy",
                   client_info=info) as client:
        yield client


@contextlib.asynccontextmanager
async def _connect(entry: Mapping[str, Any], timeout: float, cwd: Path) -> AsyncIterator[Any]:
    """Connect as the CLI does (MCP.md §2): a ``url`` entry with streamable HTTP, else (the
    server refused or did not speak it) with SSE; a ``command`` entry over stdio, started in
    ``cwd`` (the agent's workspace) with its ``envFile`` and ``env``."""
    from mcp import Client, StdioServerParameters, types

    info = types.Implementation(name="Cursor", version="1.0.0")
    if isinstance(entry.get("url"), str):
        async with contextlib.AsyncExitStack() as stack:
            try:
                client = await stack.enter_async_context(_http(entry, timeout, info, sse=False))
            except Exception:  # not streamable HTTP (an SSE-only server answers 404/405): SSE
                client = await stack.enter_async_context(_http(entry, timeout, info, sse=True))
            yield client
        return
    params = StdioServerParameters(command=str(entry["command"]),
                                   args=[str(a) for a in entry.get("args") or []],
                                   env=_stdio_env(entry, cwd), cwd=cwd)
    async with Client(params, mode="legacy", client_info=info) as client:
        yield client


async def _hold(entry: Mapping[str, Any], timeout: float, cwd: Path,
                ready: concurrent.futures.Future[Any], stop: Any) -> None:
    """Connect and list within ``timeout`` (``ready`` gets ``(client, listed)``), then keep the
    connection until ``stop`` is set. Past the deadline the connection is closed, which stops a
    stdio server's process (the SDK closes its stdin, then terminates, then kills it), and only
    then does ``ready`` get its error: nothing is left running."""
    import anyio

    try:
        with anyio.CancelScope(deadline=anyio.current_time() + timeout) as scope:
            async with _connect(entry, timeout, cwd) as client:
                listed = await client.list_tools()
                scope.deadline = math.inf
                ready.set_result((client, listed))
                await stop.wait()
    except Exception as e:
        if not ready.done():
            ready.set_exception(e)
    finally:
        if not ready.done():
            ready.set_exception(TimeoutError(f"no answer to initialize/tools/list in {timeout} s"))


class McpSession:
    """The turn's MCP servers: connected and listed by :meth:`start`, closed by :meth:`close`.

    ``tools`` maps each loaded tool's name to its server (the first server listing a name wins).

    Example:
        >>> import tempfile
        >>> s = McpSession(Path(tempfile.mkdtemp()), Path(tempfile.mkdtemp()), {}, approve_all=False)
        >>> s.start(); s.tools; s.close()
        {}
    """

    def __init__(self, workspace: Path, config_dir: Path, env: Mapping[str, str], *,
                 approve_all: bool, force: bool = False,
                 given: Mapping[str, Mapping[str, Any]] | None = None,
                 given_need_approval: bool = True,
                 configured: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.workspace = workspace
        self.given = dict(given or {})
        """Servers the client gave in ACP's ``session/new``/``session/load`` (``mcp.json``
        shape): overlaid on the files' (a given one replaces a file's of the same name)."""
        self.given_need_approval = given_need_approval
        """A given server loads only with an approval entry (:func:`given_approval_keys`), as
        the 09.10 bundle and build ~03 (MCP.md §7); ``False``: loaded anyway, as 08.11 did."""
        self.configured = None if configured is None else dict(configured)
        """The ``mcp.json`` servers as read earlier (ACP reads the files once per process);
        ``None``: read both files now."""
        self.config_dir = config_dir
        self.env = env
        self.approve_all = approve_all
        self.force = force
        self.tools: dict[str, str] = {}
        self._described: dict[str, dict[str, Any]] = {}
        self.loaded: list[str] = []
        self._clients: dict[str, Any] = {}
        self._stack = contextlib.ExitStack()
        self._portal: Any = None
        self._stop: Any = None
        self._tasks: list[concurrent.futures.Future[Any]] = []

    def start(self) -> None:
        """Connect to every approved server and list its tools (a failure: not loaded)."""
        ws = str(self.workspace)
        root = approval_root(self.env)
        configured = (self.configured if self.configured is not None
                      else configured_servers(self.workspace, self.config_dir))
        wanted = {name: interpolate(entry, self.env, ws) for name, entry in configured.items()
                  if is_approved(name, entry, ws, root, self.approve_all)}
        recorded = recorded_approvals(root, ws) if self.given else set()
        for name, entry in self.given.items():
            wanted.pop(name, None)
            if not self.given_need_approval or recorded.intersection(given_approval_keys(name, entry, ws)):
                wanted[name] = interpolate(entry, self.env, ws)
        if not wanted:
            return
        import concurrent.futures

        try:
            import anyio
            import mcp  # noqa: F401
            from anyio.from_thread import start_blocking_portal
        except ImportError:
            print("cursor-agent-sim: MCP servers are configured, but the mcp package is not "
                  "installed (pip install 'cursor-agent-api[tools]'): not loaded", file=sys.stderr)
            return
        self._portal = self._stack.enter_context(start_blocking_portal(name="cursor-agent-sim-mcp"))
        self._stop = self._portal.call(anyio.Event)
        self._stack.callback(self._stop_all)
        timeout = connect_timeout(self.env)
        for name, entry in wanted.items():
            ready: concurrent.futures.Future[Any] = concurrent.futures.Future()
            task = self._portal.start_task_soon(_hold, entry, timeout, self.workspace, ready, self._stop)
            try:
                # the HTTP client has its own bounds; this one also covers a stdio server that
                # never answers ``initialize`` or ``tools/list`` (MCP.md §8: not loaded)
                client, listed = ready.result(timeout=timeout + _REAP_TIMEOUT)
            except BaseException:  # unreachable, refused (401), not MCP, silent: not loaded
                if not ready.done():
                    task.cancel()  # its shutdown did not end: the portal's own exit waits for it
                self._reap(task)
                continue
            self._tasks.append(task)
            self._clients[name] = client
            self.loaded.append(name)
            for t in listed.tools:
                if t.name not in self.tools:
                    self.tools[t.name] = name
                    self._described[t.name] = {"tool": t.name, "description": t.description or "",
                                               "inputSchema": t.input_schema}

    @staticmethod
    def _reap(task: concurrent.futures.Future[Any]) -> None:
        """Wait (bounded) until a cancelled or stopped connection has closed: its process is gone."""
        with contextlib.suppress(BaseException):
            task.result(timeout=_REAP_TIMEOUT)

    def _stop_all(self) -> None:
        with contextlib.suppress(BaseException):
            self._portal.call(self._stop.set)
        for task in self._tasks:
            self._reap(task)
        self._tasks.clear()

    def describe(self, tool: str) -> dict[str, Any]:
        """``{tool, description, inputSchema}``: what ``getMcpToolsToolCall`` returns (MCP.md §6)."""
        return self._described.get(tool, {"tool": tool})

    def call(self, server: str, tool: str, arguments: dict[str, Any],
             waiting: Callable[[], None] | None = None) -> dict[str, Any]:
        """``tools/call``; the ``mcpToolCall`` outcome for the wire.

        ``waiting()`` is called every :data:`~.workspace.WAIT_TICK` seconds or so while the
        server has not answered (ACP serves its stdin there); what it raises abandons the call
        (its task is cancelled; the connection stays for the next call) and propagates."""
        client = self._clients.get(server)
        if client is None:
            return {"serverNotFound": {"name": server}}
        if not tool_allowed(server, tool, self.workspace, self.config_dir, self.force):
            return wire.rejected("User Rejected")
        import concurrent.futures

        future = self._portal.start_task_soon(client.call_tool, tool, arguments)
        try:
            while not concurrent.futures.wait([future], timeout=WAIT_TICK).done:
                if waiting is not None:
                    waiting()
        except BaseException:
            # the call's task is cancelled on the portal's loop and unwinds there, not awaited
            # here (a cancelled future's result() raises at once); the portal's exit waits for it
            future.cancel()
            raise
        try:
            result = future.result()
        except Exception as e:
            return wire.error_outcome(mcp_error_text(e))
        texts = []
        for block in result.content:
            text = getattr(block, "text", None)
            texts.append(text if isinstance(text, str) else block.model_dump_json(by_alias=True))
        return wire.mcp_success(texts, is_error=bool(result.is_error))

    def close(self) -> None:
        """Disconnect (the portal's thread ends). Idempotent."""
        self._clients.clear()
        with contextlib.suppress(Exception):
            self._stack.close()
