"""The server's one door to the client: start an agent turn, get its event stream.

Everything the server knows about :class:`~cursor_agent_api.client.AsyncCursorAgentClient`
is in this module: how a chat's options become an
:class:`~cursor_agent_api.config.AgentConfig` (``keep_events=False,
keep_content=False``: the server stores events itself), how a stream is opened, cancelled and closed.
The rest of the server sees :class:`AgentStream`.

ACP chats share long-lived ``agent acp`` processes (:class:`AcpClients`): one client per
set of process-wide settings (binary, environment, API key, argv flags), each holding the
sessions of the chats that used it last (the latest idle ones: see
:data:`~cursor_agent_api.runtime.acp_transport.MAX_IDLE_SESSIONS`); later runs and other chats
reuse it; it is closed after
``idle_seconds`` without a run and at shutdown. Each run's turn has its own callbacks
(:class:`~.requests.RunSteering`), workspace and session.

Example:
    >>> from cursor_agent_api.server.settings import ServerSettings
    >>> cfg = agent_config(ServerSettings(token="t", agent_binary="/bin/sim"),
    ...                    AgentLaunch(prompt="hi", workspace="/w", model=None, options={}))
    >>> cfg.agent_binary, cfg.keep_events, cfg.keep_content, cfg.workspace
    ('/bin/sim', False, False, '/w')
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..client import AsyncCursorAgentClient, AsyncStreamingResponse
from ..config import DEFAULT_AGENT_BINARY, AgentConfig
from ..errors import AgentNotFoundError
from ..permissions import Plan, Reject
from ..runtime.acp_transport import process_key
from ..runtime.sinks import HeldEventQueue
from .requests import RunSteering
from .settings import ServerSettings

AgentStream = AsyncStreamingResponse
"""What the server iterates: the client's typed async stream."""


@dataclass(frozen=True, slots=True)
class AgentLaunch:
    """What one run asks of the agent.

    ``options`` are the chat's validated options (``force``, ``approve_mcps``,
    ``trust``, ``stream_partial_output``); ``resume`` the agent's chat id.

    Example:
        >>> AgentLaunch("hi", "/w", "sonnet-4.6", {"force": True}).resume is None
        True
    """

    prompt: str
    workspace: str
    model: str | None
    options: dict[str, Any]
    resume: str | None = None
    steering: RunSteering | None = None
    """ACP chats: the run's callbacks, which ask a person (:mod:`.requests`)."""
    clients: AcpClients | None = None
    """ACP chats: the server's shared ``agent acp`` clients (without: a client of its own,
    closed with the run)."""


def simulator_binary() -> str:
    """Path of the bundled simulator (``cursor-agent-sim``) for ``serve --simulate``.

    Example:
        >>> simulator_binary().endswith("cursor-agent-sim")
        True
    """
    from ..sim.locate import sim_binary

    try:
        return sim_binary()
    except FileNotFoundError:
        return "cursor-agent-sim"  # the client then reports AgentNotFoundError with its remedy


def run_binary(settings: ServerSettings) -> str:
    """The agent program the server's runs start: ``agent_binary``, else the bundled
    simulator with ``simulate``, else ``agent`` (the command line refuses ``--simulate`` with
    ``--agent-binary``; in Python, ``agent_binary`` is what runs).

    Example:
        >>> from cursor_agent_api.server.settings import ServerSettings
        >>> run_binary(ServerSettings(token="t")), run_binary(ServerSettings(token="t",
        ...                                                     agent_binary="/bin/sim"))
        ('agent', '/bin/sim')
    """
    if settings.agent_binary is not None:
        return settings.agent_binary
    return simulator_binary() if settings.simulate else DEFAULT_AGENT_BINARY


def unfound_agent(settings: ServerSettings) -> str | None:
    """The agent program the runs would start, when it cannot be found; ``None`` if it is
    there. Resolved as each run resolves it
    (:func:`~cursor_agent_api.runtime.argv.unfound_binary`, with the agent's environment:
    ``--agent-env PATH=…`` when given, ``cursor-agent`` for a missing ``agent``).

    Example:
        >>> from cursor_agent_api.server.settings import ServerSettings
        >>> unfound_agent(ServerSettings(token="t", agent_binary="/no/such/agent"))
        '/no/such/agent'
        >>> unfound_agent(ServerSettings(token="t", agent_binary="sh")) is None
        True
    """
    from ..runtime.argv import unfound_binary

    return unfound_binary(run_binary(settings), agent_env(settings))


def missing_agent(settings: ServerSettings) -> str | None:
    """A warning for ``serve``'s start-up when its runs' agent cannot be found (each run
    would fail with :class:`~cursor_agent_api.errors.AgentNotFoundError`); ``None`` if it is
    there (:func:`unfound_agent`).

    Example:
        >>> from cursor_agent_api.server.settings import ServerSettings
        >>> print(missing_agent(ServerSettings(token="t", agent_binary="/no/such/agent")))
        ... # doctest: +ELLIPSIS
        the agent /no/such/agent cannot be found: every run will fail until it can — install ...
        >>> missing_agent(ServerSettings(token="t", agent_binary="sh")) is None
        True
    """
    binary = unfound_agent(settings)
    if binary is None:
        return None
    return (f"the agent {binary} cannot be found: every run will fail until it can — "
            f"{AgentNotFoundError.cli_remedy}")


SERVER_ENV_PREFIX = "CURSOR_AGENT_API_"
"""The server's own settings (``CURSOR_AGENT_API_TOKEN``, ``…_DATABASE_URL``, ``…_HOME``, …):
never passed on to the agent."""

LIBPQ_ENV = frozenset({
    # PostgreSQL 18's libpq documentation, "Environment Variables": the connection's defaults
    "PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER", "PGPASSWORD", "PGPASSFILE",
    "PGREQUIREAUTH", "PGCHANNELBINDING", "PGSERVICE", "PGSERVICEFILE", "PGOPTIONS", "PGAPPNAME",
    "PGSSLMODE", "PGREQUIRESSL", "PGSSLNEGOTIATION", "PGSSLCOMPRESSION", "PGSSLCERT", "PGSSLKEY",
    "PGSSLCERTMODE", "PGSSLROOTCERT", "PGSSLCRL", "PGSSLCRLDIR", "PGSSLSNI", "PGREQUIREPEER",
    "PGSSLMINPROTOCOLVERSION", "PGSSLMAXPROTOCOLVERSION", "PGMINPROTOCOLVERSION",
    "PGMAXPROTOCOLVERSION", "PGGSSENCMODE", "PGKRBSRVNAME", "PGGSSLIB", "PGGSSDELEGATION",
    "PGCONNECT_TIMEOUT", "PGCLIENTENCODING", "PGTARGETSESSIONATTRS", "PGLOADBALANCEHOSTS",
    # … the session's defaults, and the files libpq reads
    "PGDATESTYLE", "PGTZ", "PGGEQO", "PGSYSCONFDIR", "PGLOCALEDIR",
    # … and its OAuth section's (libpq 18 reads it)
    "PGOAUTHDEBUG",
})
"""libpq's environment variables (the list of PostgreSQL 18's documentation, the same as the
names its ``libpq.so`` reads; asyncpg reads a subset of them). A server on PostgreSQL and every
worker connect with them (docs/distributed.md): they are its database's settings — its password
(``PGPASSWORD``), its TLS key (``PGSSLKEY``), the files that hold them — and never reach the
agent, as the ``CURSOR_AGENT_API_*`` ones."""


def is_server_variable(name: str, *, postgres: bool) -> bool:
    """Whether environment variable ``name`` is the server's own setting, kept from the
    processes it starts (the agent, git): every ``CURSOR_AGENT_API_*`` one; libpq's
    (:data:`LIBPQ_ENV`, case as libpq reads them) when the server's database is PostgreSQL
    (``postgres``; on SQLite they are not the server's, but the user's, and are inherited).

    Example:
        >>> is_server_variable("cursor_agent_api_token", postgres=False)
        True
        >>> is_server_variable("PGPASSWORD", postgres=True), is_server_variable("PGPASSWORD", postgres=False)
        (True, False)
        >>> is_server_variable("PATH", postgres=True)
        False
    """
    return name.upper().startswith(SERVER_ENV_PREFIX) or (postgres and name in LIBPQ_ENV)


def agent_env(settings: ServerSettings, environ: Mapping[str, str] | None = None
              ) -> dict[str, str | None]:
    """The changes the server makes to the environment the agent inherits.

    Every ``CURSOR_AGENT_API_*`` variable of the server's environment is removed (the
    token, the database URL with its password: a prompt of ``run `env``` would show them
    to the agent and its model provider), and on PostgreSQL every libpq variable
    (:func:`is_server_variable`: ``PGPASSWORD``, ``PGSSLKEY``, …, the database's settings);
    then ``--pass-env`` / ``--agent-env`` (``settings.agent_env``) are added — a variable
    named there explicitly is passed even if it is one of the server's (an agent that needs
    its own ``PGHOST``). The rest of the environment (``PATH``, ``HOME``,
    ``CURSOR_API_KEY``, …) is inherited, as when the user runs the agent in a shell.

    Example:
        >>> from cursor_agent_api.server.settings import ServerSettings
        >>> agent_env(ServerSettings(token="t", agent_env={"X": "1"}),
        ...           {"CURSOR_AGENT_API_TOKEN": "t", "PATH": "/bin"})
        {'CURSOR_AGENT_API_TOKEN': None, 'X': '1'}
        >>> agent_env(ServerSettings(token="t", database_url="postgresql+asyncpg://u@db/app",
        ...                          agent_env={"PGHOST": "own"}),
        ...           {"PGPASSWORD": "pw", "PGHOST": "db", "PATH": "/bin"})
        {'PGPASSWORD': None, 'PGHOST': 'own'}
    """
    from ..database_urls import is_postgres

    base = os.environ if environ is None else environ
    postgres = is_postgres(settings.database_url)
    env: dict[str, str | None] = {name: None for name in base
                                  if is_server_variable(name, postgres=postgres)}
    env.update(settings.agent_env)
    return env


def agent_config(settings: ServerSettings, launch: AgentLaunch) -> AgentConfig:
    """The :class:`AgentConfig` of one run.

    The API key comes from the server's settings only (it is never stored); the
    environment is :func:`agent_env`'s. A resume id or model that is not valid (a chat
    id is a UUID, a model slug has no spaces) raises ``ValueError``: it is never passed.
    """
    binary = run_binary(settings)
    opts = launch.options
    env = agent_env(settings)
    acp: dict[str, Any] = {}
    if opts.get("transport") == "acp":
        acp["transport"] = "acp"
        mode = opts.get("mode")
        if isinstance(mode, str) and mode:
            acp["session_mode"] = mode
        steering = launch.steering
        if steering is not None:  # a person answers (the server's own timeout applies)
            acp.update(on_question=steering.on_question, on_plan=steering.on_plan)
            if not opts.get("force", False):  # --force: the agent asks no permission
                acp.update(can_use_tool=steering.can_use_tool, permission_mode="ask")
    return AgentConfig(
        workspace=launch.workspace,
        model=launch.model,
        force_approve=bool(opts.get("force", False)),
        approve_mcps=bool(opts.get("approve_mcps", False)),
        trust=bool(opts.get("trust", False)),
        stream_partial_output=bool(opts.get("stream_partial_output", False)),
        resume=launch.resume,
        api_key=settings.api_key,
        agent_binary=binary,
        env=env,
        timeout=settings.run_timeout,
        idle_timeout=settings.idle_timeout,
        keep_events=False,
        keep_content=False,  # the server stores the events; it reads neither text nor outputs
        **acp,
    )


ACP_IDLE_SECONDS = 300.0
"""How long a shared ``agent acp`` process is kept without a run (:class:`AcpClients`)."""

@dataclass(eq=False)
class _Held:
    key: tuple[tuple[Any, ...], str | None]
    client: AsyncCursorAgentClient
    users: int = 0
    idle: asyncio.TimerHandle | None = None


_log = logging.getLogger(__name__)


async def _late_plan(plan: Plan) -> Reject:
    """The shared clients' answer to a plan that comes between runs (the library's default,
    with no ``on_plan``, would accept it unseen): rejected, and logged.

    Example:
        >>> asyncio.run(_late_plan(Plan("s", "Deploy", "1. make deploy")))
        Reject(reason='the plan came after its run ended: no one could review it')
    """
    _log.warning("the agent proposed a plan (%r) between runs of session %s: rejected",
                 plan.name, plan.session_id or "?")
    return Reject("the plan came after its run ended: no one could review it")


class AcpClients:
    """The server's ``agent acp`` clients, kept across runs (issue 14: a long-lived process
    holding many sessions).

    :meth:`lease` gives a run the client of a process with the run's process-wide settings
    (:func:`~cursor_agent_api.runtime.acp_transport.process_key` and the model: each
    chat's process starts on its model) and :meth:`release` gives it back. A session's runs go to the
    process that ran it last (it holds the session live; no ``session/load``); other chats'
    runs go to the first process with room, so sequential runs of every chat share one
    process. A process runs at most ``turns_per_process`` turns at once (1: Cursor's builds
    are not known to run turns of different sessions at once, and the simulator runs one at
    a time; a run that finds no room gets another process, kept likewise; a session moved to
    it is forgotten by its old one, which loads it again if it runs it later). A client no
    run has used for ``idle_seconds`` is closed (its sessions stay in the agent's store);
    a process that died is restarted by its client on the next turn, which loads its session;
    :meth:`aclose` stops them all.

    The client's own config answers only requests that arrive between turns (a background
    task of the agent asking late): no one can review them, so a call is rejected
    (``permission_mode`` ``"deny"``), a question skipped and a plan rejected (logged:
    :func:`_late_plan`); each turn brings its own callbacks.

    Example:
        >>> import asyncio
        >>> async def demo():
        ...     pool = AcpClients()
        ...     cfg = AgentConfig(transport="acp", agent_binary="/bin/sim", workspace="/w")
        ...     one = pool.lease(cfg)
        ...     pool.release(one)
        ...     two = pool.lease(cfg.with_overrides(workspace="/x"))  # another chat, later
        ...     three = pool.lease(cfg)  # at the same time: another process
        ...     pool.release(two); pool.release(three)
        ...     sizes = len(pool)
        ...     await pool.aclose()
        ...     return one is two, two is three, sizes, len(pool)
        >>> asyncio.run(demo())
        (True, False, 2, 0)
    """

    def __init__(self, idle_seconds: float = ACP_IDLE_SECONDS, turns_per_process: int = 1) -> None:
        self.idle_seconds = idle_seconds
        self.turns_per_process = turns_per_process
        self._held: dict[tuple[Any, ...], list[_Held]] = {}
        self._by_client: dict[int, _Held] = {}
        self._home: dict[str, _Held] = {}  # session id -> the process that ran it last and holds it
        self._closing: set[asyncio.Task[None]] = set()
        self.closed = False

    def __len__(self) -> int:
        """How many clients (processes, once started) are kept."""
        return sum(len(group) for group in self._held.values())

    def lease(self, config: AgentConfig) -> AsyncCursorAgentClient:
        """The client for a run of ``config`` (``config.resume``: its session); give it back
        with :meth:`release` after the run."""
        if self.closed:
            raise RuntimeError("the server's ACP clients are closed (the server is stopping)")
        key = (process_key(config), config.model)
        group = self._held.setdefault(key, [])
        home = self._home.get(config.resume) if config.resume else None
        room = [h for h in group if h.users < self.turns_per_process]
        if home is not None and home in room:
            held = home
        elif room:
            held = room[0]
        else:
            base = config.with_overrides(can_use_tool=None, on_question=None, on_plan=_late_plan,
                                         permission_mode="deny", resume=None, workspace=None,
                                         session_mode=None)
            held = _Held(key, AsyncCursorAgentClient(base))
            group.append(held)
            self._by_client[id(held.client)] = held
        if config.resume:
            self._move(config.resume, held)
        if held.idle is not None:
            held.idle.cancel()
            held.idle = None
        held.users += 1
        return held.client

    def _move(self, session_id: str, held: _Held) -> None:
        old = self._home.get(session_id)
        if old is not None and old is not held:
            old.client._acp.forget(session_id)  # the session now lives in another process
        self._home[session_id] = held

    def release(self, client: AsyncCursorAgentClient, session_id: str | None = None) -> None:
        """A run is done with ``client`` (its session: ``session_id``); the last run starts
        the client's idle clock."""
        held = self._by_client.get(id(client))
        if held is None or held.client is not client:
            return
        if session_id:
            self._move(session_id, held)
        for sid in [s for s, h in self._home.items() if h is held and not held.client._acp.holds(s)]:
            del self._home[sid]  # its process let go of it (the least recently used)
        held.users = max(0, held.users - 1)
        if held.users == 0 and not self.closed:
            held.idle = asyncio.get_running_loop().call_later(self.idle_seconds, self._expire, held)

    def _expire(self, held: _Held) -> None:
        if held.users or held not in self._held.get(held.key, []):
            return
        self._forget(held)
        task = asyncio.get_running_loop().create_task(held.client.aclose())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def _forget(self, held: _Held) -> None:
        if held.idle is not None:
            held.idle.cancel()
            held.idle = None
        group = self._held.get(held.key, [])
        if held in group:
            group.remove(held)
        if not group:
            self._held.pop(held.key, None)
        self._by_client.pop(id(held.client), None)
        for sid in [s for s, h in self._home.items() if h is held]:
            del self._home[sid]

    async def aclose(self) -> None:
        """Stop every process (at shutdown); later leases fail. Idempotent."""
        self.closed = True
        helds = [h for group in self._held.values() for h in group]
        for held in helds:
            self._forget(held)
        await asyncio.gather(*(h.client.aclose() for h in helds), *list(self._closing),
                             return_exceptions=True)


_QUEUES: weakref.WeakKeyDictionary[AgentStream, HeldEventQueue] = weakref.WeakKeyDictionary()
_CLIENTS: weakref.WeakKeyDictionary[
    AgentStream, tuple[AsyncCursorAgentClient, AcpClients | None]] = weakref.WeakKeyDictionary()


def release_events(stream: AgentStream, n: int) -> None:
    """Tell the client that ``n`` more events of ``stream`` are stored: it may read on
    (:class:`~cursor_agent_api.runtime.sinks.HeldEventQueue`)."""
    queue = _QUEUES.get(stream)
    if queue is not None:
        queue.release(n)


def set_eager(stream: AgentStream, eager: bool) -> None:
    """While the store fails, let the client read on into the server's buffer (and now
    release what it holds); once the store is back, hold again."""
    queue = _QUEUES.get(stream)
    if queue is not None:
        queue.eager = eager
        if eager:
            queue.release()


async def open_stream(settings: ServerSettings, launch: AgentLaunch) -> AgentStream:
    """Start the turn (once); the stream to iterate, its events held until stored."""
    queue = HeldEventQueue()
    config = agent_config(settings, launch)
    pool = launch.clients if config.transport == "acp" else None
    if pool is None:
        client = AsyncCursorAgentClient(config)
        stream = client.query_stream(launch.prompt, read_ahead=queue)
    else:
        client = pool.lease(config)
        try:
            stream = client.query_stream(launch.prompt, read_ahead=queue,
                                         **_turn_overrides(client.config, config))
        except BaseException:
            pool.release(client)
            raise
    _QUEUES[stream] = queue
    _CLIENTS[stream] = (client, pool)
    try:
        return await stream.start()
    except BaseException:  # (the agent could not start): nobody will close this stream
        _CLIENTS.pop(stream, None)
        if pool is not None:
            pool.release(client)
        else:
            await client.aclose()
        raise


def _turn_overrides(base: AgentConfig, config: AgentConfig) -> dict[str, Any]:
    """The fields of ``config`` that differ from the shared client's ``base`` (the turn's own)."""
    out = {}
    for f in dataclasses.fields(AgentConfig):
        mine, theirs = getattr(config, f.name), getattr(base, f.name)
        if mine is not theirs and mine != theirs:
            out[f.name] = mine
    return out


async def cancel_stream(stream: AgentStream) -> None:
    """Ask the client to stop the turn (SIGTERM to the group, SIGKILL after grace)."""
    stream.cancel()


async def wait_stream(stream: AgentStream) -> None:
    """Let a stream whose events are all read finish: the agent reaped, the result set."""
    await stream.wait()


async def close_stream(stream: AgentStream) -> None:
    """Release the stream: the client stops the process group if it still runs; a shared
    ``agent acp`` client (:class:`AcpClients`) goes back to the pool, its process running."""
    try:
        await stream.aclose()
    finally:
        held = _CLIENTS.pop(stream, None)
        if held is not None:
            client, pool = held
            if pool is not None:
                result = stream.result
                pool.release(client, result.session_id if result is not None else None)
            else:
                await client.aclose()
