"""A client's tools, and the turn wrapper that shows them (and ``mcp_servers``) to the agent.

What lives here: :class:`ToolHost` — one per client: its ``@tool`` functions, the
:class:`~.server.ToolServer` that serves them (created on first use, started by the first turn,
stopped by the client's ``close``/``aclose``), the server's ``mcp.json`` key
(``python-tools-<8 hex>``) and the name of the environment variable that carries its token;
:class:`TurnScope` — what one turn adds (the agent's environment, the entries in ``.cursor/``
and their approval entries) and takes away; :func:`open_turn`, the client's one entry point: an
:class:`~cursor_agent_api.runtime.AgentRun` that enters the scope before the agent starts and
leaves it once the agent's process group is gone, whatever the outcome.

The token never touches a file: ``mcp.json`` says ``"Authorization": "Bearer
${env:CURSOR_AGENT_API_TOOLS_TOKEN_<8 HEX>}"`` and only the agent's environment holds the value.
Each turn's agent also gets a scope (:mod:`.mcp_scopes`): the MCP sessions it opens end with
the turn in print mode, and with the ACP session in ACP mode (:meth:`ToolHost.end_scope`).

Approval: the turn approves exactly its own servers, with one approval entry each
(:mod:`.approvals`), in both modes. It never passes ``--approve-mcps`` on its own: that flag
approves *every* server the agent finds — a cloned repository's ``.cursor/mcp.json`` entries
(commands the agent would run), the user's ``~/.cursor/mcp.json`` — so only the user's own
``AgentConfig(approve_mcps=True)`` passes it.

Example:
    >>> from cursor_agent_api.config import AgentConfig
    >>> host = ToolHost([])
    >>> config, scope = prepare_turn(host, AgentConfig(workspace="/tmp"))
    >>> config.approve_mcps, host.env_var in config.env, scope.allow
    (False, True, [])
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import secrets
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..config import AgentConfig
from ..extras import is_missing_dependency, missing_extra
from ..protocol import AgentResult, Transcript
from ..protocol.tools import OWN_TOOL_SERVER_PREFIX, ToolCall
from ..runtime.argv import build_env, check_workspace
from ..runtime.transport import Turn
from .approvals import ApprovalInjection, approvals_file, turn_approval_keys
from .inject import WorkspaceInjection
from .journal import HELD
from .mcp_scopes import SCOPE_ENV, SCOPE_HEADER

if TYPE_CHECKING:
    from .functions import LocalInvocation, Tool
    from .server import ToolServer

__all__ = ["SOCKET_PATH_MAX", "TOKEN_ENV_PREFIX", "ToolHost", "TurnScope", "open_turn", "prepare_turn"]

log = logging.getLogger("cursor_agent_api.tools")

TOKEN_ENV_PREFIX = "CURSOR_AGENT_API_TOOLS_TOKEN_"

TRANSPORT_ENV = "CURSOR_AGENT_API_TOOLS_TRANSPORT"
"""``http`` (the default: loopback HTTP, the token through ``${env:…}`` in the entry's headers)
or ``relay`` (a stdio relay entry that reaches the host over a private Unix socket: for a CLI
build that does not expand ``${env:…}`` in headers)."""


SOCKET_PATH_MAX = 103
"""Bytes a Unix socket's path may have: ``sun_path`` holds 104 on macOS (108 on Linux), its
terminating NUL included."""


def socket_dir() -> str:
    """A new private directory (0700) for the relay's socket ``mcp.sock``: in the temporary
    directory, or in ``/tmp`` when ``$TMPDIR`` is too long for a socket's path (macOS's
    ``/var/folders/…``, a CI's deep directories: :data:`SOCKET_PATH_MAX`).

    Example:
        >>> d = socket_dir()
        >>> len(os.path.join(d, "mcp.sock")) <= SOCKET_PATH_MAX, os.stat(d).st_mode & 0o777
        (True, 448)
        >>> os.rmdir(d)
    """
    made = tempfile.mkdtemp(prefix="cursor-agent-api-tools-")
    if len(os.fsencode(os.path.join(made, "mcp.sock"))) <= SOCKET_PATH_MAX:
        return made
    os.rmdir(made)
    return tempfile.mkdtemp(prefix="cagt-", dir="/tmp")


class _OwnDirectory:
    """A directory this process made (the relay's, for its socket): removed by :meth:`exit`,
    or at the interpreter's normal exit if the client was never closed (:data:`~.journal.HELD`:
    a sync client left open, an async one whose ``asyncio.run()`` ended without ``aclose()``).

    Example:
        >>> made = _OwnDirectory(tempfile.mkdtemp())
        >>> made.exit(); os.path.exists(made.path)
        False
    """

    def __init__(self, path: str) -> None:
        self.path = path
        HELD.hold(self)

    def exit(self) -> None:
        HELD.drop(self)
        shutil.rmtree(self.path, ignore_errors=True)


class ToolHost:
    """The tools of one client and their server (see the module's docstring).

    Example:
        >>> host = ToolHost([])
        >>> host.name.startswith("python-tools-"), host.env_var.startswith(TOKEN_ENV_PREFIX)
        (True, True)
    """

    def __init__(self, tools: Iterable[Any], *, transport: str | None = None) -> None:
        try:
            from .server import ToolServer  # the mcp SDK: only when tools are given
        except ImportError as e:
            if not is_missing_dependency(e):
                raise
            raise missing_extra("tools", "cursor_agent_api.tools", e) from e

        transport = transport or os.environ.get(TRANSPORT_ENV) or "http"
        if transport not in ("http", "relay"):
            raise ValueError(f"{TRANSPORT_ENV} must be 'http' or 'relay', got {transport!r}")
        self.transport = transport
        self._socket_dir: _OwnDirectory | None = None

        suffix = os.urandom(4).hex()
        self.name = OWN_TOOL_SERVER_PREFIX + suffix
        self.env_var = TOKEN_ENV_PREFIX + suffix.upper()
        self.server: ToolServer = ToolServer(tools, name=self.name)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._starting: asyncio.Lock | None = None
        self._turns: list[float] = []
        """When each turn in progress (entered, not yet left) began (``time.monotonic()``)."""
        self._closing = False
        self._ending: set[asyncio.Task[int]] = set()

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The event loop the server was started on (``None`` before the first turn)."""
        return self._loop

    @property
    def active(self) -> int:
        """Turns in progress (entered, not yet left)."""
        return len(self._turns)

    @property
    def tools(self) -> list[Tool]:
        """The tools, in the order given."""
        return list(self.server.tools.values())

    def entry(self) -> dict[str, Any]:
        """The server's ``mcp.json`` entry (the token as ``${env:…}``, never its value)."""
        if self._socket_dir is not None:
            from .relay import relay_entry

            return relay_entry(os.path.join(self._socket_dir.path, "mcp.sock"), self.env_var)
        return {"url": self.server.url,
                "headers": {"Authorization": f"Bearer ${{env:{self.env_var}}}",
                            SCOPE_HEADER: f"${{env:{SCOPE_ENV}}}"}}

    def allow(self) -> list[str]:
        """The allowlist tokens for exactly these tools: ``Mcp(<server>:<tool>)``."""
        return [f"Mcp({self.name}:{t.name})" for t in self.tools]

    async def start(self) -> None:
        """Start the server on the running loop (once; again on a new loop after the old closed)."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            if self._loop is not None and not self._loop.is_closed() and self.server.running:
                raise RuntimeError("this client's tools are served on another event loop; "
                                   "use one AsyncCursorAgentClient per event loop")
            self._loop, self._starting = loop, asyncio.Lock()
            self.server._task = None  # a server of a closed loop is gone with it
        assert self._starting is not None
        async with self._starting:
            if not self.server.running:
                if self.transport == "relay":
                    self._close_socket_dir()
                    self._socket_dir = _OwnDirectory(socket_dir())
                    await self.server.start(os.path.join(self._socket_dir.path, "mcp.sock"))
                else:
                    await self.server.start()

    async def aclose(self) -> None:
        """Stop the server (on its loop) — once the turns in progress have ended. Idempotent."""
        self._closing = True
        if self.active:
            return  # the last turn out stops it (see turn_ended)
        if self._loop is asyncio.get_running_loop():
            if self._ending:
                await asyncio.wait(list(self._ending))
            await self.server.stop()
        self._close_socket_dir()

    def turn_started(self) -> float:
        """A turn entered its scope (on the server's loop): when it began, for :meth:`turn_ended`
        and :meth:`link`."""
        began = time.monotonic()
        self._turns.append(began)
        self._closing = False
        return began

    def turn_ended(self, began: float) -> None:
        """The turn that began at ``began`` left its scope (on the server's loop): the calls no
        live turn can have made are cancelled (:meth:`~.server.ToolServer.end_calls`); after a
        close that waited for it, the server stops now."""
        self._turns.remove(began)
        horizon = min(self._turns, default=math.inf)
        try:
            on_loop = asyncio.get_running_loop() is self._loop
        except RuntimeError:
            on_loop = False
        if on_loop:
            self._end_calls(horizon)
        elif self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._end_calls, horizon)
        loop = self._loop
        if not self.active and self._closing and loop is not None and not loop.is_closed():
            if on_loop:
                loop.create_task(self.aclose())
            else:  # a task may only be made on its loop's thread
                loop.call_soon_threadsafe(lambda: loop.create_task(self.aclose()))

    def end_scope(self, scope: str) -> None:
        """The agent of ``scope`` is gone or let go of its MCP sessions: end them on the
        server's loop (from any thread; nothing once that loop is closed)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            on_loop = asyncio.get_running_loop() is loop
        except RuntimeError:
            on_loop = False
        if on_loop:
            self._end_scope(scope)
        else:
            with contextlib.suppress(RuntimeError):  # (closed meanwhile)
                loop.call_soon_threadsafe(self._end_scope, scope)

    def _end_scope(self, scope: str) -> None:
        task = asyncio.get_running_loop().create_task(self.server.end_scope(scope))
        self._ending.add(task)
        task.add_done_callback(self._ending.discard)

    def _end_calls(self, before: float) -> None:
        cancelled = self.server.end_calls(before=before)
        if cancelled:
            log.info("cancelled %d call(s) of %s still running when their turn ended", cancelled, self.name)

    def _close_socket_dir(self) -> None:
        directory, self._socket_dir = self._socket_dir, None
        if directory is not None:
            directory.exit()

    def link(self, call: ToolCall, since: float = -math.inf) -> LocalInvocation | None:
        """The local call behind a completed ``mcpToolCall`` of this host's server, if any,
        among those made since ``since`` (when the linking turn began)."""
        if call.mcp_server != self.name:
            return None
        args = call.args.get("args")
        return self.server.claim(call.mcp_tool, args if isinstance(args, dict) else {}, since)


class TurnScope:
    """What one turn adds to the agent's world: :meth:`enter` before it starts, :meth:`exit` after.

    Example:
        >>> scope = TurnScope(None, "/tmp", {"docs": {"url": "http://127.0.0.1:9/mcp"}})
        >>> scope.allow
        []
    """

    def __init__(self, host: ToolHost | None, workspace: str, servers: dict[str, dict[str, Any]],
                 env: Mapping[str, str] | None = None, *, acp: bool = False,
                 approve_all: bool = False) -> None:
        self.host = host
        self.scope = (env or {}).get(SCOPE_ENV)
        """The scope of the MCP sessions the turn's agent opens (:mod:`.mcp_scopes`)."""
        self.workspace = workspace
        self.servers = dict(servers)
        self.env = dict(os.environ if env is None else env)
        """The agent's environment: where its data dir is (:func:`~.approvals.approvals_file`)."""
        self.acp = acp
        self.approve_all = approve_all
        """The user asked for ``--approve-mcps`` (``AgentConfig(approve_mcps=True)``)."""
        self.allow = host.allow() if host is not None else []
        self._injection: WorkspaceInjection | None = None
        self.approvals: ApprovalInjection | None = None
        """The turn's approval entries (the CLI's ``mcp-approvals.json``), once entered."""
        self.entries: dict[str, dict[str, Any]] = dict(servers)
        """Every server the turn shows the agent (the tool server's entry once entered)."""
        self._counts = (0, 0, 0)
        self._began: float | None = None

    def link(self, call: ToolCall) -> LocalInvocation | None:
        """The local call behind a completed tool call of this turn (see :meth:`ToolHost.link`)."""
        if self.host is None or self._began is None:
            return None
        return self.host.link(call, since=self._began)

    async def enter(self) -> None:
        """Start the tool server if needed, then write the entries (under the workspace's lock)
        and their approval entries (MCP.md §4: what loads exactly these servers, in both modes;
        ``--approve-mcps`` would approve every other server too, and does not reach ACP).

        First of all, the one check that the workspace is there, as a turn without tools
        makes it (:class:`~cursor_agent_api.errors.WorkspaceNotFoundError`, both modes, sync
        and async): before the server starts or any file is written."""
        check_workspace(self.workspace)
        servers = dict(self.servers)
        if self.host is not None:
            await self.host.start()
            servers[self.host.name] = self.host.entry()
            self._counts = (self.host.server.refused, self.host.server.admitted, self.host.server.listed)
        self.entries = servers
        injection = WorkspaceInjection(self.workspace, servers, self.allow)
        injection.enter()
        approvals = ApprovalInjection(approvals_file(self.env, self.workspace),
                                      turn_approval_keys(self.workspace, servers, self.env))
        try:
            approvals.enter()
        except BaseException:
            injection.exit()
            raise
        self._injection, self.approvals = injection, approvals
        if self.host is not None:
            self._began = self.host.turn_started()

    def exit(self, succeeded: bool = False) -> None:
        """Restore the workspace's files and the approvals file (idempotent). ``succeeded``: the
        turn ended with a result (then a tool server the agent never listed is worth a warning)."""
        injection, self._injection = self._injection, None
        if injection is None:
            return
        with contextlib.ExitStack() as after:  # each step runs even if one before it raised
            if self.host is not None and self._began is not None:
                after.callback(self.host.turn_ended, self._began)
                after.callback(self._check_contact, succeeded)
                if not self.acp and self.scope is not None:  # (ACP: its session's, see AcpTransport)
                    after.callback(self.host.end_scope, self.scope)
            if self.approvals is not None:
                after.callback(self.approvals.exit)
            injection.exit()

    def _check_contact(self, succeeded: bool = False) -> None:
        """Warn when the agent reached the server only without the token (MCP.md §3's open
        question), or, after a turn that ended well, never listed its tools (§4: the approval
        entries are an undocumented format; a server the agent did not load is silent)."""
        if self.host is None:
            return
        refused, admitted, listed = self._counts
        server = self.host.server
        if self.host.transport == "http" and server.refused > refused and server.admitted == admitted:
            log.warning("the agent reached the tool server without its token: this CLI build seems "
                        "not to expand ${env:...} in mcp.json headers; set %s=relay", TRANSPORT_ENV)
            return
        # an ACP session lists once, when it is opened: a later turn of it lists nothing
        unlisted = server.listed == 0 if self.acp else server.listed == listed
        if succeeded and unlisted:
            where = self.approvals.path if self.approvals is not None else "the approvals file"
            log.warning("the agent never listed the tools of %s during the turn: it did not load the "
                        "server. Likely cause: this CLI build did not accept the approval entry "
                        "written to %s (an undocumented format)%s", self.host.name, where,
                        (" or ignores the mcpServers of session/new" if self.acp else
                         " or did not honour --approve-mcps" if self.approve_all else
                         "; if this build loads servers in print mode only with --approve-mcps, "
                         "pass AgentConfig(approve_mcps=True), which also approves every server "
                         "of the workspace's and ~/.cursor's mcp.json")
                        + (f" (relay: or it starts stdio servers without its environment, so the relay "
                           f"lacked ${self.host.env_var})" if self.host.transport == "relay" else ""))


def prepare_turn(host: ToolHost | None, config: AgentConfig) -> tuple[AgentConfig, TurnScope]:
    """The turn's config (the token in its environment; ``approve_mcps`` as the user set it:
    the turn's own servers are approved by their entries, not by ``--approve-mcps``) and its
    scope."""
    env = dict(config.env)
    if host is not None:  # http: ${env:…} in the header; relay: the relay inherits it
        env[host.env_var] = host.server.token
        env[SCOPE_ENV] = secrets.token_hex(8)
    turn_config = config.with_overrides(env=env)  # approve_mcps: the user's own choice
    workspace = config.workspace or os.getcwd()
    return turn_config, TurnScope(host, workspace, config.mcp_servers, build_env(turn_config),
                                  acp=config.transport == "acp", approve_all=config.approve_mcps)


class ScopedTurn:
    """A turn inside a :class:`TurnScope`: the scope is entered before the turn starts and left
    when it is done, whatever carries the turn (a process, ACP, a script).

    Every other attribute is the inner turn's (:class:`~cursor_agent_api.runtime.transport.Turn`).
    """

    def __init__(self, inner: Turn, scope: TurnScope) -> None:
        self._inner = inner
        self.scope = scope
        if scope.host is not None:
            inner.transcript.link_local = scope.link

    @property
    def transcript(self) -> Transcript:
        return self._inner.transcript

    @property
    def pid(self) -> int | None:
        return self._inner.pid

    @property
    def done(self) -> bool:
        return self._inner.done

    @property
    def result(self) -> AgentResult | None:
        return self._inner.result

    async def start(self) -> None:
        await self.scope.enter()
        inner_config = getattr(self._inner, "config", None)
        if isinstance(inner_config, AgentConfig) and inner_config.transport == "acp":
            # ACP: the servers also go in session/new's mcpServers (MCP.md §7), the tool
            # server's token resolved there from the turn's environment
            self._inner.config = inner_config.with_overrides(mcp_servers=self.scope.entries)  # type: ignore[attr-defined]
        try:
            await self._inner.start()
        except BaseException:
            self.scope.exit()
            raise
        self._inner.add_done_callback(lambda f: self.scope.exit(_succeeded(f)))

    async def wait(self) -> AgentResult:
        return await self._inner.wait()

    def cancel(self, sig: int = signal.SIGTERM) -> None:
        self._inner.cancel(sig)

    def cancel_threadsafe(self, sig: int = signal.SIGTERM) -> None:
        self._inner.cancel_threadsafe(sig)

    def add_done_callback(self, fn: Callable[[asyncio.Future[AgentResult]], None]) -> None:
        self._inner.add_done_callback(fn)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _succeeded(future: asyncio.Future[AgentResult]) -> bool:
    if future.cancelled() or future.exception() is not None:
        return False
    return bool(future.result().success)


def open_turn(host: ToolHost | None, config: AgentConfig,
              open_inner: Callable[[AgentConfig], Turn]) -> Turn:
    """The client's turn: ``open_inner(config)`` as it is, or inside a :class:`TurnScope` (with
    the token in its config) when the client has tools or the config
    declares ``mcp_servers``."""
    if host is None and not config.mcp_servers:
        return open_inner(config)
    turn_config, scope = prepare_turn(host, config)
    return ScopedTurn(open_inner(turn_config), scope)


def make_host(tools: Iterable[Any] | Any | None) -> ToolHost | None:
    """A :class:`ToolHost` for a client's ``tools=`` (``None`` or empty: none; one tool: a
    list of one).

    Example:
        >>> make_host(None) is None, make_host([]) is None
        (True, True)
    """
    if tools is None:
        return None
    if callable(tools):  # one tool (or a function not decorated, which ToolServer names): [it]
        tools = [tools]
    elif isinstance(tools, (str, bytes, Mapping)) or not isinstance(tools, Iterable):
        raise TypeError(f"tools= takes a list of @tool functions, got {type(tools).__name__}: "
                        f"{tools!r:.80}")
    listed = list(tools)
    return ToolHost(listed) if listed else None

