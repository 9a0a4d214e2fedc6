"""The server's one door to the client: start an agent turn, get its event stream.

Everything the server knows about :class:`~cursor_agent_api.client.AsyncCursorAgentClient`
is in this module: how a chat's options become an
:class:`~cursor_agent_api.config.AgentConfig` (``keep_events=False,
keep_content=False``: the server stores events itself), how a stream is opened, cancelled and closed.
The rest of the server sees :class:`AgentStream`.

Example:
    >>> from cursor_agent_api.server.settings import ServerSettings
    >>> cfg = agent_config(ServerSettings(token="t", agent_binary="/bin/sim"),
    ...                    AgentLaunch(prompt="hi", workspace="/w", model=None, options={}))
    >>> cfg.agent_binary, cfg.keep_events, cfg.keep_content, cfg.workspace
    ('/bin/sim', False, False, '/w')
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..client import AsyncCursorAgentClient, AsyncStreamingResponse
from ..config import AgentConfig
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


SERVER_ENV_PREFIX = "CURSOR_AGENT_API_"
"""The server's own settings (``CURSOR_AGENT_API_TOKEN``, ``…_DATABASE_URL``, ``…_HOME``, …):
never passed on to the agent."""


def agent_env(settings: ServerSettings, environ: Mapping[str, str] | None = None
              ) -> dict[str, str | None]:
    """The changes the server makes to the environment the agent inherits.

    Every ``CURSOR_AGENT_API_*`` variable of the server's environment is removed (the
    token, the database URL with its password: a prompt of ``run `env``` would show them
    to the agent and its model provider); then ``--pass-env`` / ``--agent-env``
    (``settings.agent_env``) are added — a variable named there explicitly is passed even
    if it is one of the server's. The rest of the environment (``PATH``, ``HOME``,
    ``CURSOR_API_KEY``, …) is inherited, as when the user runs the agent in a shell.

    Example:
        >>> from cursor_agent_api.server.settings import ServerSettings
        >>> agent_env(ServerSettings(token="t", agent_env={"X": "1"}),
        ...           {"CURSOR_AGENT_API_TOKEN": "t", "PATH": "/bin"})
        {'CURSOR_AGENT_API_TOKEN': None, 'X': '1'}
    """
    base = os.environ if environ is None else environ
    env: dict[str, str | None] = {name: None for name in base
                                  if name.upper().startswith(SERVER_ENV_PREFIX)}
    env.update(settings.agent_env)
    return env


def agent_config(settings: ServerSettings, launch: AgentLaunch) -> AgentConfig:
    """The :class:`AgentConfig` of one run.

    The API key comes from the server's settings only (it is never stored); the
    environment is :func:`agent_env`'s. A resume id or model that is not valid (a chat
    id is a UUID, a model slug has no spaces) raises ``ValueError``: it is never passed.
    """
    binary = settings.agent_binary
    if binary is None:
        binary = simulator_binary() if settings.simulate else "agent"
    opts = launch.options
    env = agent_env(settings)
    acp: dict[str, Any] = {}
    if opts.get("transport") == "acp":
        acp["transport"] = "acp"
        steering = launch.steering
        if steering is not None:  # a person answers (the server's own timeout applies)
            acp.update(can_use_tool=steering.can_use_tool, on_question=steering.on_question,
                       on_plan=steering.on_plan, permission_mode="ask")
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


_QUEUES: weakref.WeakKeyDictionary[AgentStream, HeldEventQueue] = weakref.WeakKeyDictionary()
_CLIENTS: weakref.WeakKeyDictionary[AgentStream, AsyncCursorAgentClient] = weakref.WeakKeyDictionary()


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
    client = AsyncCursorAgentClient(agent_config(settings, launch))
    stream = client.query_stream(launch.prompt, read_ahead=queue)
    _QUEUES[stream] = queue
    _CLIENTS[stream] = client
    return await stream.start()


async def cancel_stream(stream: AgentStream) -> None:
    """Ask the client to stop the turn (SIGTERM to the group, SIGKILL after grace)."""
    stream.cancel()


async def wait_stream(stream: AgentStream) -> None:
    """Let a stream whose events are all read finish: the agent reaped, the result set."""
    await stream.wait()


async def close_stream(stream: AgentStream) -> None:
    """Release the stream: the client stops the process group if it still runs (in ACP
    mode, the run's own ``agent acp`` process: the next run loads the session again)."""
    try:
        await stream.aclose()
    finally:
        client = _CLIENTS.pop(stream, None)
        if client is not None:
            await client.aclose()
