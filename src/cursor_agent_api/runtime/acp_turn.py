"""One prompt turn over ACP, with the public surface of :class:`~.run.AgentRun`.

:class:`AcpTurn` opens (or continues, or loads) its session on the client's
:class:`~.acp_transport.AcpTransport`, sends ``session/prompt`` and folds what the agent sends
(mapped by :class:`~cursor_agent_api.protocol.acp_mapper.AcpMapper`) into its
:class:`~cursor_agent_api.protocol.Transcript` once, handing each event and its changes to
``on_fold`` and the events to the sink, in order. It ends with exactly one result event: the
mapper's (``end_turn``: success; ``cancelled``: ``AgentResult.cancelled``), or the client's
when the turn failed (:func:`~.outcome.client_result_event`, a typed error).

* :meth:`AcpTurn.cancel` sends ``session/cancel``, answers every pending request
  ``cancelled`` and waits ``kill_grace`` seconds for the prompt's answer; without one (a build
  that does not support cancel), or with ``SIGKILL``, it stops the agent's process group and
  the session is ``session/load``ed on the next prompt. The session survives either way.
* The process dying mid-turn ends the turn with
  :class:`~cursor_agent_api.errors.AgentProcessError` (exit code, stderr tail); the next
  turn restarts the agent.
* ``config.session_mode`` (such as ``"plan"``) is set with ``session/set_mode`` before the
  prompt when the session is in another mode.
* ``timeout`` bounds the turn: it is cancelled, then fails with
  :class:`~cursor_agent_api.errors.AgentTimeoutError`.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import mimetypes
import signal as signal_module
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from ..config import AgentConfig
from ..errors import (
    AcpRequestError,
    AgentNotFoundError,
    AgentProcessError,
    AgentTimeoutError,
    CursorAgentError,
)
from ..protocol import AgentEvent, AgentResult, Changes, Transcript, error_event
from ..protocol.acp_mapper import AcpMapper
from .acp_steering import Steering
from .outcome import client_result_event

if TYPE_CHECKING:
    from .acp_transport import AcpTransport
    from .process import AgentProcess
    from .sinks import EventSink

__all__ = ["AcpTurn"]


class AcpTurn:
    """One turn of an ACP session. Loop-bound; ``start()``, then ``wait()``."""

    def __init__(self, transport: AcpTransport, config: AgentConfig,
                 prompt: str | bytes | None, *, sink: EventSink | None = None) -> None:
        config.validate()
        self.transport = transport
        self.config = config
        if isinstance(prompt, bytes):
            prompt = prompt.decode("utf-8", "replace")
        self._prompt = prompt or ""
        self._sink = sink
        self._transcript = Transcript(keep_events=config.keep_events,
                                      keep_content=config.keep_content)
        self.on_fold: Callable[[AgentEvent, Changes], None] | None = None
        """Called with each event and what it changed in :attr:`transcript`, in order."""
        self.mapper = AcpMapper("")
        self.steering = Steering(config, mapper=self.mapper, emit=self.deliver,
                                 on_cancel=lambda: self.cancel())
        self.session_id: str | None = None
        self.process: AgentProcess | None = None
        self.result: AgentResult | None = None
        self.stop_reason: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._done: asyncio.Future[AgentResult] | None = None
        self._task: asyncio.Task[None] | None = None
        self._cancel_signal: int | None = None
        self._escalation: asyncio.TimerHandle | None = None
        self._killed = False
        self.fallback: str | None = None
        """Why cancel stopped the process group, if it did: ``"cancel_unsupported"`` (the
        build answered ``-32601``), ``"cancel_timeout"`` (no answer within ``kill_grace``),
        ``"sigkill"``."""
        self._started_at = 0.0
        self._duration_ms: int | None = None
        self._start_failure: CursorAgentError | None = None

    # ---- the public surface of AgentRun ------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The ``agent acp`` process's pid (and process group id), shared by the client's turns."""
        return self.process.pid if self.process is not None else None

    @property
    def done(self) -> bool:
        """True once the turn has ended."""
        return self.result is not None

    @property
    def transcript(self) -> Transcript:
        """The turn's one fold so far."""
        return self._transcript

    async def start(self) -> None:
        """Start (or reuse) the agent and begin the turn; ``AgentNotFoundError`` if the agent
        cannot be started."""
        if self._loop is not None:
            raise RuntimeError("AcpTurn.start() was already called")
        loop = self._loop = asyncio.get_running_loop()
        self._done = loop.create_future()
        self._started_at = loop.time()
        try:
            conn = await self.transport.connect()
            self.process = conn.process
        except AgentNotFoundError:
            raise
        except CursorAgentError as exc:  # it started but failed to initialize: the result says
            self._start_failure = exc
            conn_now = self.transport.connection
            self.process = conn_now.process if conn_now is not None else None
        self._task = loop.create_task(self._run())

    async def wait(self) -> AgentResult:
        """The turn's result, once it has ended (cancelling the waiter does not stop it)."""
        if self._done is None:
            raise RuntimeError("AcpTurn.wait() before start()")
        return await asyncio.shield(self._done)

    def add_done_callback(self, fn: Callable[[asyncio.Future[AgentResult]], None]) -> None:
        """Call ``fn(future)`` on the loop once the turn has ended."""
        if self._done is None:
            raise RuntimeError("AcpTurn.add_done_callback() before start()")
        self._done.add_done_callback(fn)

    def cancel(self, sig: int = signal_module.SIGTERM) -> None:
        """Cancel the turn, keeping the session: ``session/cancel``, pending requests answered
        ``cancelled``; after ``kill_grace`` without the prompt's answer (or at once with
        ``SIGKILL``) the agent's process group is stopped. Call on the loop's thread."""
        if self.result is not None or self._loop is None:
            return
        first = self._cancel_signal is None
        if first or sig == signal_module.SIGKILL:
            self._cancel_signal = sig
        if self.stop_reason is None:
            self.stop_reason = "cancel"
        self.steering.cancel_pending()
        if sig == signal_module.SIGKILL:
            self.escalate("sigkill")
            return
        conn = self.transport.connection
        if first and self.session_id is not None and conn is not None:
            # (before the session is open, the turn ends cancelled without a prompt)
            conn.notify("session/cancel", {"sessionId": self.session_id})
            self._escalation = self._loop.call_later(self.config.kill_grace, self.escalate,
                                                     "cancel_timeout")

    @property
    def cancelling(self) -> bool:
        """True once :meth:`cancel` was called on the running turn."""
        return self._cancel_signal is not None and self.result is None

    def cancel_threadsafe(self, sig: int = signal_module.SIGTERM) -> None:
        """:meth:`cancel` from any thread; a no-op once the loop has closed."""
        loop = self._loop
        if loop is not None and self.result is None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self.cancel, sig)

    # ---- internals ---------------------------------------------------------------------

    def escalate(self, why: str) -> None:
        """Cancel's fallback: stop the process group (the session is reloaded next time)."""
        if self.result is not None or self._killed:
            return
        self._killed = True
        self.fallback = why
        assert self._loop is not None
        self._loop.create_task(self.transport.kill())

    def deliver(self, events: list[AgentEvent]) -> None:
        """Fold events once, hand them on (view hook, then the sink)."""
        if not events or self.result is not None:
            return
        add, observe = self._transcript.add, self.on_fold
        for event in events:
            changes = add(event)
            if observe is not None:
                observe(event, changes)
        if self._sink is not None:
            self._sink.put(events)

    def on_update(self, update: dict[str, Any]) -> None:
        """A ``session/update`` of this turn's session."""
        self.deliver(self.mapper.update(update))

    def _prompt_blocks(self) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": self._prompt}]
        if self.config.images:
            if not self.transport.supports_images:
                raise CursorAgentError("the agent does not accept images (it did not advertise "
                                       "promptCapabilities.image)")
            for path in self.config.images:
                mime = mimetypes.guess_type(path)[0] or "application/octet-stream"
                if not mime.startswith("image/"):
                    raise CursorAgentError(f"{path!r} is not an image file ({mime})")
                try:
                    with open(path, "rb") as f:
                        data = base64.b64encode(f.read()).decode("ascii")
                except OSError as exc:
                    raise CursorAgentError(f"cannot read the image {path!r}: {exc.strerror}") from None
                blocks.append({"type": "image", "mimeType": mime, "data": data})
        return blocks

    def _elapsed_ms(self) -> int:
        assert self._loop is not None
        return int((self._loop.time() - self._started_at) * 1000)

    async def _run(self) -> None:
        failure: CursorAgentError | None = None
        stop: str | None = None
        notes: list[AgentEvent] = []
        try:
            if self._start_failure is not None:
                raise self._start_failure
            sid = await self.transport.open_session(self.config, self, notes)
            self.session_id = sid
            self.mapper.session_id = sid
            self.steering.session_id = sid  # questions and plans carry no session id of their own
            model = self.transport.model_of(sid)
            want = self.config.model
            if want is not None and model is not None and want != model.partition("[")[0] \
                    and self.transport.model_id_for(sid, want) != model:
                # the process was started with another turn's --model: switch this session
                model = await self.transport.set_model(sid, want)
            self.deliver(self.mapper.begin(self._prompt, model=model or self.config.model,
                                           cwd=self.transport._sessions[sid].cwd))
            for note in notes:
                note.data["session_id"] = sid
            self.deliver(notes)
            mode = self.config.session_mode
            if mode is not None and self.transport.session_mode(sid) != mode:
                await self.transport.set_mode(sid, mode)  # e.g. "plan": before the prompt
            conn = await self.transport.connect()
            if self._cancel_signal is not None:  # cancelled before the prompt was sent
                stop = "cancelled"
            else:
                request = conn.request("session/prompt", {"sessionId": sid,
                                                          "prompt": self._prompt_blocks()})
                with anyio.fail_after(self.config.timeout):  # not wait_for: it can lose a cancel
                    answer = await request
                value = answer.get("stopReason") if isinstance(answer, dict) else None
                stop = value if isinstance(value, str) else "end_turn"
        except TimeoutError:
            self.stop_reason = "timeout"
            failure = AgentTimeoutError(
                f"the turn ran past timeout={self.config.timeout:g} s; it was cancelled")
            if self.session_id is not None:
                self.cancel()  # the agent stops working on it; the session goes on
        except AgentProcessError as exc:
            if self._cancel_signal is not None:
                stop = "cancelled"  # cancel's fallback stopped the process
            else:
                failure = AgentProcessError(
                    f"{exc.message}; the turn is lost, the next prompt restarts the agent and "
                    "reloads the session", exit_code=exc.exit_code, stderr=exc.stderr)
        except AcpRequestError as exc:  # "Authentication required" is an AuthenticationError
            failure = self.transport.typed_error(exc)
        except CursorAgentError as exc:
            failure = exc
        except Exception as exc:  # a bug must still end the turn, typed
            failure = CursorAgentError(f"the ACP turn failed: {type(exc).__name__}: {exc}")
        self._duration_ms = self._elapsed_ms()
        self._finish(stop, failure)

    def _finish(self, stop: str | None, failure: CursorAgentError | None) -> None:
        if self._escalation is not None:
            self._escalation.cancel()
        self.steering.cancel_pending()  # a late request of this turn is answered cancelled
        events: list[AgentEvent] = []
        conn = self.transport.connection
        stderr = conn.stderr if conn is not None else ""
        cancelled = False
        if failure is not None:
            code = "timeout" if isinstance(failure, AgentTimeoutError) else "exit"
            events.append(error_event(str(failure), code=code,
                                      error_type=type(failure).__name__,
                                      exit_code=failure.exit_code, transport="acp",
                                      session_id=self.session_id))
            events.append(client_result_event(failure, session_id=self.session_id,
                                              exit_code=failure.exit_code))
            events[-1].data["transport"] = "acp"
        else:
            cancelled = stop == "cancelled"
            events += self.mapper.end(stop, duration_ms=self._duration_ms)
        self.deliver(events)
        result = self._transcript.to_result()
        result.stderr = stderr if failure is not None else ""
        result.cancelled = cancelled
        if result.duration_ms is None:
            result.duration_ms = self._duration_ms
        if failure is not None:
            result.success = False
            result.exception = failure
            result.error = str(failure)
        elif cancelled:
            result.success = False
            result.exception = CursorAgentError(
                "the turn was cancelled (session/cancel); the session goes on")
            result.error = str(result.exception)
        else:
            result.exception = None if result.success else CursorAgentError(
                result.error or "the turn failed")
        if self.session_id is not None:
            self.transport.release(self.session_id, self)
            result.session_id = self.session_id
        self.result = result
        if self._sink is not None:
            self._sink.close()
        if self._done is not None and not self._done.done():
            self._done.set_result(result)
