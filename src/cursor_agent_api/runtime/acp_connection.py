"""One ``agent acp`` process and its JSON-RPC connection.

:class:`AcpConnection` spawns the agent in its own process group (:class:`~.process.AgentProcess`,
under the owner guard on Linux), writes the client's frames on its stdin, reads its stdout
through the sans-I/O :class:`~cursor_agent_api.protocol.acp_codec.AcpDecoder`, routes each
response to the future of its request and each agent request to ``on_request`` (its answer,
or :class:`RpcFailure`, is written back; an exception in the handler answers ``-32603``), and
keeps a bounded stderr tail. Every agent request gets an answer: the connection never stalls
the agent. When the process dies, every pending request fails with
:class:`~cursor_agent_api.errors.AgentProcessError` (exit code and stderr tail) and
``on_dead`` is called. :meth:`AcpConnection.close` stops the whole group (``stop_groups``).

What does not live here: sessions, turns, what messages mean (:mod:`.acp_transport`).

Example:
    >>> import asyncio, sys
    >>> peer = ('import sys, json\\n'
    ...         'for line in sys.stdin:\\n'
    ...         '    m = json.loads(line)\\n'
    ...         '    r = {"jsonrpc": "2.0", "id": m["id"], "result": {"echo": m["method"]}}\\n'
    ...         '    print(json.dumps(r), flush=True)\\n')
    >>> async def main():
    ...     conn = AcpConnection([sys.executable, "-c", peer], env=None)
    ...     await conn.start()
    ...     try:
    ...         return await conn.request("initialize", {}, timeout=30)
    ...     finally:
    ...         await conn.close()
    >>> asyncio.run(main())
    {'echo': 'initialize'}
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import signal as signal_module
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio

from ..errors import AcpRequestError, AgentProcessError, AgentTimeoutError
from ..protocol.acp_codec import (
    INTERNAL_ERROR,
    AcpDecoder,
    AcpEncoder,
    RpcError,
    RpcMessage,
    RpcNoise,
    RpcNotification,
    RpcRequest,
    RpcResponse,
)
from ..protocol.framing import DEFAULT_MAX_LINE_BYTES
from .process import AgentProcess
from .stderr import StderrTail, ended_how, silent_remedy, stderr_summary

__all__ = ["MAX_PENDING_AGENT_REQUESTS", "AcpConnection", "RpcFailure"]

MAX_PENDING_AGENT_REQUESTS = 256
"""Agent requests a connection lets wait for their answer at once (each holds a task, and a
thread for a sync callback). Beyond it a request is answered at once by ``on_overflow``
(``-32603 too many pending requests`` by default): a flood cannot grow the client."""

_log = logging.getLogger(__name__)

_EXIT_FLUSH = 0.5
"""Seconds after the agent exited to wait for its stdout's end (a child may hold the pipe)."""


class RpcFailure(Exception):
    """Raised by a request handler: the agent's request is answered with this error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


RequestHandler = Callable[[RpcRequest], Awaitable[Any]]


class AcpConnection:
    """One ``agent acp`` process: requests out, responses in, the agent's requests answered.

    Loop-bound: create, start and use it on one event loop.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: dict[str, str] | None,
        cwd: str | None = None,
        on_request: RequestHandler | None = None,
        on_notification: Callable[[RpcNotification], None] | None = None,
        on_noise: Callable[[RpcNoise], None] | None = None,
        on_dead: Callable[[AcpConnection], None] | None = None,
        on_stray_error: Callable[[RpcError], None] | None = None,
        on_overflow: Callable[[RpcRequest], Any] | None = None,
        max_pending: int = MAX_PENDING_AGENT_REQUESTS,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        stderr_tail_bytes: int = 64 * 1024,
        kill_grace: float = 2.0,
    ) -> None:
        self.argv = list(argv)
        self.env = env
        self.cwd = cwd
        self.on_request = on_request
        self.on_notification = on_notification
        self.on_noise = on_noise
        self.on_dead = on_dead
        self.on_stray_error = on_stray_error
        self.on_overflow = on_overflow
        """The answer to a request over ``max_pending`` (raise :class:`RpcFailure` for an
        error answer); ``None``: ``-32603 too many pending requests``."""
        self.max_pending = max_pending
        self.refused = 0
        """Agent requests answered at once because ``max_pending`` were waiting."""
        self._flooded = False  # warned about the current flood (reset once under the cap)
        self.kill_grace = kill_grace
        self.process: AgentProcess | None = None
        self._decoder = AcpDecoder(max_line_bytes)
        self._encoder = AcpEncoder()
        self._stderr = StderrTail(stderr_tail_bytes)
        self._pending: dict[int | str, tuple[str, asyncio.Future[Any]]] = {}
        self._handlers: set[asyncio.Task[None]] = set()
        self._handlers_keep: set[asyncio.Task[None]] = set()
        self._dead = False
        self._stdout_done = False
        self.stopped = False
        """Set by :meth:`close` and :meth:`kill_now`: the client stopped the process (not a
        broken binary: its pending requests fail saying so, with no remedy about the binary)."""
        self._loop: asyncio.AbstractEventLoop | None = None

    # ---- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Spawn the agent (``AgentNotFoundError`` when it cannot start)."""
        self._loop = asyncio.get_running_loop()
        self.process = await AgentProcess.spawn(self.argv, self, env=self.env, cwd=self.cwd,
                                                kill_grace=self.kill_grace)

    @property
    def alive(self) -> bool:
        """True while the process runs and its stdout is open."""
        return self.process is not None and not self._dead and not self._stdout_done

    @property
    def pid(self) -> int | None:
        """The agent's pid (and process group id)."""
        return self.process.pid if self.process is not None else None

    @property
    def stderr(self) -> str:
        """The stderr tail, ANSI stripped."""
        return self._stderr.text()

    async def close(self) -> None:
        """Stop the whole process group (signal, ``kill_grace``, SIGKILL) and reap it."""
        proc = self.process
        if proc is None:
            return
        self.stopped = True
        proc.write_stdin(b"", close=True)
        await proc.stop(signal_module.SIGTERM, kill_grace=self.kill_grace)
        self._die()
        proc.close()
        for task in list(self._handlers):
            task.cancel()

    def kill_now(self) -> None:
        """SIGKILL the group at once (no waiting; the loop reaps it)."""
        if self.process is not None:
            self.stopped = True
            self.process.kill_now()

    # ---- out ---------------------------------------------------------------------------

    def _write(self, frame: bytes) -> None:
        if self.process is None or self._dead:
            return
        self.process.write_stdin(frame, close=False)

    def notify(self, method: str, params: dict[str, Any]) -> None:
        """Send a notification (no answer)."""
        self._write(self._encoder.notification(method, params))

    async def request(self, method: str, params: dict[str, Any], *,
                      timeout: float | None = None) -> Any:
        """Send a request; its result. Raises :class:`~cursor_agent_api.errors.AcpRequestError`
        (an error answer), :class:`~cursor_agent_api.errors.AgentProcessError` (the process
        died) or :class:`~cursor_agent_api.errors.AgentTimeoutError` (no answer in ``timeout``
        seconds: ACP has no other way to notice a lost message)."""
        if self._loop is None or self.process is None:
            raise RuntimeError("AcpConnection.request() before start()")
        if self._dead:
            raise self._death_error(method)
        rid, frame = self._encoder.request(method, params)
        future: asyncio.Future[Any] = self._loop.create_future()
        self._pending[rid] = (method, future)
        self._write(frame)
        try:
            if timeout is None:
                return await asyncio.shield(future)
            try:
                # anyio's scope, not asyncio.wait_for: before Python 3.12 wait_for loses a
                # cancel that lands as the answer comes (tests/client/test_cancel_races.py)
                with anyio.fail_after(timeout):
                    return await asyncio.shield(future)
            except TimeoutError:
                raise AgentTimeoutError(
                    f"the agent did not answer {method} within {timeout:g} s") from None
        finally:
            self._pending.pop(rid, None)

    # ---- in: ProcessListener -----------------------------------------------------------

    def stdout_data(self, data: bytes) -> None:
        """Decode and route what the agent wrote."""
        for message in self._decoder.feed(data):
            self._route(message)

    def stdout_eof(self) -> None:
        """stdout closed: the connection is over (an agent still running ``_EXIT_FLUSH`` s
        later has its group stopped: nothing it does can reach us any more)."""
        if self._stdout_done:
            return
        self._stdout_done = True
        for message in self._decoder.close():
            self._route(message)
        proc = self.process
        if proc is None or proc.has_exited or self._loop is None:
            self._die()
        else:  # the exit code comes a moment later: wait for it (briefly) to report it
            task = self._loop.create_task(self._die_after_exit(proc))
            self._handlers_keep.add(task)
            task.add_done_callback(self._handlers_keep.discard)

    async def _die_after_exit(self, proc: AgentProcess) -> None:
        with anyio.move_on_after(_EXIT_FLUSH):
            await proc.wait()
        self._die()
        if not proc.has_exited:  # its output closed, it lives on: useless, stop its group now
            await proc.stop(signal_module.SIGTERM, kill_grace=self.kill_grace)

    def stderr_data(self, data: bytes) -> None:
        """Keep the stderr tail."""
        self._stderr.feed(data)

    def stderr_eof(self) -> None:
        """stderr closed."""

    def exited(self) -> None:
        """The agent exited: the connection dies once stdout ends (or shortly after)."""
        if self._stdout_done:
            self._die()
        elif self._loop is not None:
            self._loop.call_later(_EXIT_FLUSH, self._die)

    # ---- internals ---------------------------------------------------------------------

    def _death_error(self, method: str) -> AgentProcessError:
        proc = self.process
        code = proc.exit_code if proc is not None else None
        stderr = self.stderr
        if self.stopped:  # the client's own doing (a cancel's fallback, its close)
            return AgentProcessError(f"the ACP agent process was stopped by the client (a "
                                     f"cancelled turn's fallback, or its close) before answering "
                                     f"{method}", exit_code=code, stderr=stderr,
                                     remedy="send the prompt again")
        reason = stderr_summary(stderr)
        detail = f": {reason}" if reason else ""
        how = ended_how(code) if code is not None else "closed its output"
        # nothing on stderr: no tail to point at (review 47), what to check instead
        remedy = None if reason else silent_remedy(self.argv[0] if self.argv else None)
        return AgentProcessError(f"the ACP agent process {how} before answering {method}{detail}",
                                 exit_code=code, stderr=stderr, remedy=remedy)

    def _die(self) -> None:
        if self._dead:
            return
        self._dead = True
        for method, future in list(self._pending.values()):
            if not future.done():
                future.set_exception(self._death_error(method))
        self._pending.clear()
        if self.on_dead is not None:
            self.on_dead(self)

    def _route(self, message: RpcMessage) -> None:
        if isinstance(message, RpcResponse):
            entry = self._pending.get(message.id) if message.id is not None else None
            if entry is None:
                # an answer to nothing we wait for (a late one after a timeout), or an error
                # about a notification (a build refusing session/cancel with -32601)
                if message.error is not None and self.on_stray_error is not None:
                    self.on_stray_error(message.error)
                return
            method, future = entry
            if future.done():
                return
            if message.error is not None:
                err = message.error
                future.set_exception(AcpRequestError.of(method, err.code, err.detail, err.data))
            else:
                future.set_result(message.result)
        elif isinstance(message, RpcRequest):
            assert self._loop is not None
            if len(self._handlers) >= self.max_pending:
                self._refuse(message)
                return
            if len(self._handlers) < self.max_pending // 2:
                self._flooded = False  # the flood has drained: warn about the next one
            task = self._loop.create_task(self._answer(message))
            self._handlers.add(task)
            task.add_done_callback(self._handlers.discard)
        elif isinstance(message, RpcNotification):
            if self.on_notification is not None:
                self.on_notification(message)
        else:
            if message.request_id is not None:  # a request it cannot read: the agent waits on it
                message = self._refuse_unreadable(message)
            if self.on_noise is not None:  # handed on (a RAW event of the turn), never kept here
                self.on_noise(message)

    def _refuse_unreadable(self, noise: RpcNoise) -> RpcNoise:
        """Answer a request the codec could not decode (too deep, too long) with an error at
        once, so the agent moves on; the noise, its reason saying so."""
        assert noise.request_id is not None
        self._write(self._encoder.error(noise.request_id, noise.code,
                                        f"the client could not read this request: {noise.reason}"))
        return dataclasses.replace(noise, reason=f"{noise.reason}: a {noise.method} request, "
                                                 f"answered with error {noise.code}")

    def _refuse(self, request: RpcRequest) -> None:
        """Answer a request over the cap at once; a warning once per flood."""
        self.refused += 1
        if not self._flooded:
            self._flooded = True
            _log.warning("the ACP agent sent more than %d requests awaiting an answer at once; "
                         "the excess is answered at once (cancelled or refused)", self.max_pending)
        try:
            if self.on_overflow is None:
                raise RpcFailure(INTERNAL_ERROR, "too many pending requests")
            result = self.on_overflow(request)
        except RpcFailure as exc:
            self._write(self._encoder.error(request.id, exc.code, exc.message))
        else:
            self._write(self._encoder.result(request.id, result))

    async def _answer(self, request: RpcRequest) -> None:
        handler = self.on_request
        try:
            if handler is None:
                raise RpcFailure(-32601, f"Method not found: {request.method}")
            result = await handler(request)
        except RpcFailure as exc:
            self._write(self._encoder.error(request.id, exc.code, exc.message))
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                self._write(self._encoder.error(request.id, INTERNAL_ERROR, "client shutting down"))
            raise
        except Exception as exc:  # a bug in a handler must not stall the agent
            self._write(self._encoder.error(request.id, INTERNAL_ERROR,
                                            f"client error: {type(exc).__name__}"))
        else:
            self._write(self._encoder.result(request.id, result))
