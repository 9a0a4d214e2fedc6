"""One prompt turn over ACP, with the public surface of :class:`~.run.AgentRun`.

:class:`AcpTurn` opens (or continues, or loads) its session on the client's
:class:`~.acp_transport.AcpTransport`, sends ``session/prompt`` and folds what the agent sends
(mapped by :class:`~cursor_agent_api.protocol.acp_mapper.AcpMapper`) into its
:class:`~cursor_agent_api.protocol.Transcript` once, handing the events, in order, to the sink, each
batch with what each event changed. It ends with exactly one result event: the
mapper's (``end_turn``: success; ``cancelled``: ``AgentResult.cancelled``), or the client's
when the turn failed (:func:`~.outcome.client_result_event`, a typed error).

* :meth:`AcpTurn.cancel` sends ``session/cancel``, answers every pending request
  ``cancelled`` and waits ``kill_grace`` seconds for the prompt's answer; without one (a build
  that does not support cancel), or with ``SIGKILL``, it stops the agent's process group and
  the session is ``session/load``ed on the next prompt. The session survives either way. A
  prompt answered with an error once the turn is cancelling ends the turn cancelled too (the
  shape ACP.md §13 leaves open), not failed.
* The process dying mid-turn ends the turn with
  :class:`~cursor_agent_api.errors.AgentProcessError` (exit code, stderr tail); the next
  turn restarts the agent.
* ``config.session_mode`` (such as ``"plan"``) is set with ``session/set_mode`` before the
  prompt when the session is in another mode.
* ``timeout`` bounds the whole turn, setup included (``initialize``, ``session/new`` or
  ``/load``, the model and mode switches, then ``session/prompt``): it is cancelled, then
  fails with :class:`~cursor_agent_api.errors.AgentTimeoutError` naming the request the agent
  had not answered. Past the prompt, it is cancelled as by :meth:`AcpTurn.cancel`, and waits
  as long for the prompt's answer (``kill_grace``, then the process group is stopped): what
  the agent writes until then is this turn's, and the session takes its next prompt only
  once the agent is done with this one. Without a ``timeout``, each setup request is bounded
  by :data:`~.acp_transport.ACP_REQUEST_TIMEOUT`.
* Cancelled (or timed out) before its prompt is sent (its session being opened, or the
  connection it waits for while another turn starts the process), the turn stops waiting at
  once and ends cancelled, its prompt never sent; if ``initialize`` was unanswered, the
  agent's process group is stopped (a process that does not answer ``initialize`` is
  broken) and the next turn starts a new one.
  A process that answered ``initialize`` is kept (other sessions may be running on it).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import mimetypes
import os
import signal as signal_module
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from ..config import AgentConfig
from ..errors import (
    AcpRequestError,
    AgentProcessError,
    AgentStartError,
    AgentTimeoutError,
    CursorAgentError,
    TurnCancelledError,
)
from ..protocol import AgentEvent, AgentResult, Transcript, error_event
from ..protocol.acp_mapper import AcpMapper
from .acp_steering import TURN_SESSIONS, Steering
from .argv import check_workspace
from .outcome import client_result_event
from .scrub import scrub_failure

if TYPE_CHECKING:
    from .acp_connection import AcpConnection
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
        self.mapper = AcpMapper("")
        self.steering = Steering(config, mapper=self.mapper, emit=self.deliver,
                                 on_cancel=lambda: self.cancel())
        self.steering.sessions = TURN_SESSIONS.get()  # the sessions whose turn this is
        self.session_id: str | None = None
        self.process: AgentProcess | None = None
        self.result: AgentResult | None = None
        self.stop_reason: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        # the turn (made by start(), once it has begun): its outcome is the turn's (wait(),
        # done callbacks)
        self._task: asyncio.Task[AgentResult] | None = None
        self._cancel_signal: int | None = None
        self._escalation: asyncio.TimerHandle | None = None
        self._killed = False
        self._ended = False  # set as the turn ends (before its result): cancel() is a no-op
        self.fallback: str | None = None
        """Why cancel stopped the process group, if it did: ``"cancel_unsupported"`` (the
        build answered ``-32601``), ``"cancel_timeout"`` (no answer within ``kill_grace``),
        ``"sigkill"``."""
        self._started_at = 0.0
        self._duration_ms: int | None = None
        self._connecting: asyncio.Task[AcpConnection] | None = None
        self._setup_scope: anyio.CancelScope | None = None
        self._prompt_sent = False
        self._answer: asyncio.Task[Any] | None = None  # session/prompt's request
        self.waiting_for = "initialize"
        """The request whose answer the turn waits for (named when the turn times out)."""

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
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The event loop the turn was started on (``None`` before ``start()``)."""
        return self._loop

    @property
    def transcript(self) -> Transcript:
        """The turn's one fold so far."""
        return self._transcript

    async def start(self) -> None:
        """Start (or reuse) the agent and begin the turn; ``AgentStartError`` if the agent
        cannot be started."""
        if self._loop is not None:
            raise RuntimeError("AcpTurn.start() was already called")
        # the config as it starts: a tool host gives it the turn's MCP servers (its own tool
        # server among them, which the steering allows) after the turn was made
        self.steering.config = self.config
        check_workspace(self.config.workspace)  # the session's cwd (the process may be running)
        loop = self._loop = asyncio.get_running_loop()
        self._started_at = loop.time()
        # wait only until the process runs: an unanswered initialize is the turn's to bound
        spawned: asyncio.Future[None] = loop.create_future()
        self.transport.turn_began(self)  # the process stays while this turn runs
        connecting = self._connecting = loop.create_task(self.transport.connect(spawned))
        try:
            waits: set[asyncio.Future[Any]] = {connecting, spawned}
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # interrupted: the start stops here (a half-started process too)
            connecting.cancel()
            self.transport.turn_dropped(self)
            raise
        if connecting.done() and not connecting.cancelled():
            exc = connecting.exception()
            if isinstance(exc, AgentStartError):
                self.transport.turn_dropped(self)
                raise exc
        conn_now = self.transport.connection
        self.process = conn_now.process if conn_now is not None else None
        self._task = loop.create_task(self._run())

    async def wait(self) -> AgentResult:
        """The turn's result, once it has ended (cancelling the waiter does not stop it).
        Call once :meth:`start` has returned (before, or after a start that raised,
        ``RuntimeError``)."""
        if self._task is None:
            raise RuntimeError("AcpTurn.wait() before start() returned")
        return await asyncio.shield(self._task)

    def add_done_callback(self, fn: Callable[[asyncio.Future[AgentResult]], None]) -> None:
        """Call ``fn(future)`` on the loop once the turn has ended (its result; cancelled when
        the loop shut down first). Call once :meth:`start` has returned (before,
        ``RuntimeError``)."""
        if self._task is None:
            raise RuntimeError("AcpTurn.add_done_callback() before start() returned")
        self._task.add_done_callback(fn)

    def cancel(self, sig: int = signal_module.SIGTERM) -> None:
        """Cancel the turn, keeping the session: ``session/cancel``, pending requests answered
        ``cancelled``; after ``kill_grace`` without the prompt's answer (or at once with
        ``SIGKILL``) the agent's process group is stopped. Call on the loop's thread. A no-op
        once the turn has ended (its result may still be on its way)."""
        if self.result is not None or self._loop is None or self._ended:
            return
        first = self._cancel_signal is None
        if first or sig == signal_module.SIGKILL:
            self._cancel_signal = sig
        if self.stop_reason is None:
            self.stop_reason = "cancel"
        self.steering.cancel_pending()
        if self._setup_scope is not None:  # before the prompt: stop waiting for the setup
            self._setup_scope.cancel()
            return
        if sig == signal_module.SIGKILL:
            self.escalate("sigkill")
            return
        conn = self.transport.connection
        if first and self.session_id is not None and self._prompt_sent and conn is not None:
            # (before the session is open, the turn ends cancelled without a prompt)
            conn.notify("session/cancel", {"sessionId": self.session_id})
            self.transport.condemn(self)  # no new turn on the process until this one ends
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
        if self.result is not None or self._killed or self._ended:
            return  # (an ended turn stops nothing: its process is another turn's now)
        self._killed = True
        self.fallback = why
        self.transport.condemn(self)
        assert self._loop is not None
        self._loop.create_task(self.transport.kill())

    def deliver(self, events: list[AgentEvent]) -> None:
        """Fold events once, hand them on to the sink with what each changed."""
        if not events or self.result is not None:
            return
        add = self._transcript.add
        changes = [add(event) for event in events]
        if self._sink is not None:
            self._sink.put(events, changes)

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
                if os.path.isdir(path):
                    raise CursorAgentError(f"{path!r} is a directory, not an image file")
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

    async def _run(self) -> AgentResult:
        failure: CursorAgentError | None = None
        stop: str | None = None
        notes: list[AgentEvent] = []
        try:
            with anyio.fail_after(self.config.timeout):  # not wait_for: it can lose a cancel
                stop = await self._setup_and_prompt(notes)
        except TimeoutError:
            self.stop_reason = "timeout"
            failure = AgentTimeoutError(
                f"the turn ran past its timeout ({self.config.timeout:g} s) waiting for the agent's "
                f"answer to {self.waiting_for}; it was cancelled")
            if self._answer is not None:  # the prompt is sent, or its task sends none now
                self.cancel()  # the agent stops working on it; the session goes on
                await self._cancelled_answer()
        except AgentProcessError as exc:
            if self._cancel_signal is not None:
                stop = "cancelled"  # cancel's fallback stopped the process
            else:
                failure = AgentProcessError(
                    f"{exc.message}; the turn is lost, the next prompt restarts the agent and "
                    "reloads the session", exit_code=exc.exit_code, stderr=exc.stderr,
                    remedy=exc.remedy)
        except AcpRequestError as exc:  # "Authentication required" is an AuthenticationError
            if self._cancel_signal is not None and exc.method == "session/prompt":
                stop = "cancelled"  # a build answering the cancelled prompt with an error
            else:
                failure = self.transport.typed_error(exc)
        except CursorAgentError as exc:
            failure = exc
        except Exception as exc:  # a bug must still end the turn, typed
            failure = CursorAgentError(f"the ACP turn failed: {type(exc).__name__}: {exc}")
        except BaseException:  # cancelled from outside (its loop ends): so is the prompt
            self._shut_down()
            raise
        connecting = self._connecting
        if connecting is not None:
            if not connecting.done():
                connecting.cancel()  # initialize unanswered: the process is broken: stop it
            with contextlib.suppress(BaseException):
                await connecting  # (and its exception is retrieved)
        self._duration_ms = self._elapsed_ms()
        self._ended = True  # a cancel from now on neither condemns nor stops the process
        try:  # a closed client's agent acp stops with its last turn, before the result shows
            with contextlib.suppress(Exception):
                await self.transport.turn_ended(self)
        finally:
            result = self._finish(stop, failure)
        return result  # the turn's outcome: wait() and the done callbacks have it

    def _shut_down(self) -> None:
        """The turn's task was cancelled from outside (only its loop ending does that, as
        ``asyncio.run`` cancels the tasks left): so is the prompt, the turn's waiters are
        cancelled (as :class:`~.run.AgentRun`'s are then), and it no longer keeps the process,
        which the transport's watch task stops on that loop."""
        if self._answer is not None:
            self._answer.cancel()
        if self._escalation is not None:
            self._escalation.cancel()
        if self.stop_reason is None:
            self.stop_reason = "shutdown"
        self.steering.cancel_pending()
        self.transport.turn_dropped(self)
        if self._sink is not None:
            self._sink.close()

    async def _setup_and_prompt(self, notes: list[AgentEvent]) -> str:
        """Open the session and get the connection for the prompt (``cancel()`` stops either
        at once), then prompt: the stop reason."""
        conn = None
        with anyio.CancelScope() as scope:
            self._setup_scope = scope
            try:
                if self._cancel_signal is None:
                    await self._setup(notes)
                    self.waiting_for = "session/prompt"
                    # (waits while another turn starts the process, or while a cancelled
                    # turn may have it stopped)
                    conn = await self.transport.connect()
                    while self.session_id is not None \
                            and not self.transport.is_live(self.session_id):
                        # it was stopped: the session opened on it is loaded on the new one
                        await self._reopen(notes)
                        self.waiting_for = "session/prompt"
                        conn = await self.transport.connect()
            finally:
                self._setup_scope = None
        if self._cancel_signal is not None or self.session_id is None or conn is None:
            return "cancelled"  # cancelled before the prompt was sent
        blocks = self._prompt_blocks()
        params = {"sessionId": self.session_id, "prompt": blocks}

        async def prompt() -> Any:
            # The task's first step: a cancel that ran since it was made means no prompt;
            # else the frame is written in this step (before anything else on the loop), so
            # a later cancel's session/cancel always follows it.
            if self._cancel_signal is not None:
                return {"stopReason": "cancelled"}
            self._prompt_sent = True
            return await conn.request("session/prompt", params)

        assert self._loop is not None
        # a task of its own: the timeout stops this wait, not the request (_cancelled_answer)
        self._answer = self._loop.create_task(prompt())
        answer = await asyncio.shield(self._answer)
        value = answer.get("stopReason") if isinstance(answer, dict) else None
        return value if isinstance(value, str) else "end_turn"

    async def _cancelled_answer(self) -> None:
        """After the timeout cancelled the prompt: wait for the agent's answer to it, as a
        cancel does (``cancelled``; an error once cancel's fallback stopped the process after
        ``kill_grace``, or the process died), so that what the agent writes until then is
        this turn's, and its session takes the next prompt only once the agent is done."""
        if self._answer is not None:
            with contextlib.suppress(Exception):  # the turn's outcome is the timeout
                await self._answer  # (cancelling the turn's task cancels the request's)

    async def _setup(self, notes: list[AgentEvent]) -> None:
        """``initialize`` (if the process is new), the session, its model and mode."""
        assert self._connecting is not None
        await asyncio.shield(self._connecting)  # a cancelled turn cancels it in _run
        self._connecting = None
        self.waiting_for = "session/new"
        sid = await self.transport.open_session(self.config, self, notes)
        self._set_session(sid)
        model = await self._switch_model(sid)
        self.deliver(self.mapper.begin(self._prompt, model=model or self.config.model,
                                       cwd=self.transport._sessions[sid].cwd))
        for note in notes:
            note.data["session_id"] = sid
        self.deliver(notes)
        await self._switch_mode(sid)

    async def _reopen(self, notes: list[AgentEvent]) -> None:
        """The session was opened on a process a cancelled turn had stopped before this
        turn's prompt: ``session/load`` it on the new one (its model and mode set again)."""
        assert self.session_id is not None
        self.waiting_for = "session/load"
        again: list[AgentEvent] = []
        sid = await self.transport.open_session(
            self.config.with_overrides(resume=self.session_id), self, again)
        self._set_session(sid)  # (a new one if the agent could not load it: a note says so)
        await self._switch_model(sid)
        for note in again:
            note.data["session_id"] = sid
        self.deliver(again)
        await self._switch_mode(sid)

    def _set_session(self, sid: str) -> None:
        self.session_id = sid
        self.mapper.session_id = sid
        self.steering.session_id = sid  # questions and plans carry no session id of their own

    async def _switch_model(self, sid: str) -> str | None:
        """The session's model, switched to ``config.model`` if it runs another: the model."""
        model = self.transport.model_of(sid)
        want = self.config.model
        if want is not None and model is not None and want != model.partition("[")[0] \
                and self.transport.model_id_for(sid, want) != model:
            # the process was started with another turn's --model: switch this session
            self.waiting_for = "session/set_config_option"
            model = await self.transport.set_model(sid, want, bounded=self.config.timeout is None)
        return model

    async def _switch_mode(self, sid: str) -> None:
        """``config.session_mode`` (such as ``"plan"``), set if the session is in another."""
        mode = self.config.session_mode
        if mode is not None and self.transport.session_mode(sid) != mode:
            self.waiting_for = "session/set_mode"
            # e.g. "plan": before the prompt
            await self.transport.set_mode(sid, mode, bounded=self.config.timeout is None)

    def _finish(self, stop: str | None, failure: CursorAgentError | None) -> AgentResult:
        if self._escalation is not None:
            self._escalation.cancel()
        self.steering.cancel_pending()  # a late request of this turn is answered cancelled
        events: list[AgentEvent] = []
        conn = self.transport.connection
        stderr = conn.stderr if conn is not None and failure is not None else ""
        failure, stderr = scrub_failure(self.config, failure, stderr,  # runtime/scrub.py
                                        self.transport.env)
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
            result.exception = TurnCancelledError(
                "the turn was cancelled (session/cancel); the session goes on" if self._prompt_sent
                else "the turn was cancelled before its prompt was sent")
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
        return result
