"""The seam through which the client runs a turn: a :class:`Transport` opens :class:`Turn`\\ s.

Shaped like httpx's transports: the client never knows how a turn runs, only this surface.

* :class:`Turn` — one turn of the agent: ``start()``, ``wait()``, ``cancel(sig)``,
  ``cancel_threadsafe(sig)``, ``add_done_callback(fn)``, ``transcript``, ``pid``, ``done``,
  ``result``. A turn folds each event once (``transcript``) and hands the events, in order,
  to the :class:`~.sinks.EventSink` it was opened with, each batch with what each event
  changed (``sink.put(events, changes)``).
* :class:`Transport` — ``open_turn(config, prompt, sink=...)``: a turn, not started.
* :class:`SubprocessTransport` — the agent CLI as a child process in its own group
  (:class:`~.run.AgentRun`); the default (``AgentConfig(transport="print")``).
* :class:`~cursor_agent_api.testing.ScriptTransport` — an in-memory agent playing given lines
  (tests; it lives in :mod:`cursor_agent_api.testing`).

:func:`transport_for` is the one place a config becomes a transport.

Example:
    >>> import asyncio
    >>> from cursor_agent_api.config import AgentConfig
    >>> from cursor_agent_api.testing import ScriptTransport
    >>> script = ScriptTransport(['{"type":"result","result":"hi"}'])
    >>> async def main():
    ...     turn = transport_for(AgentConfig(transport=script)).open_turn(AgentConfig(), "q")
    ...     await turn.start()
    ...     return await turn.wait()
    >>> asyncio.run(main()).result
    'hi'
"""

from __future__ import annotations

import asyncio
import contextlib
import signal as signal_module
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from ..config import AgentConfig
from ..protocol import AgentResult, Transcript
from .sinks import EventSink

__all__ = ["SubprocessTransport", "Transport", "Turn", "run_to_end", "transport_for"]


@runtime_checkable
class Turn(Protocol):
    """One turn of the agent, loop-bound (create, start and use it on one event loop)."""

    @property
    def transcript(self) -> Transcript:
        """The turn's one fold so far."""

    @property
    def pid(self) -> int | None:
        """The agent's pid once started (``None`` for a turn without a process)."""

    @property
    def done(self) -> bool:
        """True once the turn has ended (its result set, nothing of it left running)."""

    @property
    def result(self) -> AgentResult | None:
        """The result once the turn has ended."""

    async def start(self) -> None:
        """Start the turn (``AgentNotFoundError`` when the agent cannot start)."""

    async def wait(self) -> AgentResult:
        """Wait for the end of the turn; cancelling the waiter does not stop the turn. Call
        once :meth:`start` has returned: before (not started, starting, or a start that
        raised), ``RuntimeError``, as there is no turn to wait for."""

    def cancel(self, sig: int = signal_module.SIGTERM) -> None:
        """Stop the turn (on the loop's thread); returns at once."""

    def cancel_threadsafe(self, sig: int = signal_module.SIGTERM) -> None:
        """:meth:`cancel` from any thread."""

    def add_done_callback(self, fn: Callable[[asyncio.Future[AgentResult]], None]) -> None:
        """Call ``fn(future)`` on the loop once the turn has ended (its result; cancelled when
        the loop shut down first). Call once :meth:`start` has returned (before,
        ``RuntimeError``, as :meth:`wait`)."""


@runtime_checkable
class Transport(Protocol):
    """Opens turns: how the agent is run (a process, a script, a protocol session)."""

    def open_turn(self, config: AgentConfig, prompt: str | bytes | None, *,
                  sink: EventSink | None = None) -> Turn:
        """A turn of ``prompt`` with ``config``, not started; its events go to ``sink``."""


async def run_to_end(turn: Turn) -> AgentResult:
    """Start ``turn`` and wait for its result; a cancelled waiter stops the turn (SIGTERM, its
    grace, SIGKILL) and waits for its end before the cancellation propagates.

    Example:
        >>> from cursor_agent_api.testing import ScriptTransport
        >>> turn = ScriptTransport(['{"type":"result","result":"hi"}']).open_turn(AgentConfig(), "q")
        >>> asyncio.run(run_to_end(turn)).result
        'hi'
    """
    await turn.start()
    try:
        return await turn.wait()
    except BaseException:
        turn.cancel(signal_module.SIGTERM)
        with contextlib.suppress(BaseException):
            await turn.wait()
        raise


class SubprocessTransport:
    """The agent CLI as a child process (``agent --print --output-format stream-json``).

    Example:
        >>> from cursor_agent_api.config import AgentConfig
        >>> turn = SubprocessTransport().open_turn(AgentConfig(agent_binary="/bin/true"), "q")
        >>> turn.argv[:2], turn.done
        (['/bin/true', '--print'], False)
    """

    def open_turn(self, config: AgentConfig, prompt: str | bytes | None, *,
                  sink: EventSink | None = None) -> Turn:
        """An :class:`~.run.AgentRun`."""
        from .run import AgentRun

        return AgentRun(config, prompt, sink=sink)


_NAMED: dict[str, Callable[[], Transport]] = {"print": SubprocessTransport}


def transport_for(config: AgentConfig) -> Transport:
    """The transport ``config.transport`` names (or is).

    Example:
        >>> type(transport_for(AgentConfig())).__name__
        'SubprocessTransport'
    """
    chosen = config.transport
    if chosen == "acp":  # a new `agent acp` process per call: a client keeps one (client.py)
        from .acp_transport import AcpTransport

        return AcpTransport(config)
    if isinstance(chosen, str):
        return _NAMED[chosen]()
    return chosen
