"""The public face: :class:`CursorAgentClient` (sync) and :class:`AsyncCursorAgentClient`.

Both drive the same async core, :class:`~cursor_agent_api.runtime.AgentRun`
(the lifecycle rules are written once, there): the async client on the
caller's event loop, the sync client on a private event-loop thread
(:class:`~cursor_agent_api.runtime.LoopThread`), so the sync API also works
inside a running event loop (a notebook). Also here: the stream objects
:class:`StreamingResponse` / :class:`AsyncStreamingResponse` and the
module-level :func:`query` / :func:`query_stream` of seed 004.

What does not live here: parsing (:mod:`cursor_agent_api.protocol`), processes
(:mod:`cursor_agent_api.runtime`), multi-turn chats (:mod:`cursor_agent_api.sessions`).

Example:
    >>> from cursor_agent_api import CursorAgentClient, AgentConfig, EventType
    >>> client = CursorAgentClient(AgentConfig(model="sonnet-4.6", trust=True))  # doctest: +SKIP
    >>> result = client.query("What is 2+2?")                                    # doctest: +SKIP
    >>> result.raise_for_error().result                                          # doctest: +SKIP
    'The answer is 4.'
    >>> with client.query_stream("Write a story") as stream:                     # doctest: +SKIP
    ...     for event in stream:
    ...         if event.type is EventType.ASSISTANT_DELTA:
    ...             print(event.text, end="")
    ...         if len(stream.events) > 100:
    ...             stream.cancel()
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import functools
import math
import signal as signal_module
import subprocess
import time
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Generator, Iterator
from types import TracebackType
from typing import Any, TypeVar

from .config import AgentConfig
from .protocol import AgentEvent, AgentResult, Changes, Transcript
from .protocol.event_log import EventLog
from .runtime.acp_transport import AcpTransport, process_key
from .runtime.commands import (
    DEFAULT_COMMAND_TIMEOUT,
    AccountStatus,
    ModelInfo,
    create_chat,
    fetch_models,
    fetch_status,
)
from .runtime.portal import LoopThread, wait_for
from .runtime.sinks import END, STOPPED, AsyncEventQueue, EventSink, ThreadEventQueue
from .runtime.stop_policy import stop_signal
from .runtime.transport import Turn, run_to_end, transport_for

__all__ = [
    "AsyncCursorAgentClient",
    "AsyncStreamingResponse",
    "CursorAgentClient",
    "StreamingResponse",
    "query",
    "query_stream",
]

_EMPTY: list[AgentEvent] = []

T = TypeVar("T")
R = TypeVar("R")


def _make_config(config: AgentConfig | None, fields: dict[str, Any]) -> AgentConfig:
    if config is None:
        return AgentConfig(**fields)
    if not isinstance(config, AgentConfig):
        raise TypeError(f"config must be an AgentConfig, got {type(config).__name__}")
    return config.with_overrides(**fields)




class _AcpHolder:
    """The client's ``agent acp`` transports (``AgentConfig(transport="acp")``): one per set
    of process-wide settings (:func:`~cursor_agent_api.runtime.acp_transport.process_key`:
    binary, environment, API key, flags), made on first use and kept for every later ACP turn
    with those settings; a turn with another model switches its session instead. Requests
    that arrive between turns are answered by the client's own ``config`` (not by the
    callbacks of whichever turn came first).

    :meth:`aclose` (the client's close) retires them: each process stops once the turns
    running on it have ended; a later call on the client keeps them between turns again.
    Each follows the client to another event loop (see
    :class:`~cursor_agent_api.runtime.acp_transport.AcpTransport`)."""

    def __init__(self, config: AgentConfig | None = None,
                 on_scope_end: Callable[[str], None] | None = None) -> None:
        self.transports: dict[tuple[Any, ...], AcpTransport] = {}
        self.config = config
        self.on_scope_end = on_scope_end  # the client's tool server ends those MCP sessions

    def open(self, config: AgentConfig, prompt: str | bytes, sink: EventSink | None, *,
             reuse: bool = True) -> Turn:
        """A turn of ``prompt``: on the client's ``agent acp`` in ACP mode, else on the
        transport the config names (:func:`~cursor_agent_api.runtime.transport.transport_for`).
        ``reuse``: as in :meth:`get`."""
        if config.transport != "acp":
            return transport_for(config).open_turn(config, prompt, sink=sink)
        return self.get(config, reuse=reuse).open_turn(config, prompt, sink=sink)

    def get(self, config: AgentConfig, *, reuse: bool = True) -> AcpTransport:
        """The ``agent acp`` transport of ``config``'s process settings (made on first use).
        One that :meth:`aclose` retired is kept between turns again (the client is in use
        again), unless ``reuse`` is false: the turn of a stream made before that close (a
        session's deferred stream, opened at its start) runs on it and it stops after."""
        if config.transport != "acp":
            raise ValueError("session modes and options exist in ACP mode only: "
                             "AgentConfig(transport='acp')")
        key = process_key(config)
        transport = self.transports.get(key)
        if transport is None or transport.closed:
            made = transport_for(config)
            assert isinstance(made, AcpTransport)
            if self.config is not None:
                made.answer_between_turns(self.config)
            made.on_scope_end = self.on_scope_end
            transport = self.transports[key] = made
        elif transport.retired and reuse:
            transport.reuse()  # in use again after close(): kept between turns again
        return transport

    def _holding(self, session_id: str, *, live: bool = True) -> AcpTransport | None:
        """The transport whose process holds ``session_id`` (``live``: not closed), if any."""
        for transport in self.transports.values():
            if session_id in transport.session_setup and not (live and transport.closed):
                if live and transport.retired:
                    transport.reuse()
                return transport
        return None

    def of_session(self, session_id: str, config: AgentConfig) -> AcpTransport:
        """The transport whose process holds ``session_id`` (else the one of ``config``)."""
        return self._holding(session_id) or self.get(config)

    def holds(self, session_id: str) -> bool:
        """Whether one of these transports holds ``session_id`` (each lets go of the least
        recently used beyond its ``max_idle_sessions``)."""
        return any(t.holds(session_id) for t in self.transports.values())

    def forget(self, session_id: str) -> None:
        """The session moved to another process: none of these holds it any more."""
        for transport in self.transports.values():
            transport.forget(session_id)

    def session_setup(self, session_id: str) -> dict[str, Any]:
        """A session's ``modes``, ``models`` and ``configOptions``, from the process that ran it."""
        transport = self._holding(session_id, live=False)  # as last reported, even if closed
        return dict(transport.session_setup[session_id]) if transport is not None else {}

    async def aclose(self) -> None:
        """Retire every ``agent acp``: each stops now, or once its running turns have ended."""
        for transport in list(self.transports.values()):
            await transport.retire()


def _open_turn(acp: _AcpHolder, tools: Any, config: AgentConfig, prompt: str | bytes,
               sink: EventSink | None, *, reuse: bool = True) -> Turn:
    """The one spot where a client opens a turn: on the config's transport (the client's own
    ``agent acp`` in ACP mode); when the client has ``tools`` or the config declares
    ``mcp_servers``, inside their scope: the turn shows them to the agent in ``.cursor/`` and
    restores it (see docs/tools.md). ``reuse``: see :meth:`_AcpHolder.get`."""
    if tools is None and not config.mcp_servers:
        return acp.open(config, prompt, sink, reuse=reuse)
    from .tools.host import open_turn

    return open_turn(tools, config,
                     lambda turn_config: acp.open(turn_config, prompt, sink, reuse=reuse))


async def _stop_start(run: Turn, began: list[asyncio.Task[None]],
                      release: Callable[[], None]) -> None:
    """After an interrupted start: stop the start where it is and let it unwind, then stop the
    turn (a started one: cancelled, and its end awaited: SIGTERM, its grace, SIGKILL).

    ``began`` holds the start's task once it has begun; this runs on the loop after it (both
    are handed to the loop in that order), so an empty list means the start never was. The
    loop's reference is let go once: by the turn's done callback when the start had completed,
    by ``release`` here otherwise, even when the caller was interrupted again meanwhile.
    """
    completed = False
    try:
        if not began:
            return
        task = began[0]
        task.cancel()  # (a no-op once it has completed)
        await asyncio.wait([task])
        completed = not task.cancelled() and task.exception() is None
        if run.done:
            return
        if completed:  # cancel as a turn is cancelled (ACP keeps the session), wait for its end
            run.cancel(signal_module.SIGTERM)
            with contextlib.suppress(BaseException):
                await run.wait()
        elif run.pid is not None:  # unwound part-way, after the spawn
            run.cancel(signal_module.SIGKILL)
    finally:
        if not completed:
            release()


def _make_tools(tools: Any) -> Any:
    if tools is None:
        return None
    from .tools.host import make_host

    return make_host(tools)


_LETTING_GO: set[asyncio.Task[None]] = set()
"""What dropped clients left to do on their loops (a task is kept only by a reference)."""


def _let_go(acp: _AcpHolder, tools: Any) -> None:
    """An :class:`AsyncCursorAgentClient` was dropped (``weakref.finalize``): as its
    ``aclose()``, each ``agent acp`` retired and the tool server stopped, each on its own loop,
    from any thread; nothing for a loop already closed (its processes stopped with it)."""
    for transport in acp.transports.values():
        _on_loop(transport.loop, transport.retire)
    if tools is not None:
        _on_loop(tools.loop, tools.aclose)


def _on_loop(loop: asyncio.AbstractEventLoop | None, make: Callable[[], Awaitable[None]]) -> None:
    if loop is None or loop.is_closed():
        return

    def start() -> None:
        task: asyncio.Task[None] = loop.create_task(_awaited(make))
        _LETTING_GO.add(task)
        task.add_done_callback(_LETTING_GO.discard)

    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        start()
    else:
        with contextlib.suppress(RuntimeError):  # (closed meanwhile)
            loop.call_soon_threadsafe(start)


async def _awaited(make: Callable[[], Awaitable[None]]) -> None:
    await make()


def _scope_ender(tools: Any) -> Callable[[str], None] | None:
    """What ends the MCP sessions of a scope on the client's tool server (if it has tools)."""
    return tools.end_scope if tools is not None else None


def _same(value: T) -> T:
    return value


def check_prompt(prompt: object) -> str | bytes:
    r"""``prompt``, checked where every prompt enters (the clients, sync and async, and so the
    sessions): ``TypeError`` if it is neither str nor bytes; ``ValueError`` if it is empty or
    only whitespace (there is nothing to send: no agent starts); ``ValueError`` naming the
    position if a str cannot be sent as UTF-8 — a lone surrogate, such as the ``\udce9`` that
    a byte which is not UTF-8 becomes when read with ``surrogateescape`` (a Latin-1 file on
    a pipe, ``sys.argv``). Bytes are sent as given.

    Example:
        >>> check_prompt("café")
        'café'
        >>> check_prompt("summarize: caf\udce9")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: the prompt is not UTF-8 text: character 14 is the byte 0xE9, which is not ...
        >>> check_prompt(" \n\t")
        Traceback (most recent call last):
        ...
        ValueError: the prompt is empty (only whitespace): there is nothing to send
    """
    if not isinstance(prompt, (str, bytes)):
        raise TypeError(f"prompt must be str or bytes, got {type(prompt).__name__}")
    if not prompt.strip():
        raise ValueError("the prompt is empty" + (" (only whitespace)" if prompt else "")
                         + ": there is nothing to send")
    if isinstance(prompt, str) and not prompt.isascii():
        try:
            prompt.encode("utf-8")
        except UnicodeEncodeError as exc:
            code = ord(prompt[exc.start])
            what = (f"the byte 0x{code - 0xDC00:02X}, which is not UTF-8 (decode the input with "
                    "its real encoding)" if 0xDC80 <= code <= 0xDCFF
                    else f"a lone surrogate U+{code:04X}, which UTF-8 cannot encode")
            raise ValueError(f"the prompt is not UTF-8 text: character {exc.start} is {what}"
                             ) from None
    return prompt


def prompt_text(prompt: object) -> str:
    r"""``prompt`` as the text a session records: checked by :func:`check_prompt`, bytes
    decoded as UTF-8 — ``ValueError`` naming the first byte that is not, before any turn
    starts (a session keeps its prompts as text, to save them as JSON).

    Example:
        >>> prompt_text("café".encode())
        'café'
        >>> prompt_text(b"caf\xe9 au lait")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: the prompt is not UTF-8 text: byte 3 is 0xE9, which is not UTF-8 here ...
    """
    checked = check_prompt(prompt)
    if isinstance(checked, str):
        return checked
    try:
        return checked.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"the prompt is not UTF-8 text: byte {exc.start} is 0x{checked[exc.start]:02X}, "
            "which is not UTF-8 here (decode the input with its real encoding, or pass "
            "the prompt as str)") from None


# ---- sync ------------------------------------------------------------------------------


_ONE_CONSUMER = ("another thread is iterating this stream: a stream has one consumer (iterate "
                 "it, or wait() for it, from one thread at a time)")


class _TurnStream:
    """The one stream-iteration core of both faces: batches from the turn's queue, handed out
    one event at a time, each with what it changed when asked (:meth:`with_changes`: the
    turn put each batch with its changes, so they travel together).

    The faces add only the waiting: :class:`StreamingResponse` blocks on a
    :class:`~cursor_agent_api.runtime.sinks.ThreadEventQueue`, :class:`AsyncStreamingResponse`
    awaits an :class:`~cursor_agent_api.runtime.sinks.AsyncEventQueue`.
    """

    def __init__(self, run: Turn, queue: ThreadEventQueue | AsyncEventQueue,
                 config: AgentConfig, prompt: str | bytes) -> None:
        self._run = run
        self._queue = queue
        self._keep = config.keep_events
        self.prompt = prompt
        """The prompt of the turn (what a session records with its result)."""
        self._events = EventLog()
        # the batches taken from the turn and not yet handed out in full, each (events, their
        # changes): held[0] is the one being handed out (``_ready``: counted in ``events``),
        # ``_index`` its next event. The sync stream shares its queue's deque (the queue
        # stores what it takes there, so a Ctrl-C cannot lose it); the async stream keeps its own
        self._held: collections.deque[Any] = collections.deque()
        self._counted: ThreadEventQueue | None = None  # told how many events were handed out
        self._index = 0
        self._ready = False
        self._log_mark: tuple[list[AgentEvent], int] | None = None
        self._ended = False
        self._stopped = False
        self._cancelled = False
        self._handed = False
        self._changes: Changes = ()  # of the event handed out last (with_changes() reads it)

    @property
    def _batch(self) -> list[AgentEvent]:
        """The batch being handed out (empty when none is: nothing handed out is held)."""
        return self._held[0][0] if self._ready else _EMPTY

    def _next_in_batch(self) -> AgentEvent | None:
        """Hand out the next event of the batch taken (with its changes), or ``None``.

        One call per event on the consumer's side: the batch's index and the changes, together.
        (:meth:`StreamingResponse.__next__` has this inline, so that a Ctrl-C cannot fall
        between its commit and its return; keep the two alike.)
        """
        if not self._ready:
            return None
        held = self._held
        events, changes = held[0]
        i = self._index
        n = len(events)
        event: AgentEvent = events[i]
        self._changes = changes[i]
        self._handed = True
        # the commit: no call from here on (a pending Ctrl-C is raised only after a call or
        # at a backward jump), so the event is either handed out in full or still the next
        if i + 1 == n:  # hold no event once handed out (big lines' memory)
            del held[0]
            self._index = 0
            self._ready = False
            counted = self._counted
            if counted is not None:
                counted.handed += n
        else:
            self._index = i + 1
        return event

    def _let_go(self, n: int) -> None:
        """The batch of ``n`` events at ``held[0]`` is handed out: let it go."""
        del self._held[0]
        self._index = 0
        self._ready = False
        if self._counted is not None:
            self._counted.handed += n

    def _adopt(self, item: Any) -> None:
        """Take an item (``held[0]`` for the sync stream): a batch to hand out (its events and
        their changes), an end marker, or nothing (cancelled). Safe to repeat after a Ctrl-C
        part-way: the events log is cut back to where this batch began before it is written
        again."""
        if type(item) is tuple:
            events = item[0]
            if not events or self._stopped:  # cancelled while this was on its way
                if self._held and self._held[0] is item:
                    self._let_go(len(events))
                return
            if self._keep:
                log, mark = self._events, self._log_mark
                if mark is not None and mark[0] is events:
                    log.truncate(mark[1])  # a Ctrl-C came part-way through the last try
                else:
                    self._log_mark = (events, len(log))
                log.extend(events)
                self._log_mark = None
            self._ready = True
        elif item is END:
            self._ended = True
        elif item is STOPPED:
            self._stopped = True

    def _take(self, item: Any) -> None:
        """Take an item from an async queue (which let it go): hold it, then adopt it."""
        if type(item) is tuple:
            self._held.append(item)
        self._adopt(item)

    def _start_changes(self) -> None:
        if self._handed:
            raise RuntimeError("with_changes() must come before the stream's first event")

    def _stop(self, sig: int, cancel_turn: Callable[[int], None], started: bool) -> None:
        # the consumer goes first: nothing the turn adds as it stops is handed out. Safe from
        # several threads at once with no lock: the flags are only ever set; queue.stop() gives
        # the drain callback to one caller (under the queue's lock) and each STOPPED means the
        # same; the turn's cancel runs on its loop, one call at a time, and only the first
        # (or a SIGKILL) acts (tests/client/test_stream_threads.py)
        self._stopped = True
        self._queue.stop()
        if started and self._run.result is None:
            self._cancelled = True
            cancel_turn(int(sig))

    @property
    def events(self) -> EventLog:
        """Events received so far (empty with ``keep_events=False``): equal to the events
        yielded, kept as compact as they came (see :mod:`~cursor_agent_api.protocol.event_log`)."""
        return self._events

    @property
    def cancelled(self) -> bool:
        """True once :meth:`cancel` was called on an unfinished turn."""
        return self._cancelled

    @property
    def pid(self) -> int | None:
        """The agent's pid, which is also its process group id."""
        return self._run.pid

    @property
    def process(self) -> subprocess.Popen[bytes] | None:
        """The :class:`subprocess.Popen` of the agent, for inspection (``pid``, ``args``).

        Stop it with :meth:`cancel`; do not ``wait()``/``poll()`` it: the runtime reaps it.
        ``None`` before the start and on uvloop (its transports have no ``Popen``).
        """
        return getattr(getattr(self._run, "process", None), "popen", None)

    @property
    def done(self) -> bool:
        """True once the turn has ended (agent reaped, group gone)."""
        return self._run.result is not None

    @property
    def transcript(self) -> Transcript:
        """The turn's one fold: its text, tool calls, usage so far (:class:`Transcript`).

        The stream folds each event as it reads it, before handing it on; a view takes what
        each event changed from :meth:`StreamingResponse.with_changes` rather than folding again.
        """
        return self._run.transcript

    @property
    def result(self) -> AgentResult | None:
        """The turn's :class:`~cursor_agent_api.protocol.AgentResult` once it has ended, else None."""
        return self._run.result

    def __del__(self) -> None:
        run = getattr(self, "_run", None)
        if run is not None and run.result is None:  # dropped unfinished: stop the agent
            with contextlib.suppress(Exception):
                run.cancel_threadsafe(signal_module.SIGTERM)

    def __repr__(self) -> str:
        state = "done" if self.done else ("cancelled" if self._cancelled else "running")
        return f"<{type(self).__name__} pid={self.pid} {state}>"


class StreamingResponse(_TurnStream):
    """A running turn, iterated synchronously (seed 004's ``StreamingResponse``).

    * iterating yields each :class:`~cursor_agent_api.protocol.AgentEvent` as
      soon as its line is complete (no batching, no waiting for the process);
      iteration ends after the last event, once the agent is reaped and its
      process group is gone — :attr:`result` is then set;
    * :attr:`events` — the events received so far (kept unless
      ``keep_events=False``); :attr:`cancelled`; :attr:`pid` (also the process
      group id); :attr:`process` (the :class:`subprocess.Popen`, for inspection);
    * :meth:`cancel` returns at once: the signal (default SIGTERM) goes to the
      whole group, SIGKILL follows after ``kill_grace`` if anything is left;
      iteration ends at once. :meth:`wait` (or leaving the ``with`` block)
      waits until the group is gone and returns the result;
    * as a context manager it stops the process on exit if the turn is not over;
    * one consumer: iterate it from one thread at a time (another thread's ``next()`` or
      ``wait(timeout=...)`` while one waits in either raises ``RuntimeError``; once every
      event is handed out, any number of threads may :meth:`wait`; :meth:`cancel` works from
      any thread).
      A Ctrl-C inside ``next()`` loses nothing: iterating on yields the next event.

    Process-level failures (a crash, a timeout) arrive as an ``ERROR`` event
    before the stream ends; :attr:`result` then has ``success=False`` and a
    typed ``exception``.

    Example:
        >>> with client.query_stream("Write a poem") as stream:   # doctest: +SKIP
        ...     for event in stream:
        ...         print(event.text or "", end="")
        ...         if should_stop():
        ...             stream.cancel()
        >>> stream.result.cancelled                                # doctest: +SKIP
        True
    """

    def __init__(
        self,
        run: Turn,
        queue: ThreadEventQueue,
        config: AgentConfig,
        prompt: str | bytes,
        finished: concurrent.futures.Future[AgentResult],
    ) -> None:
        super().__init__(run, queue, config, prompt)
        self._queue: ThreadEventQueue = queue
        self._held = queue.taken  # what the queue takes is stored there first (Ctrl-C safe)
        self._counted = queue
        self._finished = finished
        self._busy = False  # a thread is inside __next__ (one consumer at a time)

    def __iter__(self) -> Iterator[AgentEvent]:
        return self

    def __next__(self) -> AgentEvent:
        # Ctrl-C safe: a KeyboardInterrupt is raised only after a call or at a backward
        # jump, and from the commit below to the return there is neither, so an interrupted
        # next() has handed out nothing and the next one goes on from the same event; the
        # batches wait in the queue's `taken` (ThreadEventQueue.head). `_busy` is tested
        # and set with no call between (atomic under the GIL), and cleared with the commit.
        if not self._ready and (self._ended or self._stopped):
            raise StopIteration  # every event handed out: nothing to consume, any thread may ask
        if self._busy:
            raise RuntimeError(_ONE_CONSUMER)
        self._busy = True
        try:
            held = self._held
            while True:
                if self._ready:  # _next_in_batch, inline: its return would be a call
                    events, changes = held[0]
                    i = self._index
                    n = len(events)
                    event: AgentEvent = events[i]
                    self._changes = changes[i]
                    self._handed = True
                    # the commit: no call from here to the return
                    if i + 1 == n:  # hold no event once handed out (big lines' memory)
                        del held[0]
                        self._index = 0
                        self._ready = False
                        self._queue.handed += n
                    else:
                        self._index = i + 1
                    self._busy = False
                    return event
                if self._ended or self._stopped:
                    raise StopIteration
                self._adopt(self._queue.head())
        except BaseException:
            self._busy = False
            raise

    def with_changes(self) -> Generator[tuple[AgentEvent, Changes], None, None]:
        """Iterate the events, each with what it changed in :attr:`transcript`.

        The turn is folded once, by the stream; a view applies these changes
        (:mod:`cursor_agent_api.protocol.changes`) and never folds the events again.
        ``RuntimeError`` once an event was handed out: call it before the first one.

        Example:
            >>> for event, changes in stream.with_changes():  # doctest: +SKIP
            ...     for change in changes:
            ...         if change.kind == "text_appended":
            ...             print(change.text, end="")
        """
        self._start_changes()
        while True:
            try:
                event = next(self)
            except StopIteration:
                return
            changes = self._changes
            yield event, changes
            del event, changes  # not held while the next is read (a consumer's memory)

    # control ---------------------------------------------------------------------------

    def cancel(self, signal: int = signal_module.SIGTERM) -> None:
        """Stop the turn: ``signal`` to the agent's process group now, SIGKILL after grace.

        Returns at once; iteration ends at once (a blocked ``next()`` in another
        thread wakes up). ``cancel(signal.SIGKILL)`` kills at once. No effect once
        the turn has ended. From any thread, several at once too: the turn is stopped once.

        Example:
            >>> stream.cancel()          # doctest: +SKIP
            >>> stream.wait().cancelled  # doctest: +SKIP
            True

        ``ValueError`` (nothing sent) for a value that cannot stop the agent: not a signal
        (``999``), ``0``, SIGCONT… (:func:`~cursor_agent_api.runtime.stop_policy.stop_signal`).
        """
        self._stop(stop_signal(signal), self._run.cancel_threadsafe, True)

    def wait(self, timeout: float | None = None) -> AgentResult:
        """Consume what is left and wait for the end (group gone); the result.

        ``TimeoutError`` if ``timeout`` seconds pass first, counted over the whole wait
        (consuming and the end alike); the turn goes on, and the stream can still be
        iterated, waited for again, cancelled or closed. ``ValueError`` for a NaN ``timeout``.

        Example:
            >>> result = client.query_stream("hi").wait()  # doctest: +SKIP
        """
        if timeout is None:
            for _ in self:
                pass
            return wait_for(self._finished)
        if math.isnan(timeout):  # no deadline is ever reached: it would wait forever
            raise ValueError("wait(timeout=...) must be a number of seconds or None, got nan")
        deadline = time.monotonic() + timeout
        try:
            if self._ready or not (self._ended or self._stopped):  # (else: all handed out)
                self._consume_until(deadline)
            return wait_for(self._finished, max(deadline - time.monotonic(), 0.0))
        except (TimeoutError, concurrent.futures.TimeoutError):
            raise TimeoutError(f"the turn did not end within {timeout:g} s") from None

    def _consume_until(self, deadline: float) -> None:
        """Hand out (and drop) every event left, as the one consumer, until ``deadline``."""
        if self._busy:  # one consumer, as in __next__ (tested and set with no call between)
            raise RuntimeError(_ONE_CONSUMER)
        self._busy = True
        try:
            while not (self._ended or self._stopped):
                while self._next_in_batch() is not None:  # hand out the batch taken
                    pass
                if self._ended or self._stopped:
                    break
                self._adopt(self._queue.head(max(deadline - time.monotonic(), 0.0)))
            while self._next_in_batch() is not None:
                pass
        finally:
            self._busy = False

    def close(self) -> None:
        """Stop the turn if it is still running and wait until its process group is gone.

        Example:
            >>> stream.close()  # doctest: +SKIP
        """
        if self._run.result is None:
            self.cancel()
        wait_for(self._finished)

    def __enter__(self) -> StreamingResponse:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()



class CursorAgentClient:
    """Run the agent synchronously: :meth:`query`, :meth:`query_stream`, :meth:`status`, ….

    ``config`` (or the :class:`~cursor_agent_api.config.AgentConfig` fields as
    keywords) sets the defaults; each call's ``**overrides`` replace fields for
    that call. The async core runs on a private event-loop thread, started on
    first use and stopped by :meth:`close` (or the ``with`` block) once no
    stream is running; so this client works in scripts, threads and inside a
    running event loop alike. Thread-safe: turns from several threads run
    concurrently. ``tools``: ``@tool`` functions (:mod:`cursor_agent_api.tools`, the
    ``[tools]`` extra) the agent may call; they are served while the client is open
    (docs/tools.md).

    Example:
        >>> client = CursorAgentClient(workspace="/src/app", trust=True)  # doctest: +SKIP
        >>> r = client.query("Summarize README.md", timeout=300)          # doctest: +SKIP
        >>> print(r.result if r.success else r.error)                     # doctest: +SKIP
    """

    def __init__(self, config: AgentConfig | None = None, *, tools: Any = None, **fields: Any) -> None:
        self.config = _make_config(config, fields)
        self._tools = _make_tools(tools)  # @tool functions: served while the client is open
        self._portal = LoopThread()  # held from the first call to close(): hold(), let_go()
        self._acp = _AcpHolder(self.config, _scope_ender(self._tools))

    # plumbing --------------------------------------------------------------------------

    def _loop(self) -> LoopThread:
        self._portal.hold()
        return self._portal

    def close(self) -> None:
        """Stop the private loop thread and, in ACP mode, the client's ``agent acp`` once
        running streams have ended (a stream returned before may be iterated after). The
        client can be used again afterwards (close it again then). Idempotent.

        Example:
            >>> CursorAgentClient().close()
        """
        if (self._acp.transports or self._tools is not None) and self._portal.reachable:
            # what it stops is waited for on the loop: from the loop's own thread (a callback)
            # that is a RuntimeError that says so, before anything is let go (close it again
            # from another thread)
            self._portal.check_caller()
        holding = self._portal.let_go()
        if holding and not self._portal.reachable:
            # the interpreter is exiting (its atexit hooks stopped the agents), or this is a
            # forked child (they are the parent's): nothing to wait for, and no one to answer
            self._portal.release()
        elif holding:
            try:
                if self._acp.transports:
                    with contextlib.suppress(Exception):
                        self._portal.call(self._acp.aclose)
                if self._tools is not None:
                    self._portal.call(self._tools.aclose)
            finally:  # (a Ctrl-C in the waits above: the loop stops all the same)
                self._portal.release()

    def __enter__(self) -> CursorAgentClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    def _call(self, fn: Callable[[], Awaitable[T]]) -> T:
        portal = self._loop()
        portal.acquire()  # a close() meanwhile must not stop the loop under this call
        try:
            return portal.call(fn)
        finally:
            portal.release()

    def _start(self, config: AgentConfig, prompt: str | bytes, queue: ThreadEventQueue | None,
               make: Callable[[Turn, concurrent.futures.Future[AgentResult]], T],
               then: Callable[[T], R]) -> R:
        """Open a turn, ``made = make(turn, finished)`` (before anything of the turn runs;
        ``finished``: the turn's result), start the turn on the loop thread; ``then(made)``.

        An exception (Ctrl-C) anywhere in here, ``then`` included, stops the turn and waits
        until its group is gone before it propagates: the interrupt may land as the start
        completes, a moment after the kernel gave SIGINT to the loop thread.
        """
        portal = self._loop()
        portal.check_caller()  # not from the loop thread (a callback), nor with it gone (a fork)
        portal.acquire()  # held by the run until it ends
        began: list[asyncio.Task[None]] = []
        run: Turn | None = None
        try:
            if queue is not None:
                queue.bind(portal.loop)
            run = _open_turn(self._acp, self._tools, config, prompt, queue)
            finished: concurrent.futures.Future[AgentResult] = concurrent.futures.Future()
            made = make(run, finished)
            turn = run

            async def start() -> None:
                task = asyncio.current_task()
                assert task is not None
                began.append(task)
                await turn.start()

                def done(fut: asyncio.Future[AgentResult]) -> None:
                    if fut.cancelled():
                        finished.cancel()
                    elif fut.exception() is not None:
                        finished.set_exception(fut.exception())
                    else:
                        finished.set_result(fut.result())
                    portal.release()

                turn.add_done_callback(done)

            wait_for(portal.submit(start))
            return then(made)
        except BaseException:
            # interrupted while the agent starts (or the start handed to the loop, or the
            # caller's wait): stop the start where it is (an ACP turn must not go on to send
            # its prompt) and the process if it was spawned; a started turn is cancelled and
            # its end awaited
            if run is None:
                portal.release()
            else:  # the stop lets the loop's reference go; it goes on if interrupted again
                with contextlib.suppress(BaseException):
                    portal.call(_stop_start, run, began, portal.release)
            raise

    # turns -----------------------------------------------------------------------------

    def query(self, prompt: str, **overrides: Any) -> AgentResult:
        """Run one turn to its end; its :class:`~cursor_agent_api.protocol.AgentResult`.

        Everything that happens once the agent has started comes back in the
        result (``success=False``, ``error``, a typed ``exception``;
        ``result.raise_for_error()`` raises it). Raises
        :class:`~cursor_agent_api.errors.AgentNotFoundError` when the agent
        cannot be started at all. ``KeyboardInterrupt`` stops the agent's group
        before it propagates.

        Example:
            >>> client.query("What is 2+2?", model="gpt-5").result  # doctest: +SKIP
            'The answer is 4.'
        """
        config = self.config.with_overrides(**overrides)
        return self._start(config, check_prompt(prompt), None,
                           lambda run, finished: finished, wait_for)

    def query_stream(self, prompt: str, **overrides: Any) -> StreamingResponse:
        """Start one turn; a :class:`StreamingResponse` that yields its events as they come.

        The agent is running when this returns (``stream.pid`` is set). Raises
        :class:`~cursor_agent_api.errors.AgentNotFoundError` when it cannot start.

        Example:
            >>> for event in client.query_stream("Hello"):  # doctest: +SKIP
            ...     print(event.type, event.text)
        """
        config = self.config.with_overrides(**overrides)
        queue = ThreadEventQueue()
        return self._start(config, check_prompt(prompt), queue, lambda run, finished:
                           StreamingResponse(run, queue, config, prompt, finished), _same)

    # account ---------------------------------------------------------------------------

    def status(self, *, timeout: float | None = DEFAULT_COMMAND_TIMEOUT) -> AccountStatus:
        """``agent status``: logged in or not, and as whom (typed errors on failure).

        Example:
            >>> client.status().logged_in  # doctest: +SKIP
            True
        """
        return self._call(functools.partial(fetch_status, self.config, timeout=timeout))

    def list_models(self, *, timeout: float | None = DEFAULT_COMMAND_TIMEOUT) -> list[ModelInfo]:
        """``agent models``: (slug, display name) of each model the account can use.

        Example:
            >>> [m.slug for m in client.list_models()]  # doctest: +SKIP
            ['auto', 'sonnet-4.6', 'gpt-5']
        """
        return self._call(functools.partial(fetch_models, self.config, timeout=timeout))

    def create_chat(self, *, timeout: float | None = DEFAULT_COMMAND_TIMEOUT) -> str:
        """``agent create-chat``: a new chat id to pass as ``resume=`` (the process is stopped).
        In ACP mode, a new ACP session (``session/new`` on the client's ``agent acp``): the
        two modes keep separate stores, so each makes its own kind of id.

        Example:
            >>> chat = client.create_chat()                      # doctest: +SKIP
            >>> client.query("Remember 42", resume=chat).success  # doctest: +SKIP
            True
        """
        return self._create_chat(self.config, timeout=timeout)

    def _create_chat(self, config: AgentConfig, *,
                     timeout: float | None = DEFAULT_COMMAND_TIMEOUT) -> str:
        """:meth:`create_chat` with ``config`` (a session's settings over the client's)."""
        if config.transport == "acp":
            transport = self._acp.get(config)
            return self._call(lambda: transport.new_session(config))
        return self._call(functools.partial(create_chat, config, timeout=timeout))

    # ACP sessions ----------------------------------------------------------------------

    def set_session_mode(self, session_id: str, mode_id: str) -> None:
        """ACP mode: switch a session to ``agent``, ``plan`` or ``ask`` (``session/set_mode``).

        Example:
            >>> client.set_session_mode(result.session_id, "plan")  # doctest: +SKIP
        """
        transport = self._acp.of_session(session_id, self.config)
        self._call(lambda: transport.set_mode(session_id, mode_id))

    def set_session_option(self, session_id: str, config_id: str, value: str) -> Any:
        """ACP mode: set a session's ``model`` or ``mode`` (``session/set_config_option``);
        the refreshed options. Model ids are ACP's own (see ``session_setup``), not slugs.

        Example:
            >>> client.set_session_option(sid, "model", "claude-opus-5")  # doctest: +SKIP
        """
        transport = self._acp.of_session(session_id, self.config)
        return self._call(lambda: transport.set_config_option(session_id, config_id, value))

    def session_setup(self, session_id: str) -> dict[str, Any]:
        """ACP mode: a session's ``modes``, ``models`` and ``configOptions`` as last reported.

        Example:
            >>> client.session_setup(sid)["modes"]["currentModeId"]  # doctest: +SKIP
            'agent'
        """
        return self._acp.session_setup(session_id)


# ---- async -----------------------------------------------------------------------------


def _retrieved(task: asyncio.Future[Any]) -> None:
    """Take what a task given up on raised (asyncio would log it as never retrieved)."""
    if not task.cancelled():
        task.exception()


class AsyncStreamingResponse(_TurnStream):
    """A running turn, iterated with ``async for`` (the async ``StreamingResponse``).

    Returned by :meth:`AsyncCursorAgentClient.query_stream` without an
    ``await``: the agent starts on the first ``async for`` step, on ``async
    with``, or on ``await stream`` (which returns the stream, started, so
    :attr:`pid` is set). Otherwise it behaves like :class:`StreamingResponse`:
    each event as soon as its line is complete; :meth:`cancel` returns at once
    and ends the iteration; :meth:`wait` / leaving ``async with`` waits until
    the group is gone; :attr:`result` once ended.

    A cancel of the consuming task that lands while it waits for the next event
    (``asyncio.timeout``, ``wait_for``, a failing ``TaskGroup`` sibling, ``task.cancel()``)
    ends the stream as it would end an async generator, ``async with`` or not: the turn is
    cancelled (SIGTERM to the group; ACP: ``session/cancel``) and its end awaited, then the
    cancellation propagates; :attr:`result` is cancelled and iterating on ends at once. To
    wait for an event with a timeout and keep the turn, do not cancel the step: wait for
    it with ``asyncio.wait({step}, timeout=...)`` (see docs/client.md).

    Example:
        >>> async for event in client.query_stream("Hello"):  # doctest: +SKIP
        ...     print(event.text)
        >>> async with client.query_stream("Long task") as stream:  # doctest: +SKIP
        ...     async for event in stream:
        ...         if event.type is EventType.TOOL_CALL_STARTED:
        ...             stream.cancel()
    """

    def __init__(self, run: Turn, queue: AsyncEventQueue, config: AgentConfig,
                 prompt: str | bytes) -> None:
        super().__init__(run, queue, config, prompt)
        self._queue: AsyncEventQueue = queue
        self._started = False
        self._spawned = False
        self._opener: Callable[[], Awaitable[Turn]] | None = None
        # a start under way (another task may hold the stream meanwhile): done once it
        # returned or raised; what it raised; the signal of a cancel that came meanwhile
        self._starting: asyncio.Future[None] | None = None
        self._start_error: BaseException | None = None
        self._start_tb: TracebackType | None = None
        # a session's opener under way (it waits for the previous turns): a cancel ends it
        self._opening: asyncio.Future[None] | None = None
        self._opener_task: asyncio.Future[Turn] | None = None  # (kept: it may go on alone)
        self._cancel_signal = int(signal_module.SIGTERM)

    async def start(self) -> AsyncStreamingResponse:
        """Start the agent (idempotent); raises AgentNotFoundError if it cannot start.

        Example:
            >>> stream = await client.query_stream("hi").start()  # doctest: +SKIP
            >>> stream.pid is not None                             # doctest: +SKIP
            True
        """
        if not self._started:
            self._started = True
            starting = self._starting = asyncio.get_running_loop().create_future()
            try:
                if self._opener is not None:  # a session's next turn: opened once the last ended
                    self._run = await self._open(self._opener)
                await self._run.start()
            except BaseException as exc:
                # another task waiting meanwhile (wait(), a step) wakes and gets this error;
                # a start a cancel cut short has none: the stream just never ran
                if not self._stopped:
                    self._start_error, self._start_tb = exc, exc.__traceback__
                self._stopped = True
                self._queue.stop()
                raise
            else:
                self._spawned = True
                if self._stopped:  # cancelled by another task meanwhile: the turn stops now
                    self._stop(self._cancel_signal, self._run.cancel, True)
            finally:
                starting.set_result(None)
        return self

    async def _open(self, opener: Callable[[], Awaitable[Turn]]) -> Turn:
        """The turn ``opener`` opens (once the session's previous turns have ended, which may
        be never), in a task of its own that :meth:`cancel` stops waiting for: a cancel before
        the turn is opened means no turn ever starts, and nothing waits for the previous ones
        for it. The opener goes on without it (a previous turn it started runs, and is
        recorded when it ends), then gives up (the stream is stopped); a cancel of this task
        cancels the opener, as it would cancel it awaited here."""
        opening = self._opener_task = asyncio.ensure_future(opener())
        stop = self._opening = asyncio.get_running_loop().create_future()
        try:
            await asyncio.wait({opening, stop}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            opening.cancel()
            raise
        finally:
            self._opening = None
            opening.add_done_callback(_retrieved)
        if not opening.done() or self._stopped:
            raise RuntimeError("the stream was cancelled before it started")
        return opening.result()

    def _start_failed(self) -> None:
        """Raise what the stream's start raised, if that was an error (a start cut short by
        a cancel or a Ctrl-C: the stream just never ran)."""
        if isinstance(self._start_error, Exception):  # (its traceback as saved, not grown)
            raise self._start_error.with_traceback(self._start_tb)

    async def _start_settled(self) -> None:
        """Wait until a start under way in another task has returned or raised (cancelling
        this wait leaves the start alone)."""
        if self._starting is not None and not self._starting.done():
            await asyncio.shield(self._starting)

    def __await__(self) -> Generator[Any, None, AsyncStreamingResponse]:
        return self.start().__await__()

    def __aiter__(self) -> AsyncIterator[AgentEvent]:
        return self

    async def __anext__(self) -> AgentEvent:
        return await self._step(give_up=True)

    async def _step(self, *, give_up: bool) -> AgentEvent:
        """The next event. ``give_up``: a cancel (``asyncio.timeout``, ``wait_for``, a failing
        ``TaskGroup`` sibling, ``task.cancel()``) that lands while it waits ends the stream as
        it would end an async generator: the turn is cancelled and its end awaited (as
        :meth:`AsyncCursorAgentClient.query` does) before the cancellation propagates; later
        steps end the iteration. Without ``give_up`` (:meth:`wait`, a waiter) the turn goes
        on."""
        event = self._next_in_batch()
        if event is None and not self._started:
            await self.start()  # (a start cut short stops itself: the stream never runs)
        while event is None:
            if self._ended or self._stopped:
                self._start_failed()
                raise StopAsyncIteration
            try:
                item = await self._queue.get()
            except BaseException:
                if give_up:
                    await self._given_up()
                raise
            self._take(item)
            event = self._next_in_batch()
        return event

    async def _given_up(self) -> None:
        """The consumer was interrupted while it waited: cancel the turn, await its end (a
        second interruption stops only this wait; the turn is cancelled either way)."""
        self.cancel()
        with contextlib.suppress(BaseException):
            await self._start_settled()  # (another task's start: its turn is cancelled)
            if self._spawned:
                await self._run.wait()

    async def with_changes(self) -> AsyncGenerator[tuple[AgentEvent, Changes], None]:
        """Iterate the events, each with what it changed in :attr:`transcript` (see
        :meth:`StreamingResponse.with_changes`); call it before the first event.

        Example:
            >>> async for event, changes in stream.with_changes():  # doctest: +SKIP
            ...     print(event.type, [c.kind for c in changes])
        """
        self._start_changes()
        while True:
            try:
                event = await self.__anext__()
            except StopAsyncIteration:
                return
            changes = self._changes
            yield event, changes
            del event, changes  # not held while the next is awaited (a consumer's memory)

    def cancel(self, signal: int = signal_module.SIGTERM) -> None:
        """Stop the turn: ``signal`` to the group now, SIGKILL after grace; returns at once.

        Call it on the stream's event loop. Iteration ends at once. While another task
        starts the stream, the turn is stopped as soon as its start has returned.

        Example:
            >>> stream.cancel()               # doctest: +SKIP
            >>> (await stream.wait()).cancelled  # doctest: +SKIP
            True

        ``ValueError`` (nothing sent, nothing changed) for a value that cannot stop the agent,
        as the sync stream's :meth:`~StreamingResponse.cancel`.
        """
        signal = stop_signal(signal)
        if not self._started:
            self._started = True  # never start it
        elif self._opening is not None:
            if not self._opening.done():
                self._opening.set_result(None)  # no turn opened yet: none will be (see _open)
        elif not self._spawned and (not self._stopped or signal == signal_module.SIGKILL):
            self._cancel_signal = int(signal)  # a start under way: applied once it returns
        self._stop(signal, self._run.cancel, self._spawned)

    async def wait(self) -> AgentResult:
        """Consume what is left and wait for the end (group gone); the result.

        A waiter: cancelling it (``asyncio.wait_for(stream.wait(), t)`` running out) leaves
        the turn running, as the sync ``wait(timeout=...)`` does; iterating on, waiting again,
        :meth:`cancel` and :meth:`aclose` still work. (A cancel that lands in an ``async for``
        over the stream ends the turn: see the class.) A start that failed (here or in another
        task meanwhile) raises its error here, as every later step does.

        Example:
            >>> result = await client.query_stream("hi").wait()  # doctest: +SKIP
        """
        if not self._started:
            await self.start()
        with contextlib.suppress(StopAsyncIteration):
            while True:
                await self._step(give_up=False)
        await self._start_settled()  # (cancelled while another task starts it)
        self._start_failed()
        if not self._spawned:
            raise RuntimeError("the stream was cancelled before it started")
        return await self._run.wait()

    async def aclose(self) -> None:
        """Stop the turn if it is still running; wait until its process group is gone.

        Example:
            >>> await stream.aclose()  # doctest: +SKIP
        """
        if not self._spawned:
            self.cancel()
            await self._start_settled()  # a start under way: the turn it starts is cancelled
            if not self._spawned:
                return
        if self._run.result is None:
            self.cancel()
        await self._run.wait()

    async def __aenter__(self) -> AsyncStreamingResponse:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()



class AsyncCursorAgentClient:
    """Run the agent from asyncio: ``await client.query(...)``, ``async for … in client.query_stream(...)``.

    Same configuration and results as :class:`CursorAgentClient`; the turns run
    on the caller's event loop, as many at once as you like.

    Example:
        >>> async def main():                                         # doctest: +SKIP
        ...     client = AsyncCursorAgentClient(trust=True)
        ...     results = await asyncio.gather(*(client.query(p) for p in prompts))
        ...     async for event in client.query_stream("Explain main.py"):
        ...         print(event.text or "", end="")
    """

    def __init__(self, config: AgentConfig | None = None, *, tools: Any = None, **fields: Any) -> None:
        self.config = _make_config(config, fields)
        self._tools = _make_tools(tools)  # @tool functions: served until aclose()
        self._acp = _AcpHolder(self.config, _scope_ender(self._tools))
        # dropped without aclose(): its processes and tool server go then, not with the loop
        weakref.finalize(self, _let_go, self._acp, self._tools)

    async def __aenter__(self) -> AsyncCursorAgentClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop the client's ``agent acp`` process (ACP mode) once the turns running on it
        have ended (a stream started before may be iterated after), and the server of its
        ``tools``, if it started them. Idempotent. An ``agent acp`` also stops as the event
        loop it was started on ends (``asyncio.run``), and the client starts a new one on
        the next loop it is used from. A client dropped without ``aclose()`` does the same
        as it is collected (on its loop; as the sync client's ``close()`` in its ``__del__``).

        Example:
            >>> asyncio.run(AsyncCursorAgentClient().aclose())
        """
        await self._acp.aclose()
        if self._tools is not None:
            await self._tools.aclose()

    async def query(self, prompt: str, **overrides: Any) -> AgentResult:
        """Run one turn to its end; its result (see :meth:`CursorAgentClient.query`).

        Cancelling the awaiting task stops the agent's group before the
        cancellation propagates.

        Example:
            >>> r = await client.query("What is 2+2?")  # doctest: +SKIP
        """
        config = self.config.with_overrides(**overrides)
        return await run_to_end(_open_turn(self._acp, self._tools, config, check_prompt(prompt),
                                           None))

    def query_stream(self, prompt: str, *, read_ahead: AsyncEventQueue | None = None,
                     **overrides: Any) -> AsyncStreamingResponse:
        """A stream of one turn's events; iterate it with ``async for`` (no ``await`` first).

        The agent starts on the first iteration step (or ``await``/``async with``).
        ``read_ahead``: the queue between the turn and the stream, whose size bounds how far
        the client reads ahead of you (default: 8,192 events; the server passes a
        :class:`~cursor_agent_api.runtime.sinks.HeldEventQueue`, weighed by bytes and
        released once stored).

        Example:
            >>> async for event in client.query_stream("Hello"):  # doctest: +SKIP
            ...     print(event.type)
        """
        config = self.config.with_overrides(**overrides)
        queue = AsyncEventQueue() if read_ahead is None else read_ahead
        turn = _open_turn(self._acp, self._tools, config, check_prompt(prompt), queue)
        return AsyncStreamingResponse(turn, queue, config, prompt)

    def _deferred_stream(self, prompt: str, overrides: Callable[[], Awaitable[dict[str, Any]]]
                         ) -> AsyncStreamingResponse:
        """A stream whose turn is opened at its start, with the overrides known by then.

        Its turn does not make a closed client's ``agent acp`` kept between turns again: the
        stream was made (the client used) before any close that came since; making it has
        already undone an earlier one. It keeps its events as its opened turn's config says."""
        stream = self.query_stream(prompt)

        async def opener() -> Turn:
            config = self.config.with_overrides(**await overrides())
            stream._keep = config.keep_events
            return _open_turn(self._acp, self._tools, config, prompt, stream._queue,
                              reuse=False)

        stream._opener = opener
        return stream

    async def status(self, *, timeout: float | None = DEFAULT_COMMAND_TIMEOUT) -> AccountStatus:
        """``agent status``: logged in or not, and as whom.

        Example:
            >>> (await client.status()).account  # doctest: +SKIP
            'ada@example.com'
        """
        return await fetch_status(self.config, timeout=timeout)

    async def list_models(self, *, timeout: float | None = DEFAULT_COMMAND_TIMEOUT
                          ) -> list[ModelInfo]:
        """``agent models``: the models the account can use.

        Example:
            >>> [m.slug for m in await client.list_models()]  # doctest: +SKIP
            ['auto', 'gpt-5']
        """
        return await fetch_models(self.config, timeout=timeout)

    async def create_chat(self, *, timeout: float | None = DEFAULT_COMMAND_TIMEOUT) -> str:
        """``agent create-chat``: a new chat id (the process is stopped after its first line);
        in ACP mode a new ACP session (see :meth:`CursorAgentClient.create_chat`).

        Example:
            >>> chat = await client.create_chat()  # doctest: +SKIP
        """
        return await self._create_chat(self.config, timeout=timeout)

    async def _create_chat(self, config: AgentConfig, *,
                           timeout: float | None = DEFAULT_COMMAND_TIMEOUT) -> str:
        """:meth:`create_chat` with ``config`` (a session's settings over the client's)."""
        if config.transport == "acp":
            return await self._acp.get(config).new_session(config)
        return await create_chat(config, timeout=timeout)

    async def set_session_mode(self, session_id: str, mode_id: str) -> None:
        """ACP mode: ``session/set_mode`` (see :meth:`CursorAgentClient.set_session_mode`).

        Example:
            >>> await client.set_session_mode(sid, "ask")  # doctest: +SKIP
        """
        await self._acp.of_session(session_id, self.config).set_mode(session_id, mode_id)

    async def set_session_option(self, session_id: str, config_id: str, value: str) -> Any:
        """ACP mode: ``session/set_config_option`` (see :meth:`CursorAgentClient.set_session_option`).

        Example:
            >>> await client.set_session_option(sid, "mode", "plan")  # doctest: +SKIP
        """
        transport = self._acp.of_session(session_id, self.config)
        return await transport.set_config_option(session_id, config_id, value)

    def session_setup(self, session_id: str) -> dict[str, Any]:
        """ACP mode: a session's ``modes``, ``models`` and ``configOptions`` as last reported.

        Example:
            >>> client.session_setup(sid)  # doctest: +SKIP
        """
        return self._acp.session_setup(session_id)


# ---- module level (seed 004) -----------------------------------------------------------


def query(prompt: str, config: AgentConfig | None = None, **fields: Any) -> AgentResult:
    """Run one turn with a one-off :class:`CursorAgentClient`; its result.

    Example:
        >>> from cursor_agent_api import query
        >>> query("What is 2+2?", trust=True).result  # doctest: +SKIP
        'The answer is 4.'
    """
    with CursorAgentClient(config, **fields) as client:
        return client.query(prompt)


def query_stream(prompt: str, config: AgentConfig | None = None, **fields: Any
                 ) -> StreamingResponse:
    """Start one turn with a one-off client; its :class:`StreamingResponse`.

    Example:
        >>> from cursor_agent_api import query_stream, EventType
        >>> for event in query_stream("Hello", trust=True):  # doctest: +SKIP
        ...     if event.type is EventType.ASSISTANT_DELTA:
        ...         print(event.text, end="", flush=True)
    """
    client = CursorAgentClient(config, **fields)
    try:
        return client.query_stream(prompt)
    finally:
        client.close()
