"""The lifecycle of one turn — written once, driven by the sync and the async API.

:class:`AgentRun` starts the agent (its own process group), writes the prompt
on stdin and closes it, reads stdout and stderr concurrently as they arrive
(stdout through the protocol's :class:`~cursor_agent_api.protocol.EventReader`,
stderr into a bounded, ANSI-stripped tail), folds each event once, and performs what the
stop policy asks (:mod:`.stop_policy`, a pure state machine: when the group is signalled
— after the result's ``result_grace``, on ``timeout``, ``idle_timeout``, :meth:`AgentRun.cancel`
or processes left behind — SIGKILL after ``kill_grace``, and when the turn is over: the
agent reaped and its group empty). How a turn ends:

* a valid result is a success, even when a non-zero exit follows;
* ``timeout`` / ``idle_timeout``: :class:`~cursor_agent_api.errors.AgentTimeoutError`;
* stdout and stderr closed without a result, the agent still running ``result_grace`` seconds
  later: its group is stopped, :class:`~cursor_agent_api.errors.AgentProcessError`
  (no more output can come: the turn never waits for such an agent forever);
* exit without a result: failure with the exit code, the stderr tail mapped to a
  typed error, and the partial transcript; 130/143 count as cancelled. Such
  failures also arrive as an ``ERROR`` event before the stream ends;
* a stdout line over ``max_line_bytes`` arrives as the protocol's ``ERROR``
  event; the stream goes on (stopping an agent mid-edit is worse than letting
  it finish) and the turn fails with :class:`~cursor_agent_api.errors.ProtocolError`;
* text mode: stdout is the result, kept up to ``max_line_bytes`` (none with
  ``keep_content=False``); past it, the same: the stream goes on, ``ProtocolError``.

It is the subprocess transport's :class:`~.transport.Turn`; a ``spawn`` function swaps the
process for another (the script transport's in-memory agent, :mod:`cursor_agent_api.testing`)
and keeps every rule above. The process reports to the run (a :class:`~.process.ProcessListener`)
on the loop; the sync and the async faces read what it hands to its sink: each batch of
events with what each changed in the transcript (the turn is folded once, here). stdout has
one reader, the loop.

What does not live here: argv/env (:mod:`.argv`), the stop rules
(:mod:`.stop_policy`), /proc and stopping a group (:mod:`.groups`), the thread the sync
API runs this on (:mod:`.portal`), the public response objects (:mod:`cursor_agent_api.client`).

Example:
    >>> import asyncio, sys
    >>> from cursor_agent_api.config import AgentConfig
    >>> script = 'import sys; sys.stdin.read(); print(\\'{"type":"result","result":"hi"}\\')'
    >>> async def main():
    ...     run = AgentRun(AgentConfig(), "hello", argv=[sys.executable, "-c", script])
    ...     await run.start()
    ...     return await run.wait()
    >>> r = asyncio.run(main())
    >>> r.success, r.result, r.exit_code
    (True, 'hi', 0)
"""

from __future__ import annotations

import asyncio
import contextlib
import signal as signal_module
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ..config import AgentConfig, OutputFormat
from ..errors import (
    AgentProcessError,
    AgentTimeoutError,
    CursorAgentError,
    ProtocolError,
    TurnCancelledError,
)
from ..protocol import AgentEvent, AgentResult, EventReader, EventType, Transcript, error_event
from .argv import build_argv, build_env, check_workspace, resolve_binary
from .outcome import client_result_event
from .process import AgentProcess, RunProcess
from .scrub import scrub_failure
from .sinks import EventSink
from .stderr import INTERRUPTED_REMEDY, StderrTail, classify_failure, silent_remedy, stderr_summary
from .stop_policy import CLOSE_PIPES, Signal, StopPolicy, StopReason, Wait

__all__ = ["AgentRun"]

_LIMIT = "{max_line_bytes|--max-line-bytes}"
"""The line limit as a ProtocolError names it: the library's parameter, the command line's flag."""


Spawner = Callable[["AgentRun"], Awaitable[RunProcess]]
"""Starts a turn's agent reporting to the run (a :class:`~.process.ProcessListener`): its
process. Without one, the run spawns an :class:`~.process.AgentProcess`."""


def _signal_name(sig: int) -> str:
    try:
        return signal_module.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


class AgentRun:
    """One turn of one agent process. Loop-bound: create, start and use it on one event loop.

    ``start()`` spawns (raising :class:`~cursor_agent_api.errors.AgentNotFoundError`
    if the binary cannot be started); events go to ``sink`` as they are read, each batch
    with what each event changed in :attr:`transcript` (``sink.put(events, changes)``);
    ``wait()`` returns the :class:`~cursor_agent_api.protocol.AgentResult` once the
    agent is reaped and its group is gone. ``argv``/``env`` default to what
    ``config`` builds; tests, benchmarks and the short commands (:mod:`.commands`) pass
    their own, and ``cwd``.

    Example:
        >>> import asyncio, sys
        >>> async def main():
        ...     run = AgentRun(AgentConfig(), None, argv=[sys.executable, "-c", "exit(3)"])
        ...     await run.start()
        ...     return await run.wait()
        >>> r = asyncio.run(main())
        >>> r.success, r.exit_code, type(r.exception).__name__
        (False, 3, 'AgentProcessError')
    """

    def __init__(
        self,
        config: AgentConfig,
        prompt: str | bytes | None,
        *,
        sink: EventSink | None = None,
        argv: Sequence[str] | None = None,
        env: dict[str, str] | None = None,
        spawn: Spawner | None = None,
        cwd: str | None = None,
    ) -> None:
        config.validate()
        self.config = config
        self.cwd = cwd
        self._spawn = spawn
        # a turn of the agent (argv built from config: --workspace=...), not a short command
        self._agent_turn = spawn is None and argv is None
        self.env: dict[str, str] = {}
        if spawn is None:
            self.env = build_env(config) if env is None else env
            if argv is None:
                argv = build_argv(config, binary=resolve_binary(config, self.env))
        self.argv = list(argv or ())
        if isinstance(prompt, str):
            prompt = prompt.encode("utf-8")
        self._prompt = prompt
        self._sink = sink
        self._reader = EventReader(config.max_line_bytes)
        self._transcript = Transcript(keep_events=config.keep_events,
                                      keep_content=config.keep_content)
        self._text_mode = config.output_format is OutputFormat.TEXT
        # text mode: stdout exactly as written, the turn's result; kept (keep_content) up to
        # max_line_bytes, the bound of a result's text in the other formats
        self._stdout_bytes = bytearray()
        self._stdout_room = config.max_line_bytes if config.keep_content else 0
        self._stdout_overflow = False
        self._stderr = StderrTail(config.stderr_tail_bytes)
        self.process: RunProcess | None = None
        self.stop_reason: str | None = None
        self.result: AgentResult | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._started_at = 0.0
        self._last_activity = 0.0
        self._stdout_done = False
        self._stderr_done = False
        self._paused = False
        self._wake: asyncio.Event | None = None
        # the supervisor (made by start()): its outcome is the turn's (wait(), done callbacks)
        self._task: asyncio.Task[AgentResult] | None = None
        self._policy: StopPolicy | None = None  # the stop policy: made by start(), fed here

    # ---- public ------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The agent's pid (and process group id) once started."""
        return self.process.pid if self.process is not None else None

    @property
    def done(self) -> bool:
        """True once the run has ended (the result is set, the group is gone)."""
        return self.result is not None

    @property
    def transcript(self) -> Transcript:
        """The turn's transcript so far (read it on the loop's thread)."""
        return self._transcript

    async def start(self) -> None:
        """Spawn the agent, send the prompt on stdin and close it, start the supervisor."""
        if self._loop is not None:
            raise RuntimeError("AgentRun.start() was already called")
        if self._agent_turn:
            check_workspace(self.config.workspace)
        loop = self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._started_at = self._last_activity = loop.time()
        cfg = self.config
        self._policy = StopPolicy(
            started_at=self._started_at, timeout=cfg.timeout, idle_timeout=cfg.idle_timeout,
            result_grace=cfg.result_grace, kill_grace=cfg.kill_grace)
        if self._spawn is None:  # a start cut short is undone inside spawn(): no process left
            self.process = await AgentProcess.spawn(self.argv, self, env=self.env, cwd=self.cwd,
                                                    kill_grace=self.config.kill_grace)
        else:
            self.process = await self._spawn(self)
        self.process.write_stdin(self._prompt or b"")
        self._task = loop.create_task(self._supervise())

    async def wait(self) -> AgentResult:
        """Wait for the end of the run; its result. Cancelling the waiter does not stop the run.
        Call once :meth:`start` has returned (before, ``RuntimeError``)."""
        if self._task is None:
            raise RuntimeError("AgentRun.wait() before start() returned")
        return await asyncio.shield(self._task)

    def add_done_callback(self, fn: Callable[[asyncio.Future[AgentResult]], None]) -> None:
        """Call ``fn(future)`` on the loop once the run has ended (its result; cancelled when
        the loop shut down first; an exception only from a bug). Call once :meth:`start` has
        returned (before, ``RuntimeError``)."""
        if self._task is None:
            raise RuntimeError("AgentRun.add_done_callback() before start() returned")
        self._task.add_done_callback(fn)

    def cancel(self, sig: int = signal_module.SIGTERM) -> None:
        """Stop the turn: ``sig`` to the group now, SIGKILL after ``kill_grace``. Returns at once.

        Call on the loop's thread (from another thread: ``loop.call_soon_threadsafe``).
        A second call with SIGKILL escalates at once.
        """
        policy = self._policy
        if self.result is not None or self.process is None or policy is None:
            return
        if policy.cancel_signal is None or sig == signal_module.SIGKILL:
            policy.cancel(sig)
            self._poke()

    def cancel_threadsafe(self, sig: int = signal_module.SIGTERM) -> None:
        """:meth:`cancel` from any thread (or a finalizer); a no-op once the loop has closed."""
        loop = self._loop
        if loop is not None and self.result is None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self.cancel, sig)

    # ---- ProcessListener (called by the transport, on the loop) ------------------------

    def stdout_data(self, data: bytes) -> None:
        """Feed a stdout chunk to the reader; hand the completed events on at once."""
        assert self._loop is not None
        self._last_activity = self._loop.time()
        if self._text_mode:
            self._keep_stdout(data)
        events = self._reader.feed(data)
        if events:
            self._deliver(events)

    def _keep_stdout(self, data: bytes) -> None:
        """Text mode: keep ``data`` as part of the result, within its bound."""
        room = self._stdout_room - len(self._stdout_bytes)
        if len(data) <= room:
            self._stdout_bytes += data
        else:
            self._stdout_bytes += data[:max(room, 0)]
            self._stdout_overflow = self._stdout_room > 0

    def stdout_eof(self) -> None:
        """stdout closed: flush the reader's unfinished tail."""
        if self._stdout_done:
            return
        self._stdout_done = True
        events = self._reader.close()
        if events:
            self._deliver(events)
        self._poke()

    def stderr_data(self, data: bytes) -> None:
        """Keep the stderr tail (bounded); counts as activity for ``idle_timeout``."""
        assert self._loop is not None
        self._last_activity = self._loop.time()
        self._stderr.feed(data)

    def stderr_eof(self) -> None:
        """stderr closed."""
        self._stderr_done = True
        self._poke()

    def exited(self) -> None:
        """The agent itself exited."""
        self._poke()

    # ---- internals ---------------------------------------------------------------------

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def _deliver(self, events: list[AgentEvent]) -> None:
        transcript = self._transcript
        add = transcript.add
        changes = [add(event) for event in events]  # each event folded once, here
        policy = self._policy
        if transcript.result_event is not None and policy is not None \
                and policy.result_at is None:
            assert self._loop is not None
            policy.result_seen(self._loop.time())
            self._poke()
        sink = self._sink
        if sink is not None:
            sink.put(events, changes)
            if sink.full and not self._paused and self.process is not None \
                    and sink.pause(self._resume):
                self._paused = True
                self.process.pause_stdout()

    def _resume(self) -> None:
        if self._paused:
            self._paused = False
            assert self._loop is not None
            self._last_activity = self._loop.time()
            if self.process is not None:
                self.process.resume_stdout()
            self._poke()

    async def _sleep(self, until: float | None) -> None:
        assert self._wake is not None and self._loop is not None
        wake = self._wake
        if wake.is_set():
            wake.clear()
            return
        # a timer that pokes, not asyncio.wait_for: before Python 3.12, wait_for loses a
        # cancel that lands as the wait ends (bpo-42130), and this loop would then outlive
        # asyncio.run's one cancel at shutdown (tests/client/test_cancel_races.py)
        timer = None if until is None else self._loop.call_at(until, wake.set)
        try:
            await wake.wait()
        finally:
            if timer is not None:
                timer.cancel()
        wake.clear()

    async def _supervise(self) -> AgentResult:
        proc = self.process
        loop = self._loop
        assert proc is not None and loop is not None
        policy = self._policy
        assert policy is not None
        try:
            while True:
                now = loop.time()
                exited = proc.has_exited
                group_empty = exited and not proc.alive()
                action = policy.step(
                    now, exited=exited, group_empty=group_empty,
                    eof=self._stdout_done and self._stderr_done,
                    last_activity=self._last_activity, paused=self._paused)
                if isinstance(action, Wait):
                    await self._sleep(action.until)
                elif isinstance(action, Signal):
                    if self.stop_reason is None:
                        self.stop_reason = action.reason
                    proc.signal(action.sig)
                elif action is CLOSE_PIPES:
                    proc.abandon_pipes()
                    self._stderr_done = True
                    self.stdout_eof()
                else:
                    break
        except BaseException:
            # Only a loop shutting down cancels this task (waiters are shielded from it):
            # kill the group, and reap while the loop still runs the cancelled tasks.
            if self.stop_reason is None:
                self.stop_reason = StopReason.SHUTDOWN
            proc.kill_now()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(proc.wait_gone(None), 5.0)
            with contextlib.suppress(Exception):
                proc.release()
            if self._sink is not None:
                self._sink.close()
            raise  # (a loop's shutdown: the turn ends cancelled, for wait() and its callbacks)
        result = self._finish()
        proc.close()
        self.result = result
        if self._sink is not None:
            self._sink.close()
        return result  # the turn's outcome: wait() and the done callbacks have it

    def _failure(self, exit_code: int | None, stderr: str) -> tuple[CursorAgentError, str] | None:
        """The turn's error and its ERROR-event code; ``None`` if the turn succeeded."""
        t = self._transcript
        cfg = self.config
        binary = self.argv[0] if self.argv else cfg.agent_binary  # as started (resolved on PATH)
        reason = self.stop_reason
        if reason == StopReason.OUTPUT_CLOSED and exit_code not in (137, 143):
            reason = None  # it exited by itself as its output's end was seen: its exit tells
        if self._reader.oversize_lines:
            return ProtocolError(
                f"{self._reader.oversize_lines} line(s) of the agent's output exceeded "
                f"{_LIMIT}={cfg.max_line_bytes} and were dropped; the turn is incomplete",
                exit_code=exit_code, stderr=stderr), "line_too_long"
        if self._stdout_overflow:
            return ProtocolError(
                f"the agent's text output passed {_LIMIT}={cfg.max_line_bytes}: the "
                f"result holds its first {cfg.max_line_bytes} bytes (every line arrived as its "
                "RAW event)", exit_code=exit_code, stderr=stderr), "output_too_long"
        if self._text_mode:
            if exit_code == 0 and reason is None:
                return None
        elif t.success:
            return None
        if t.result_event is not None and t.result_event.type is EventType.RESULT_ERROR:
            text = t.result_event.text or "the agent reported an error"
            classified = classify_failure(exit_code, stderr)
            if type(classified) is AgentProcessError:
                return AgentProcessError(f"the agent reported an error: {text}",
                                         exit_code=exit_code, stderr=stderr), "result_error"
            return classified, "result_error"
        if reason == StopReason.TIMEOUT:
            return AgentTimeoutError(
                f"the turn ran past its timeout ({cfg.timeout:g} s) without a result; "
                "the agent's process group was stopped", exit_code=exit_code,
                stderr=stderr), "timeout"
        if reason == StopReason.IDLE:
            assert cfg.idle_timeout is not None
            return AgentTimeoutError(
                f"the agent wrote nothing for {cfg.idle_timeout:g} s (its idle timeout); "
                "its process group was stopped", exit_code=exit_code, stderr=stderr), "idle_timeout"
        if reason == StopReason.CANCEL:
            cancelled = self._policy.cancel_signal if self._policy is not None else None
            assert cancelled is not None
            return TurnCancelledError(
                f"the turn was cancelled ({_signal_name(cancelled)} to the agent's "
                "process group) before its result", exit_code=exit_code, stderr=stderr), "cancelled"
        if reason == StopReason.OUTPUT_CLOSED:
            # the program started (agent_binary as resolved), never the agent's words; no
            # "see the stderr tail" remedy: it closed its stderr too
            return AgentProcessError(
                "the agent closed its output (stdout and stderr) without a result but did not "
                f"exit; its process group was stopped {cfg.result_grace:g} s later. The agent "
                f"({binary!r}) is broken or stuck",
                remedy=silent_remedy(binary), exit_code=exit_code, stderr=stderr), "output_closed"
        if reason == StopReason.SHUTDOWN:
            return CursorAgentError("the event loop running the turn shut down",
                                    exit_code=exit_code, stderr=stderr), "shutdown"
        if exit_code in (130, 143):
            return AgentProcessError(
                f"the agent was interrupted (exit code {exit_code}) before its result",
                exit_code=exit_code, stderr=stderr,
                remedy=None if stderr_summary(stderr) else INTERRUPTED_REMEDY), "interrupted"
        if exit_code == 0:
            what = "the output ended" if not self._text_mode else "the agent was stopped"
            reason = stderr_summary(stderr)
            detail = f": {reason}" if reason else ""
            return AgentProcessError(
                f"the agent exited with code 0 but {what} without a result event{detail}",
                exit_code=exit_code, stderr=stderr,
                remedy=None if reason else silent_remedy(binary)), "no_result"
        return classify_failure(exit_code, stderr, binary=binary), "exit"

    def _finish(self) -> AgentResult:
        proc = self.process
        assert proc is not None
        exit_code = proc.exit_code
        stderr = self._stderr.text()
        failure = self._failure(exit_code, stderr)
        if failure is not None or stderr:  # the config's secrets masked (runtime/scrub.py)
            exc, stderr = scrub_failure(self.config, failure[0] if failure else None, stderr,
                                        self.env or None)  # the agent's environment
            if failure is not None and exc is not None:
                failure = exc, failure[1]
        cancelled = False
        stdout_text = self._stdout_bytes.decode("utf-8", "replace") if self._text_mode else None
        added: list[AgentEvent] = []
        if failure is not None:
            exc, code = failure
            cancelled = code in ("cancelled", "interrupted")
            if code not in ("cancelled", "line_too_long", "result_error"):
                fields: dict[str, Any] = {"code": code, "error_type": type(exc).__name__,
                                          "exit_code": exit_code}
                added.append(error_event(str(exc), **fields))
        t = self._transcript
        if t.result_event is None:
            # every turn's stream has a result event: the agent's, or ours
            added.append(client_result_event(
                failure[0] if failure is not None else None, result=stdout_text,
                session_id=t.session_id, exit_code=exit_code))
        if added:
            self._deliver(added)
        result = t.to_result()
        result.exit_code = exit_code
        result.stderr = stderr
        result.cancelled = cancelled
        if stdout_text is not None:
            result.text = stdout_text
            result.result = stdout_text
        if failure is not None:
            result.success = False
            result.exception = failure[0]
            result.error = str(failure[0])
        else:
            result.success = True
            result.error = None
            result.exception = None
        return result
