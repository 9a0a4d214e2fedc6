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

import collections
import inspect
import os
import weakref
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ..config import AgentConfig
from ..protocol import AgentEvent, AgentResult
from ..runtime.sinks import AsyncEventQueue
from .settings import ServerSettings


class AgentStream(Protocol):
    """What the server uses of the client's streaming response."""

    @property
    def pid(self) -> int | None:
        """The agent's pid (== its process group id), once started."""

    @property
    def result(self) -> AgentResult | None:
        """The turn's outcome, once the stream has ended."""

    def __aiter__(self) -> AsyncIterator[AgentEvent]:
        """Events as each line completes."""

    def cancel(self) -> Any:
        """Stop the turn (the client escalates SIGINT/SIGTERM/SIGKILL on the group)."""


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
    )


class _ByteWeightedQueue(AsyncEventQueue):
    """The client's event queue, with events weighed by their line's size and released
    only when the server has **stored** them (:func:`release_events`).

    The client stops reading the agent's stdout while ``high_water`` units are taken
    and not released; an event weighs one unit per started 4 KiB of its line. So the
    client reads ahead a few MiB, not eight 30 MB lines, and not the next big line
    while the server still writes the last one. In ``eager`` mode (the store is
    failing: the server buffers, see :mod:`.runs`) events are released when taken.

    Example:
        >>> q = _ByteWeightedQueue(high_water=4, low_water=1)
        >>> q.put([_Line(b"x" * 20000)]); q.full
        True
        >>> q._took(1); q.full, q.release(1), q.full
        (True, None, False)
    """

    UNIT = 4096

    def __init__(self, high_water: int = 2048, low_water: int = 512) -> None:
        super().__init__(high_water, low_water)
        self._weights: collections.deque[int] = collections.deque()  # per event, in order
        self.eager = False

    def put(self, batch: list[Any]) -> None:
        if self._stopped:
            return
        weight = 0
        for event in batch:
            line = getattr(event, "line", None)
            w = 1 + (len(line) // self.UNIT if isinstance(line, (bytes, str)) else 0)
            self._weights.append(w)
            weight += w
        super().put(batch)
        self._pending += weight - len(batch)

    def _took(self, n: int) -> Callable[[], None] | None:
        if self.eager:
            self.release(n)
        return None

    def release(self, n: int) -> None:
        """``n`` more events (the oldest taken) are stored: the client may read on."""
        weights = self._weights
        total = 0
        for _ in range(min(n, len(weights))):
            total += weights.popleft()
        if total:
            cb = AsyncEventQueue._took(self, total)
            if cb is not None:
                cb()


_QUEUES: weakref.WeakKeyDictionary[Any, _ByteWeightedQueue] = weakref.WeakKeyDictionary()


def release_events(stream: AgentStream, n: int) -> None:
    """Tell the client that ``n`` more events of ``stream`` are stored (see ``_ByteWeightedQueue``)."""
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
            queue.release(len(queue._weights))


@dataclass(slots=True)
class _Line:
    line: bytes


async def open_stream(settings: ServerSettings, launch: AgentLaunch) -> AgentStream:
    """Start the turn; returns the stream to iterate (the process may start lazily)."""
    from ..client import AsyncStreamingResponse
    from ..runtime import AgentRun

    queue = _ByteWeightedQueue()
    stream: Any = AsyncStreamingResponse(
        AgentRun(agent_config(settings, launch), launch.prompt, sink=queue), queue
    )
    _QUEUES[stream] = queue
    if inspect.isawaitable(stream):
        stream = await stream
    if hasattr(stream, "__aenter__"):
        entered = await stream.__aenter__()
        stream = entered if entered is not None else stream
    return stream  # type: ignore[no-any-return]


async def cancel_stream(stream: AgentStream) -> None:
    """Ask the client to stop the turn (whether its ``cancel`` is sync or async)."""
    outcome = stream.cancel()
    if inspect.isawaitable(outcome):
        await outcome


async def wait_stream(stream: AgentStream) -> None:
    """Let a stream whose events are all read finish: the agent reaped, the result set."""
    wait = getattr(stream, "wait", None)
    if wait is not None:
        outcome = wait()
        if inspect.isawaitable(outcome):
            await outcome


async def close_stream(stream: AgentStream) -> None:
    """Release the stream: the client stops the process group if it still runs."""
    exit_ = getattr(stream, "__aexit__", None)
    if exit_ is not None:
        await exit_(None, None, None)
        return
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        outcome = aclose()
        if inspect.isawaitable(outcome):
            await outcome
