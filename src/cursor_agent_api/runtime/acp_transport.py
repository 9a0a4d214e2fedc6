"""The ACP transport: one long-lived ``agent acp`` process per client, many sessions.

:class:`AcpTransport` starts ``agent [flags] acp`` on first use (its own process group,
through :class:`~.acp_connection.AcpConnection`), sends ``initialize`` and never
``authenticate`` (a headless client relies on ``CURSOR_API_KEY`` or a stored login; ACP.md
§2), opens sessions (``session/new``; ``session/load`` for a chat this process does not
hold; a session the agent cannot load is replaced by a new one, with an
``acp:context_reset`` event saying so) and opens turns (:class:`~.acp_turn.AcpTurn`).

It routes what the agent sends: ``session/update`` to the session's running turn;
``session/request_permission``, ``cursor/ask_question`` and ``cursor/create_plan`` to the
turn they belong to (by session, then by tool call id) — or, between turns (a background
task asks late), to the client's own settings; ``cursor/update_todos``, ``cursor/task`` and
``cursor/generate_image`` are answered ``{}`` and become the turn's events (sent as
notifications, Cursor's documented form, they become its events too); anything else gets
``-32601`` (which is what makes Cursor fall back instead of stalling).

If the process dies, the next turn starts a new one and ``session/load``s its session.

It holds at most :data:`MAX_IDLE_SESSIONS` sessions without a running turn (the most recently
used; :attr:`AcpTransport.max_idle_sessions`): a one-off query's session is let go in time
rather than kept for the client's lifetime. A turn on a session let go ``session/load``s it,
as after a restart. The MCP sessions the agent opened on the client's tool server for a
session (tagged with the scope of the turn that sent ``session/new``/``session/load``, see
:mod:`cursor_agent_api.tools.mcp_scopes`) are ended when the session is let go or its process
ends (:attr:`AcpTransport.on_scope_end`).

Its lifetime (:meth:`AcpTransport.retire`, what a client's ``close()`` calls): the process
stops once no turn runs on it, so closing a client lets its running turns end first; a turn
that starts later starts it again (and stops it as it ends). It is loop-bound, and follows
its user to another event loop: the process started on a loop is stopped as that loop ends
(``asyncio.run`` cancels what is left, and the transport's watch task stops it then), or, if
that loop was closed without ending its tasks, when the transport is next used elsewhere;
the sessions are ``session/load``ed in the new process.

Example:
    >>> from cursor_agent_api.config import AgentConfig
    >>> acp_argv(AgentConfig(model="gpt-5", force_approve=True), binary="agent")
    ['agent', '--force', '--model=gpt-5', 'acp']
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from ..config import MCP_SCOPE_ENV as SCOPE_ENV
from ..config import AgentConfig
from ..errors import (
    AcpRequestError,
    AgentTimeoutError,
    AuthenticationError,
    CursorAgentError,
    InvalidModelError,
    SessionError,
)
from ..protocol.acp_codec import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    RpcError,
    RpcNoise,
    RpcNotification,
    RpcRequest,
)
from ..protocol.acp_mcp import acp_mcp_servers
from ..protocol.events import raw_event
from .acp_connection import AcpConnection, RpcFailure
from .acp_setup import SessionSetups
from .acp_steering import Steering
from .argv import build_env, check_workspace, global_flags, resolve_binary, trailing_flags
from .groups import stop_groups
from .stderr import CLASSIFIED_CHARS, known_failure, silent_remedy

if TYPE_CHECKING:
    from ..protocol import AgentEvent
    from .acp_turn import AcpTurn
    from .sinks import EventSink

__all__ = ["ACP_REQUEST_TIMEOUT", "MAX_IDLE_SESSIONS", "AcpTransport", "acp_argv"]

MAX_IDLE_SESSIONS = 100
"""How many sessions without a running turn a transport holds (the most recently used; each
~11 KB here, and an MCP session of the client's tool server): one let go is ``session/load``ed
by the next turn on it."""

ACP_REQUEST_TIMEOUT = 120.0
"""Seconds for a setup request (``initialize``, ``session/new``, ``session/load``…): a lost
message is noticed only by a timeout (ACP.md §1: malformed lines get no answer). A turn with
a ``timeout`` bounds its own setup requests with it instead (``initialize`` excepted: an agent
that does not answer it in this time is broken)."""


def _request_timeout(bounded: bool) -> float | None:
    """A setup request's own bound: ``ACP_REQUEST_TIMEOUT``, or none when its caller (a turn
    with a ``timeout``) bounds it."""
    return ACP_REQUEST_TIMEOUT if bounded else None

PROTOCOL_VERSION = 1
_FIRE_AND_FORGET = frozenset({"cursor/update_todos", "cursor/task", "cursor/generate_image"})
"""Cursor's methods that only tell (ACP.md §9): sent as requests with an id (the wire) or as
notifications (Cursor's docs); either becomes the turn's events."""
_UNLOADABLE = (INVALID_PARAMS, METHOD_NOT_FOUND)
"""A ``session/load`` answered with one of these: the agent cannot load that session
(ACP.md §10; a turn starts a new one)."""
CLIENT_INFO = {"name": "cursor-agent-api", "version": "0.1.0"}


def acp_argv(config: AgentConfig, *, binary: str | None = None) -> list[str]:
    """argv of ``agent acp``: the global flags (before ``acp``), then ``acp``.

    Never the API key (``CURSOR_API_KEY`` in the environment). ``--trust``, ``--force``,
    ``--model`` are honoured before ``acp``; the workspace is each session's ``cwd``.

    Example:
        >>> acp_argv(AgentConfig(trust=True, headers=["X-A: 1"]), binary="agent")
        ['agent', '--trust', '--header=X-A: 1', 'acp']
    """
    return [binary or config.agent_binary, *global_flags(config), *trailing_flags(config), "acp"]


_PER_TURN = frozenset({
    "workspace", "resume", "timeout", "idle_timeout", "stream_partial_output", "keep_events",
    "keep_content", "can_use_tool", "on_question", "on_plan", "permission_mode",
    "allowed_tools", "denied_tools", "permission_timeout", "images", "session_mode",
    "mcp_servers", "result_grace", "output_format", "model",
})
"""The :class:`AgentConfig` fields each turn sets for itself; every other field shapes the
``agent acp`` process (its argv, environment, bounds). ``model`` is the process's
``--model`` and also per turn: a turn whose model differs switches its session
(``session/set_config_option``), so :func:`process_key` leaves it out."""


def process_key(config: AgentConfig) -> tuple[Any, ...]:
    """What makes two ACP configs need different ``agent acp`` processes: every field that is
    not per turn (binary, environment, API key, ``--trust``/``--force``, headers, extra
    arguments, bounds). The library's client keeps one ``agent acp`` per key; the server's
    pool adds the model to it (each chat's process starts on its model).

    Example:
        >>> a = AgentConfig(transport="acp", workspace="/a", resume=None)
        >>> process_key(a) == process_key(a.with_overrides(workspace="/b", session_mode="plan"))
        True
        >>> process_key(a) == process_key(a.with_overrides(model="gpt-5"))
        True
        >>> process_key(a) == process_key(a.with_overrides(api_key="other"))
        False
        >>> process_key(a) == process_key(a.with_overrides(env={SCOPE_ENV: "turn-2"}))
        True
    """
    key: list[Any] = []
    for f in fields(AgentConfig):
        if f.name in _PER_TURN:
            continue
        value = getattr(config, f.name)
        if f.name == "env":  # (a turn's MCP scope is given per session, not to the process)
            value = {k: v for k, v in value.items() if k != SCOPE_ENV}
        if isinstance(value, dict):
            value = tuple(sorted(value.items(), key=lambda kv: str(kv[0])))
        elif isinstance(value, list):
            value = tuple(value)
        key.append((f.name, value))
    return tuple(key)


def _addresses(servers: Mapping[str, Mapping[str, Any]]) -> tuple[Any, ...]:
    """``config.mcp_servers`` as written (before ``${env:…}`` is resolved from a turn's
    environment: the token and the turn's scope travel so, and change per turn), each entry
    whole: a held session whose servers moved or changed (a new port, another header or
    environment) is loaded again, one whose turns differ only in their environment is not.

    Example:
        >>> a = {"t": {"url": "http://127.0.0.1:1/mcp", "headers": {"X": "${env:SCOPE}"}}}
        >>> _addresses(a) == _addresses({"t": {"headers": {"X": "${env:SCOPE}"}, **a["t"]}})
        True
        >>> _addresses(a) == _addresses({"t": {**a["t"], "headers": {"X": "b"}}})
        False
    """
    return tuple((name, json.dumps(entry, sort_keys=True, default=str))
                 for name, entry in servers.items())


@dataclass(slots=True)
class _Session:
    session_id: str
    cwd: str
    generation: int  # the process generation that holds it live
    servers: tuple[Any, ...]  # its MCP servers as written (_addresses)
    turn: AcpTurn | None = None
    scopes: list[str] = field(default_factory=list)  # of the MCP sessions opened for it


class AcpTransport:
    """One ``agent acp`` process for a client, and its sessions. Loop-bound.

    ``config`` gives the process's argv and environment and answers requests that arrive
    between turns; each turn's own config answers that turn's. ``argv``/``env`` override
    what ``config`` builds (tests start a fake agent this way).
    """

    def __init__(self, config: AgentConfig, *, argv: Sequence[str] | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.config = config
        self.env = build_env(config) if env is None else env
        self.env.setdefault("NO_OPEN_BROWSER", "1")  # never a browser login from a library
        self.env.setdefault("BROWSER", "true")
        self.env.pop(SCOPE_ENV, None)  # a turn's, given per session (mcp_servers), never the process's
        self._argv = list(argv) if argv is not None else None
        self._conn: AcpConnection | None = None
        self._lock: asyncio.Lock | None = None
        self._spawn_done: asyncio.Future[None] | None = None  # resolved once the process runs
        self._generation = 0
        self._sessions: dict[str, _Session] = {}  # least recently used first
        self.max_idle_sessions = MAX_IDLE_SESSIONS
        """How many sessions without a running turn are held (the most recently used)."""
        self._background = Steering(config)
        self.agent_capabilities: dict[str, Any] = {}
        self.session_setup = SessionSetups()
        """Each session's ``modes``, ``models`` and ``configOptions``, as the agent last said
        (or the client last set: see :mod:`.acp_setup`)."""
        self.closed = False
        self.retired = False
        """Set by :meth:`retire`: the process stops whenever no turn runs on it."""
        self._turns: set[AcpTurn] = set()  # started and not ended
        self._condemned: set[AcpTurn] = set()  # cancelled, their fallback may stop the process
        self._reprieve: asyncio.Event | None = None  # set once no turn condemns the process
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop of the process
        self._watch: asyncio.Task[None] | None = None
        self._stopping: asyncio.Task[None] | None = None
        self.on_scope_end: Callable[[str], None] | None = None
        """Called with the scope of MCP sessions the agent no longer uses (the session that
        opened them was let go, or its process ended): the client's tool server ends them."""

    # ---- the process -------------------------------------------------------------------

    @property
    def connection(self) -> AcpConnection | None:
        """The current connection (``None`` before the first turn)."""
        return self._conn

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The event loop the process was started on (``None`` before the first turn)."""
        return self._loop

    @property
    def pid(self) -> int | None:
        """The agent's pid (and process group id), while it runs."""
        return self._conn.pid if self._conn is not None and self._conn.alive else None

    def _build_argv(self) -> list[str]:
        if self._argv is not None:
            return list(self._argv)
        return acp_argv(self.config, binary=resolve_binary(self.config, self.env))

    async def connect(self, spawned: asyncio.Future[None] | None = None) -> AcpConnection:
        """The live connection: started (and initialized) on first use or after a death.

        ``spawned`` (if given) is resolved once no :class:`~cursor_agent_api.errors.AgentNotFoundError` can
        come any more: the process runs (``initialize`` may still be unanswered) or another
        turn is starting it. Cancelled while ``initialize`` is unanswered, the process group
        is stopped (an agent that does not answer ``initialize`` is broken); the next turn
        starts a new one."""
        if self.closed:
            raise RuntimeError("the ACP transport was closed")
        await self._follow_loop()
        await self._spare_condemned()
        if self._lock is None:
            self._lock = asyncio.Lock()
        if spawned is not None and self._lock.locked():  # another turn is starting the process
            started = self._spawn_done
            if started is None or started.done():
                spawned.set_result(None)
            else:
                def resolve(_: object) -> None:
                    if not spawned.done():
                        spawned.set_result(None)

                started.add_done_callback(resolve)
        async with self._lock:
            conn = self._conn
            if conn is not None and conn.alive:
                if spawned is not None and not spawned.done():
                    spawned.set_result(None)
                return conn
            if conn is not None:
                await conn.close()
            cfg = self.config
            check_workspace(cfg.workspace)  # the process's cwd: not a "binary not found"
            conn = AcpConnection(self._build_argv(), env=self.env, cwd=cfg.workspace,
                                 on_request=self._on_request, on_notification=self._on_notification,
                                 on_stray_error=self._on_stray_error, on_noise=self._on_noise,
                                 on_overflow=self._on_overflow,
                                 max_line_bytes=cfg.max_line_bytes,
                                 stderr_tail_bytes=cfg.stderr_tail_bytes,
                                 kill_grace=cfg.kill_grace)
            loop = asyncio.get_running_loop()
            started = self._spawn_done = loop.create_future()
            try:
                await conn.start()
                self._generation += 1
                self._conn = conn
            finally:
                started.set_result(None)
            if spawned is not None and not spawned.done():
                spawned.set_result(None)
            self._watch = loop.create_task(self._watch_process(conn, self._generation))
            self._watch._log_destroy_pending = False  # type: ignore[attr-defined]  # (a loop closed as it ran)
            try:
                init = await conn.request("initialize", {
                    "protocolVersion": PROTOCOL_VERSION,
                    "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False},
                                           "terminal": False},
                    "clientInfo": CLIENT_INFO}, timeout=ACP_REQUEST_TIMEOUT)
            except AgentTimeoutError as exc:  # its own bound, which no setting raises: the
                await conn.close()            # agent is broken (not "raise timeout")
                raise AgentTimeoutError(exc.message, remedy=silent_remedy(
                    conn.argv[0] if conn.argv else None)) from None
            except BaseException:
                await conn.close()
                raise
            caps = init.get("agentCapabilities") if isinstance(init, dict) else None
            self.agent_capabilities = caps if isinstance(caps, dict) else {}
            return conn

    @property
    def supports_images(self) -> bool:
        """Whether the agent advertised ``promptCapabilities.image``."""
        prompt = self.agent_capabilities.get("promptCapabilities")
        return isinstance(prompt, dict) and prompt.get("image") is True

    async def kill(self) -> None:
        """Stop the process group now (cancel's fallback); live sessions are reloaded later."""
        conn = self._conn
        if conn is not None:
            await conn.close()

    async def aclose(self) -> None:
        """Stop the agent's process group; the transport cannot be used afterwards."""
        self.closed = True
        await self._follow_loop()
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close()

    # ---- lifetime: turns, retirement, the event loop ------------------------------------

    def condemn(self, turn: AcpTurn) -> None:
        """``turn`` was cancelled and its process is stopped unless the agent answers the
        prompt first (``kill_grace``): until then no new turn or session is given to the process
        (:meth:`connect` waits), so none is lost with it; once stopped, the next starts a new one.
        A turn that has ended (:meth:`turn_ended`: pardoned already) condemns nothing."""
        if turn in self._turns:
            self._condemned.add(turn)

    def _pardon(self, turn: AcpTurn) -> None:
        """``turn`` has ended (its process kept or stopped): it condemns it no more."""
        self._condemned.discard(turn)
        if not self._condemned and self._reprieve is not None:
            self._reprieve.set()

    async def _spare_condemned(self) -> None:
        """Wait while a cancelled turn may still have the live process stopped (see
        :meth:`condemn`; at most its ``kill_grace`` and the stop)."""
        while self._condemned and self._conn is not None and self._conn.alive:
            if self._reprieve is None or self._reprieve.is_set():
                self._reprieve = asyncio.Event()
            await self._reprieve.wait()

    def turn_began(self, turn: AcpTurn) -> None:
        """``turn`` starts (before it connects): the process stays while it runs."""
        self._turns.add(turn)

    async def turn_ended(self, turn: AcpTurn) -> None:
        """``turn`` has ended: once retired, the process stops with the last turn (awaited,
        so the turn's result comes once its process is gone)."""
        self._turns.discard(turn)
        self._pardon(turn)
        if self.retired and not self._turns:
            await self._stop_if_idle()

    def turn_dropped(self, turn: AcpTurn) -> None:
        """``turn``'s start was interrupted (it never ran): as :meth:`turn_ended`, the stop
        in a task of its own."""
        self._turns.discard(turn)
        self._pardon(turn)
        if self.retired and not self._turns and self._conn is not None:
            self._stopping = asyncio.get_running_loop().create_task(self._stop_if_idle())

    async def retire(self) -> None:
        """Stop the process now if no turn runs, else once the last running turn has ended
        (a client's ``close()``). A turn that starts later starts it again, and it stops as
        that turn ends; :meth:`reuse` undoes this (the client is in use again)."""
        self.retired = True
        await self._follow_loop()
        if not self._turns:
            await self._stop_if_idle()

    def reuse(self) -> None:
        """The client is in use again (a call after ``close()``): keep the process between
        turns again."""
        self.retired = False

    async def _stop_if_idle(self) -> None:
        """Stop the process if no turn runs on it (checked under the start lock: a turn that
        is connecting meanwhile keeps it)."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            conn = self._conn
            if self._turns or conn is None:
                return
            self._conn = None
            await conn.close()

    async def _watch_process(self, conn: AcpConnection, generation: int) -> None:
        """Lives as long as ``conn``'s process (of ``generation``): once it has ended, the
        MCP sessions it opened end too. Cancelled while it runs — its loop is ending
        (``asyncio.run`` cancels the tasks left) — it stops the process there, on its own
        loop, so that no ``agent acp`` outlives the loop that reads it."""
        process = conn.process
        if process is None:
            return
        try:
            await process.wait()
        except asyncio.CancelledError:
            if self._conn is conn:
                self._conn = None
            with contextlib.suppress(Exception):
                await conn.close()
            raise  # (the tool server's loop ends too: its MCP sessions with it)
        self._process_ended(generation)

    def _process_ended(self, generation: int) -> None:
        """The process of ``generation`` is gone: so are the MCP sessions it opened."""
        for state in self._sessions.values():
            if state.generation == generation:
                self._end_scopes(state)

    def _end_scopes(self, state: _Session) -> None:
        scopes, state.scopes = state.scopes, []
        for scope in scopes:
            self._end_scope(scope)

    def _end_scope(self, scope: str | None) -> None:
        if scope is not None and self.on_scope_end is not None:
            self.on_scope_end(scope)

    async def _follow_loop(self) -> None:
        """Bind the transport to the running loop. Used last on another loop that is still
        running (another thread's), ``RuntimeError``; on one that has closed or stopped, the
        process started there is stopped (its group signalled from here: that loop cannot
        run it any more; not once gone), the turns begun there forgotten, and the next use
        starts a new process on this loop, where the sessions are ``session/load``ed."""
        loop = asyncio.get_running_loop()
        old = self._loop
        if old is loop:
            return
        if old is not None and old.is_running() and not old.is_closed():
            raise RuntimeError(
                "this client's `agent acp` runs on another event loop, which is still "
                "running: use one AsyncCursorAgentClient per event loop (or close it there "
                "first)")
        self._loop = loop
        self._lock = None
        self._spawn_done = None
        self._watch = self._stopping = None
        self._turns = {t for t in self._turns if t.loop is loop}
        self._condemned = {t for t in self._condemned if t.loop is loop}
        self._reprieve = None
        for state in self._sessions.values():
            state.turn = None  # (a turn of the old loop never ends)
        conn, self._conn = self._conn, None
        if conn is not None:
            self._process_ended(self._generation)
        if conn is not None and conn.process is not None:
            process = conn.process
            if process.alive():  # (once gone, its group's number may be someone else's)
                await asyncio.to_thread(stop_groups, [process.pgid], grace=conn.kill_grace)
            with contextlib.suppress(Exception):  # its transport belongs to the old loop
                process.release()

    # ---- sessions ----------------------------------------------------------------------

    def _cwd(self, config: AgentConfig) -> str:
        return os.path.abspath(config.workspace or os.getcwd())

    def _remember(self, session_id: str, cwd: str, result: Any,
                  servers: tuple[Any, ...]) -> _Session:
        old = self._sessions.pop(session_id, None)
        if old is not None:  # (re)loaded: the agent replaced the session's MCP sessions
            self._end_scopes(old)
        state = self._sessions[session_id] = _Session(  # (the newest)
            session_id, cwd, self._generation, servers)
        self.session_setup.remember(session_id, result)  # (re)loaded: the answer says its setup
        self._trim()
        return state

    def is_live(self, session_id: str) -> bool:
        """Whether the current process holds ``session_id`` (it was opened or loaded on it: a
        prompt for it needs no ``session/load``)."""
        state = self._sessions.get(session_id)
        return state is not None and state.generation == self._generation \
            and self._conn is not None

    def holds(self, session_id: str) -> bool:
        """Whether this transport holds ``session_id`` (a turn on it needs no ``session/load``
        unless the process was restarted)."""
        return session_id in self._sessions

    def _trim(self) -> None:
        """Let go of the least recently used sessions without a running turn beyond
        :attr:`max_idle_sessions`."""
        idle = [sid for sid, state in self._sessions.items()
                if state.turn is None or state.turn.done]
        for sid in idle[:max(0, len(idle) - self.max_idle_sessions)]:
            self._drop(sid)

    def _drop(self, session_id: str) -> None:
        """Forget ``session_id`` here (and end its MCP sessions): a later turn on it
        ``session/load``s it."""
        state = self._sessions.pop(session_id, None)
        if state is not None:
            self._end_scopes(state)
        self.session_setup.pop(session_id, None)

    @staticmethod
    def _scope(config: AgentConfig) -> str | None:
        """The scope of the MCP sessions ``config``'s turn makes the agent open."""
        scope = config.env.get(SCOPE_ENV)
        return scope if isinstance(scope, str) and scope else None

    def mcp_servers(self, config: AgentConfig) -> list[dict[str, Any]]:
        """``mcpServers`` of ``session/new``/``session/load``: ``config.mcp_servers`` (with the
        client's tool server, which the turn adds there) in ACP's shape, ``${env:…}`` resolved
        from the turn's environment (the token goes on the agent's stdin, never in argv)."""
        env = {**self.env, **{k: v for k, v in config.env.items() if v is not None}}
        return acp_mcp_servers(config.mcp_servers, env)

    async def new_session(self, config: AgentConfig, *, bounded: bool = True) -> str:
        """``session/new`` in ``config``'s workspace: a new session's id (not yet prompted).
        ``bounded=False``: no ``ACP_REQUEST_TIMEOUT`` (the caller has a deadline of its own)."""
        check_workspace(config.workspace)
        conn = await self.connect()
        cwd = self._cwd(config)
        scope = self._scope(config)
        servers = self.mcp_servers(config)
        try:
            result = await conn.request("session/new", {"cwd": cwd, "mcpServers": servers},
                                        timeout=_request_timeout(bounded))
            new_id = result.get("sessionId") if isinstance(result, dict) else None
            if not isinstance(new_id, str) or not new_id:
                raise SessionError("the agent answered session/new without a sessionId")
        except BaseException as exc:
            self._end_scope(scope)  # no session of ours holds what it opened
            if isinstance(exc, AcpRequestError):
                raise self.typed_error(exc) from None
            raise
        state = self._remember(new_id, cwd, result, _addresses(config.mcp_servers))
        if scope is not None:
            state.scopes.append(scope)
        return new_id

    async def open_session(self, config: AgentConfig, turn: AcpTurn,
                           notes: list[AgentEvent]) -> str:
        """The session for ``turn``: the live one for ``config.resume``, a loaded one, or a
        new one; registers ``turn`` as its running turn. ``notes`` gets what to tell the user
        (``acp:context_reset``). With a ``config.timeout`` (the turn's deadline), the requests
        have no ``ACP_REQUEST_TIMEOUT`` of their own."""
        bounded = config.timeout is None
        conn = await self.connect()
        sid = config.resume
        state = self._sessions.get(sid) if sid is not None else None
        if state is not None and state.generation == self._generation \
                and state.turn is not None and not state.turn.done:
            raise SessionError(f"session {state.session_id} is running a turn already: one "
                               "prompt at a time per session")
        # (a held session whose MCP servers moved — the client's tool server started again on
        # a new port — is loaded again: the agent learns where they are only then)
        if sid is not None and (state is None or state.generation != self._generation
                                or state.servers != _addresses(config.mcp_servers)):
            cwd = state.cwd if state is not None else self._cwd(config)
            turn.waiting_for = "session/load"
            try:
                # replayed history arrives as updates before the answer: no turn is
                # registered yet, so it is dropped (the caller has its own history)
                state = await self._load(conn, sid, cwd, config, bounded=bounded)
            except AcpRequestError as exc:
                if exc.code not in _UNLOADABLE:
                    raise self.typed_error(exc) from None
                notes.append(turn.mapper.note(
                    "context_reset", previous_session_id=sid,
                    message=f"the agent could not load session {sid} ({exc}); a new session "
                            "starts without the earlier turns"))
                state = None
                sid = None
        if sid is None or state is None:
            turn.waiting_for = "session/new"
            state = self._sessions[await self.new_session(config, bounded=bounded)]
        if state.turn is not None and not state.turn.done:
            raise SessionError(f"session {state.session_id} is running a turn already: one "
                               "prompt at a time per session")
        state.turn = turn
        return state.session_id

    @staticmethod
    def typed_error(exc: AcpRequestError) -> CursorAgentError:
        """The typed error for an agent's error answer: a login it needs (``-32000``), an API
        key it refused ("Failed to initialize session services", ACP.md §2), what print
        mode's stderr rules name (:func:`~.stderr.known_failure`: a usage limit…), else
        ``exc``. A model it refuses stays ``exc``: print mode's ``InvalidModelError`` points
        to print mode's slugs, and ACP's model ids are the agent's own (``exc`` says so)."""
        if exc.code == -32000 or "Authentication required" in str(exc):
            return AuthenticationError(f"the agent needs a login: {exc.message}")
        if "failed to initialize session services" in exc.message.lower():
            return AuthenticationError(f"{exc.message}: Cursor's answer to an invalid API key")
        known = known_failure(exc.message[:CLASSIFIED_CHARS])
        if known is not None and known[0] is not InvalidModelError:
            cls, what = known
            return cls(f"{what}: {exc.message}")
        return exc

    def forget(self, session_id: str) -> None:
        """The session went on in another process: the next turn here ``session/load``s it
        again (its state here is old). A session with a running turn is kept."""
        state = self._sessions.get(session_id)
        if state is not None and (state.turn is None or state.turn.done):
            self._drop(session_id)

    def release(self, session_id: str, turn: AcpTurn) -> None:
        """``turn`` is over: its session takes the next prompt (and is the most recently
        used of the sessions held)."""
        state = self._sessions.get(session_id)
        if state is not None and state.turn is turn:
            state.turn = None
            self._sessions[session_id] = self._sessions.pop(session_id)
            self._trim()

    async def _load(self, conn: AcpConnection, session_id: str, cwd: str, config: AgentConfig,
                    *, bounded: bool) -> _Session:
        """``session/load`` of ``session_id`` in ``cwd`` with ``config``'s MCP servers: held
        from now on, with the setup the answer gives. An error answer is raised as it is."""
        scope = self._scope(config)
        servers = self.mcp_servers(config)
        try:
            result = await conn.request("session/load", {
                "sessionId": session_id, "cwd": cwd, "mcpServers": servers},
                                        timeout=_request_timeout(bounded))
        except BaseException:
            self._end_scope(scope)
            raise
        state = self._remember(session_id, cwd, result, _addresses(config.mcp_servers))
        if scope is not None:
            state.scopes.append(scope)
        return state

    async def _session_request(self, method: str, params: dict[str, Any], *,
                               bounded: bool = True) -> Any:
        """``method`` on the session ``params`` name (``session/load``ed first when this
        process does not hold it: one the agent cannot load is a :class:`SessionError`)."""
        conn = await self.connect()
        sid = params.get("sessionId")
        if isinstance(sid, str):
            state = self._sessions.get(sid)
            if state is None or state.generation != self._generation:
                cwd = state.cwd if state is not None else self._cwd(self.config)
                try:
                    await self._load(conn, sid, cwd, self.config, bounded=bounded)
                except AcpRequestError as exc:
                    if exc.code not in _UNLOADABLE:
                        raise self.typed_error(exc) from None
                    raise SessionError(f"the agent could not load session {sid} "
                                       f"({exc.message}); a query with resume= that id starts "
                                       "a new session instead") from None
        try:
            return await conn.request(method, params, timeout=_request_timeout(bounded))
        except AcpRequestError as exc:
            raise self.typed_error(exc) from None

    async def set_mode(self, session_id: str, mode_id: str, *, bounded: bool = True) -> None:
        """``session/set_mode``: ``agent``, ``plan`` (read-only planning) or ``ask``
        (``bounded=False``: no ``ACP_REQUEST_TIMEOUT``, the caller has a deadline)."""
        await self._session_request("session/set_mode", {"sessionId": session_id,
                                                         "modeId": mode_id}, bounded=bounded)
        self.session_setup.mode_set(session_id, mode_id)

    def model_of(self, session_id: str) -> str | None:
        """The session's model id, as the agent last said or the client last set
        (``models.currentModelId``)."""
        return self.session_setup.model_of(session_id)

    def model_id_for(self, session_id: str, model: str) -> str:
        """The id of ``model`` (a slug or an id) among the session's ``availableModels``
        (:meth:`.acp_setup.SessionSetups.model_id_for`)."""
        return self.session_setup.model_id_for(session_id, model)

    async def set_model(self, session_id: str, model: str, *, bounded: bool = True) -> str:
        """Switch the session to ``model`` (``session/set_config_option``); its id."""
        model_id = self.model_id_for(session_id, model)
        await self.set_config_option(session_id, "model", model_id, bounded=bounded)
        return model_id

    def session_mode(self, session_id: str) -> str | None:
        """The session's mode, as the agent last said or the client last set."""
        return self.session_setup.mode_of(session_id)

    async def set_config_option(self, session_id: str, config_id: str, value: str, *,
                                bounded: bool = True) -> Any:
        """``session/set_config_option`` (``model`` or ``mode``); the refreshed options. The
        session's setup follows (a later turn asking another mode or model switches back)."""
        result = await self._session_request("session/set_config_option", {
            "sessionId": session_id, "configId": config_id, "value": value}, bounded=bounded)
        self.session_setup.option_set(session_id, config_id, value, result)
        return result

    def answer_between_turns(self, config: AgentConfig) -> None:
        """Requests that belong to no running turn are answered by ``config``'s settings
        (the client's own; by default the first turn's)."""
        self._background = Steering(config)

    # ---- what the agent sends ----------------------------------------------------------

    def _turn_for(self, params: dict[str, Any]) -> AcpTurn | None:
        """The running turn a message belongs to: by its session; without one (Cursor's
        ``cursor/*`` requests), by its tool call id, or the only running turn. With several
        running turns and no match, none: the request is answered between-turns, never by
        another session's callbacks."""
        sid = params.get("sessionId")
        if isinstance(sid, str):
            state = self._sessions.get(sid)
            # (a session of an older process is being loaded on this one: what the agent
            # sends for it now is its replayed history, no running turn's)
            return state.turn if state is not None and state.generation == self._generation \
                and state.turn is not None and not state.turn.done else None
        running = self._running_turns()
        call_id = params.get("toolCallId")
        if isinstance(call_id, str):
            for turn in running:
                if turn.mapper.knows(call_id):
                    return turn
        return running[0] if len(running) == 1 else None

    def _running_turns(self) -> list[AcpTurn]:
        """The turns running on the current process, each once (a turn whose session could
        not be loaded again on it runs in a new session: its old session's state, of an older
        process, still names it)."""
        return list(dict.fromkeys(
            s.turn for s in self._sessions.values()
            if s.generation == self._generation and s.turn is not None and not s.turn.done))

    def _on_noise(self, noise: RpcNoise) -> None:
        """A stdout line that is not JSON-RPC (a banner, a warning): a ``RAW`` event of each
        running turn, as print mode shows such lines."""
        for turn in self._running_turns():
            event = raw_event(noise.line or noise.reason.encode())
            event.data["transport"] = "acp"
            event.data["reason"] = noise.reason
            turn.deliver([event])

    def _on_stray_error(self, error: RpcError) -> None:
        """An error answer to no request: a build that does not know ``session/cancel``
        answers it ``-32601``; the turns being cancelled fall back to stopping the process."""
        if error.code != METHOD_NOT_FOUND:
            return
        for turn in self._running_turns():
            if turn.cancelling:
                turn.escalate("cancel_unsupported")

    def _on_notification(self, note: RpcNotification) -> None:
        """``session/update`` (to the session's setup, then its running turn) and Cursor's
        fire-and-forget methods in their documented form (ACP.md §9), as their requests."""
        if note.method in _FIRE_AND_FORGET:
            self._fire_and_forget(note.method, note.params)
            return
        if note.method != "session/update":
            return
        update = note.params.get("update")
        if not isinstance(update, dict):
            return
        sid = note.params.get("sessionId")
        if isinstance(sid, str) and sid in self._sessions:
            self.session_setup.on_update(sid, update)  # a mode or option the agent changed
        turn = self._turn_for(note.params)
        if turn is not None:
            turn.on_update(update)

    def _fire_and_forget(self, method: str, params: dict[str, Any]) -> None:
        """``cursor/update_todos``, ``cursor/task`` or ``cursor/generate_image`` (a request or
        a notification): the events of the turn it belongs to (nothing between turns)."""
        turn = self._turn_for(params)
        if turn is None:
            return
        if method == "cursor/update_todos":
            turn.deliver(turn.mapper.todos(params))
        elif method == "cursor/task":
            turn.deliver(turn.mapper.task(params))
        else:
            turn.deliver([turn.mapper.note("generate_image", params=params)])

    @staticmethod
    def _on_overflow(request: RpcRequest) -> Any:
        """A request beyond the connection's pending cap: a permission request is answered
        ``cancelled`` (the agent goes on without the call), anything else refused."""
        if request.method == "session/request_permission":
            return {"outcome": {"outcome": "cancelled"}}
        raise RpcFailure(INTERNAL_ERROR, "too many pending requests")

    async def _on_request(self, request: RpcRequest) -> Any:
        method, params = request.method, request.params
        if method in _FIRE_AND_FORGET:  # answered {} (the wire's form, ACP.md §9)
            self._fire_and_forget(method, params)
            return {}
        turn = self._turn_for(params)
        steering = turn.steering if turn is not None else self._background
        if method == "session/request_permission":
            return await steering.permission(request.id, params)
        if method == "cursor/ask_question":
            return await steering.question(request.id, params)
        if method == "cursor/create_plan":
            return await steering.plan(request.id, params)
        raise RpcFailure(METHOD_NOT_FOUND, f"Method not found: {method}")

    def open_turn(self, config: AgentConfig, prompt: str | bytes | None, *,
                  sink: EventSink | None = None) -> AcpTurn:
        """A turn of ``config`` (``config.resume``: the session) with ``prompt``; call
        ``start()`` on it. Its events are folded once and go to ``sink`` with their changes."""
        from .acp_turn import AcpTurn

        return AcpTurn(self, config, prompt, sink=sink)
