"""One agent process in its own process group: spawn, signal the group, stop it, reap it.

What lives here: :class:`AgentProcess` (asyncio subprocess started with
``start_new_session=True``, so the agent's pgid is its pid and its shell
commands and helpers share that group; its stdout on a pipe of its own, read by the loop
straight into the listener), and the net under every agent either transport
starts: one still running when the interpreter exits is stopped then. What does not: when to stop
(:mod:`.stop_policy` decides that, once), reading ``/proc`` and stopping a group
(:mod:`.groups`).

Example:
    >>> normalize_exit_code(-9)
    137
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import errno
import os
import signal as signal_module
import subprocess
import sys
import weakref
from collections.abc import Awaitable, Sequence
from typing import Any, Protocol, cast

from ..errors import AgentNotFoundError, AgentStartError
from .groups import (
    HAVE_PROC,
    group_alive,
    held_by_this_process,
    live_start_time,
    signal_group,
    start_time,
    stop_groups,
)

__all__ = ["OWNER_GUARD", "AgentProcess", "ProcessListener", "RunProcess", "normalize_exit_code"]

_GUARD_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_guard.py")

OWNER_GUARD = sys.platform.startswith("linux") and HAVE_PROC
"""Start each agent through the owner guard (``runtime/_guard.py``; Linux): when the process
that started the agent dies — SIGKILL and SIGTERM included — the agent's process group gets
SIGTERM, then SIGKILL after ``kill_grace``. Set it to ``False`` to start agents directly."""

_OWNER_START: tuple[int, int] | None = None


def _own_start_time() -> int | None:
    """Start time (clock ticks since boot) of this process, cached per pid (forks differ)."""
    global _OWNER_START
    pid = os.getpid()
    if _OWNER_START is None or _OWNER_START[0] != pid:
        start = start_time(pid)
        if start is None:
            return None
        _OWNER_START = (pid, start)
    return _OWNER_START[1]


def _guard_prefix(kill_grace: float, status_fd: int) -> list[str]:
    """The argv that runs the agent under the owner guard; it reports a failed start on
    ``status_fd`` (see ``_guard.py``)."""
    return [sys.executable, "-I", "-S", _GUARD_SCRIPT, "run", str(os.getpid()),
            str(_own_start_time()), f"{kill_grace:g}", str(status_fd), "--"]


def _guard_available() -> bool:
    """True when agents start through the owner guard (:data:`OWNER_GUARD`, and it can run)."""
    return (OWNER_GUARD and bool(sys.executable) and os.path.isfile(_GUARD_SCRIPT)
            and _own_start_time() is not None)


def _start_failure(program: str, exc: OSError, cwd: str | None = None) -> AgentStartError:
    """The error for ``exc``, raised starting ``program`` (in ``cwd``): ``AgentStartError.of``'s,
    except when the kernel's "not found" (``ENOENT``) is about a file that is there: then what
    was not found is the program that runs it — its ``#!`` line's interpreter (or, for a
    binary, its loader) — and the message says so, not that the agent is missing.

    Example:
        >>> import errno, tempfile
        >>> with tempfile.NamedTemporaryFile("w", suffix="-agent") as f:
        ...     _ = f.write("#!/no/such/python -u\\n"); f.flush()
        ...     err = _start_failure(f.name, FileNotFoundError(errno.ENOENT, "No such file"))
        >>> type(err).__name__, "its interpreter '/no/such/python' (its #! line)" in str(err)
        ('AgentNotFoundError', True)
        >>> missing = OSError(errno.ENOENT, "No such file")
        >>> "'/no/agent' was not found (No such file)" in str(_start_failure("/no/agent", missing))
        True
    """
    error = AgentStartError.of(program, exc)
    if exc.errno != errno.ENOENT or os.sep not in program:
        return error  # (a bare name was looked up on PATH, and is not there)
    if cwd and not os.path.isdir(cwd):
        return error  # (the working folder is what is missing: the kernel's word stands)
    path = os.path.join(cwd, program) if cwd else program
    try:
        with open(path, "rb") as f:
            head = f.read(_SHEBANG_BYTES)
    except OSError:  # missing indeed (or unreadable: the kernel's word stands)
        return error
    first = head.split(b"\n", 1)[0]
    words = first[2:].replace(b"\t", b" ").split(b" ")  # (the kernel's separators: a \r is kept)
    name_bytes = next((w for w in words if w), b"")
    if first.startswith(b"#!") and name_bytes.strip():
        name = name_bytes.decode("utf-8", "replace")[:_NAME_CHARS]
        what = f"its interpreter {name!r} (its #! line)"
        remedy = ("convert the file's line endings from Windows' (CRLF) to LF: the kernel "
                  "looks for the interpreter's name with its \\r" if name.endswith("\r")
                  else "install that interpreter, or correct the file's #! line")
    else:
        what = "a program it needs to run (its loader, for a binary built for another system)"
        remedy = "install the agent built for this system"
    return AgentNotFoundError(f"cannot start the agent: {program!r} exists, but {what} was not "
                              "found", errno=exc.errno, remedy=remedy)


_SHEBANG_BYTES = 256
"""How much of an agent file is read for its ``#!`` line (Linux reads at most 256 bytes)."""
_NAME_CHARS = 120
"""The longest interpreter name a message quotes (the rest is cut)."""


def _guard_failure(program: str, report: bytes, cwd: str | None = None) -> AgentStartError:
    """The error for the guard's status report ``STEP ERRNO``: what starting ``program``
    without the guard would raise (``exec``), or why its watcher could not start (``watch``).

    Example:
        >>> import errno
        >>> type(_guard_failure("agent", f"exec {errno.ENOEXEC}".encode())).__name__
        'AgentNotFoundError'
        >>> _guard_failure("agent", f"watch {errno.EAGAIN}".encode()).errno == errno.EAGAIN
        True
    """
    step, _, number = report.decode("ascii", "replace").partition(" ")
    code = int(number) if number.isdigit() else 0
    exc = OSError(code, os.strerror(code))
    if step == "exec":
        return _start_failure(program, exc, cwd)
    error = AgentStartError.of(program, exc)
    if not isinstance(error, AgentNotFoundError):
        return error
    return AgentStartError(f"cannot start the agent: its owner guard could not start its "
                           f"watcher ({exc.strerror})", errno=code)


async def _stop_unwatched(protocol: _Protocol) -> None:
    """Kill and reap the process asyncio started before its child watcher failed: asyncio
    connects its pipes (``connection_made``) a moment later; nobody else will reap it."""
    try:
        transport = await asyncio.wait_for(asyncio.shield(protocol.made), _UNWATCHED_WAIT)
    except asyncio.TimeoutError:  # asyncio could not connect its pipes: the pid is unknown
        return
    assert isinstance(transport, asyncio.SubprocessTransport)
    pid = transport.get_pid()
    with contextlib.suppress(OSError):
        os.killpg(pid, signal_module.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)  # SIGKILLed: at once
    transport.close()


_UNWATCHED_WAIT = 5.0
"""How long :func:`_stop_unwatched` waits for asyncio to hand over a process it started
(one loop iteration, normally): a bound, so a start never hangs on it."""


async def _outlast(awaitable: Awaitable[object]) -> asyncio.CancelledError | None:
    """Wait until ``awaitable`` is done, whatever cancels come meanwhile (for a bounded wait
    that must not be cut short); the first of those cancels, to raise once done, or None.
    Its result or exception stays in it (a future or task: read it there).

    Example:
        >>> async def main():
        ...     inner = asyncio.ensure_future(asyncio.sleep(0.01, "done"))
        ...     outer = asyncio.ensure_future(_outlast(inner))
        ...     await asyncio.sleep(0)
        ...     outer.cancel()
        ...     return type(await outer).__name__, inner.result()
        >>> asyncio.run(main())
        ('CancelledError', 'done')
    """
    future = asyncio.ensure_future(awaitable)
    cancel: asyncio.CancelledError | None = None
    while not future.done():
        try:
            await asyncio.wait((future,))
        except asyncio.CancelledError as exc:
            cancel = cancel or exc
    return cancel


_UNDO_WAIT = 5.0
"""How long :meth:`AgentProcess.undo` waits for a SIGKILLed group to be gone (at once,
normally): a bound, so a cancelled start never hangs."""


class _LibuvOwned:
    """The read end of a pipe handed to uvloop's ``connect_read_pipe``, which gives the number
    to libuv (``uv_pipe_open``): libuv closes it when the transport closes, so this object's
    own ``close()`` closes nothing. A file object (``os.fdopen``) would close the same number
    a second time, later (uvloop 0.23, MagicStack/uvloop#763): whatever another thread had
    opened under that number meanwhile (a database socket, another turn's pipe) was closed
    under it, one such close per agent start in ``serve`` (uvicorn runs on uvloop).

    Example:
        >>> r, w = os.pipe()
        >>> pipe = _LibuvOwned(r)
        >>> pipe.close(); pipe.fileno() == r, os.fstat(r).st_size  # still open: libuv's to close
        (True, 0)
        >>> os.close(r); os.close(w)
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def fileno(self) -> int:
        return self._fd

    def close(self) -> None:
        """Nothing: libuv closes the descriptor."""


def _pipe_for(loop: asyncio.AbstractEventLoop, fd: int) -> Any:
    """What ``loop.connect_read_pipe`` is given for the read end ``fd``: a file object that
    its transport closes (asyncio's loop), or, on uvloop's, an object that closes nothing,
    libuv closing the number itself (:class:`_LibuvOwned`). Either way the number is closed
    once, by the transport (before the transport exists, by the caller: :func:`_close_fds`
    on a :class:`_LibuvOwned`'s number, ``close()`` on a file object)."""
    uvloop = sys.modules.get("uvloop")  # (a loop of uvloop's: its module is imported)
    if uvloop is not None and isinstance(loop, uvloop.Loop):  # an application's subclass too
        return _LibuvOwned(fd)
    return os.fdopen(fd, "rb", buffering=0)


async def _read_to_eof(loop: asyncio.AbstractEventLoop, fd: int) -> bytes:
    """Everything written to the pipe ``fd`` until its last writer closes it (fd is closed)."""
    data = bytearray()
    ended: asyncio.Future[None] = loop.create_future()

    class Reader(asyncio.Protocol):
        def data_received(self, chunk: bytes) -> None:
            data.extend(chunk)

        def connection_lost(self, exc: Exception | None) -> None:
            if not ended.done():
                ended.set_result(None)

    transport, _ = await loop.connect_read_pipe(Reader, _pipe_for(loop, fd))
    try:
        await ended
    finally:
        transport.close()
    return bytes(data)


def normalize_exit_code(returncode: int | None) -> int | None:
    """Exit code as a shell reports it: death by signal N becomes ``128 + N``.

    Example:
        >>> normalize_exit_code(-15), normalize_exit_code(1), normalize_exit_code(None)
        (143, 1, None)
    """
    if returncode is None or returncode >= 0:
        return returncode
    return 128 - returncode


class ProcessListener(Protocol):
    """What :class:`AgentProcess` reports to, on the event loop's thread.

    Example:
        >>> class Printer:
        ...     def stdout_data(self, data): print(data)
        ...     def stdout_eof(self): pass
        ...     def stderr_data(self, data): pass
        ...     def stderr_eof(self): pass
        ...     def exited(self): pass
        >>> listener: ProcessListener = Printer()
    """

    def stdout_data(self, data: bytes) -> None:
        """A chunk of stdout (any size; lines may be split anywhere)."""

    def stdout_eof(self) -> None:
        """stdout was closed by every process that held it."""

    def stderr_data(self, data: bytes) -> None:
        """A chunk of stderr."""

    def stderr_eof(self) -> None:
        """stderr was closed by every process that held it."""

    def exited(self) -> None:
        """The agent itself exited and was reaped (its group may live on)."""


class RunProcess(Protocol):
    """What a turn (:class:`~.run.AgentRun`) drives: :class:`AgentProcess`, or a stand-in
    (the script transport's :class:`~cursor_agent_api.testing.script.ScriptProcess`).
    ``pid`` is ``None`` without a process; :meth:`pause_stdout`/:meth:`resume_stdout` are
    the turn's back-pressure (no more ``stdout_data`` until resumed); :meth:`release` lets
    go at once (the loop shuts down)."""

    @property
    def pid(self) -> int | None: ...
    @property
    def has_exited(self) -> bool: ...
    @property
    def exit_code(self) -> int | None: ...
    def alive(self) -> bool: ...
    def write_stdin(self, data: bytes) -> None: ...
    def pause_stdout(self) -> None: ...
    def resume_stdout(self) -> None: ...
    def abandon_pipes(self) -> None: ...
    def close(self) -> None: ...
    def release(self) -> None: ...
    def signal(self, sig: int) -> bool: ...
    def kill_now(self) -> None: ...
    async def wait_gone(self, timeout: float | None) -> bool: ...


class _Protocol(asyncio.SubprocessProtocol):
    """Forwards the transport's callbacks straight to the listener: no buffering, no task hop.
    ``exited`` is set when the agent exits (it may, before the spawn returns)."""

    def __init__(self, listener: ProcessListener, exited: asyncio.Future[None]) -> None:
        self.listener = listener
        self.exited = exited
        self.made: asyncio.Future[asyncio.BaseTransport] = exited.get_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if not self.made.done():
            self.made.set_result(transport)

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        assert isinstance(data, bytes)
        if fd == 2:
            self.listener.stderr_data(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 2:
            self.listener.stderr_eof()

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)
        self.listener.exited()


class _StdoutProtocol(asyncio.Protocol):
    """The agent's stdout, on a pipe of its own connected straight to the loop: each read goes
    to the listener in the loop's callback, where a subprocess pipe would hand it on through
    ``call_soon``, one loop iteration later per chunk."""

    def __init__(self, listener: ProcessListener) -> None:
        self.listener = listener

    def data_received(self, data: bytes) -> None:
        self.listener.stdout_data(data)

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.listener.stdout_eof()


def _close_fds(*fds: int) -> None:
    for fd in fds:
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)


class _NoListener:
    """Where a failed start's last callbacks go (the caller gets an error, not a process)."""

    def stdout_data(self, data: bytes) -> None: ...
    def stdout_eof(self) -> None: ...
    def stderr_data(self, data: bytes) -> None: ...
    def stderr_eof(self) -> None: ...
    def exited(self) -> None: ...


_NO_LISTENER = _NoListener()


_RUNNING: weakref.WeakSet[AgentProcess] = held_by_this_process(weakref.WeakSet())
"""The agents started and not let go of (:meth:`AgentProcess.close`, :meth:`AgentProcess.release`)
nor seen gone (reaped, their group empty: :meth:`AgentProcess.alive`): the interpreter's exit
stops their groups (a forked child's, none: they are its parent's)."""


def _stop_running_at_exit() -> None:
    """atexit: an agent still running when the interpreter exits (a sync stream left open in a
    script, a daemon loop thread, a client's ``agent acp`` never closed) gets SIGTERM, up to
    1 s, then SIGKILL — never an orphan. One seen gone is not signalled: its group's number
    may belong to someone else by now."""
    pgids = [process.pgid for process in list(_RUNNING) if process.alive()]
    if pgids:
        stop_groups(pgids, grace=1.0)


atexit.register(_stop_running_at_exit)


class AgentProcess:
    """An agent process started in a new session (its own process group).

    ``pid`` is the agent's pid and ``pgid`` its process group (the same number);
    ``popen`` the :class:`subprocess.Popen` behind the asyncio transport (for
    inspection: stop it with :meth:`stop`, not with ``popen.kill()``). Output
    goes to a :class:`ProcessListener` as it arrives; :meth:`pause_stdout` holds stdout back
    until :meth:`resume_stdout`. :meth:`stop` signals the
    whole group, escalates to SIGKILL after ``kill_grace`` and waits until the
    agent is reaped and no live process is left in the group.

    Once the agent is reaped and its group seen empty, the process is *gone* for good (no
    member is left to fork a new one into the group): the group's number is then free for
    the system to give to an unrelated new session, so from then on :meth:`signal`,
    :meth:`kill_now`, :meth:`stop` and the interpreter's exit never signal it, and
    :meth:`alive` is False without looking. The check runs when the agent is reaped and
    whenever the group is looked at; a group whose leader's pid runs as a process started
    at another time than the agent has been reused, and counts as empty.

    Example:
        >>> import asyncio
        >>> class Quiet:
        ...     def stdout_data(self, data): pass
        ...     def stdout_eof(self): pass
        ...     def stderr_data(self, data): pass
        ...     def stderr_eof(self): pass
        ...     def exited(self): pass
        >>> async def main():
        ...     proc = await AgentProcess.spawn(["sh", "-c", "sleep 30 & wait"], Quiet(), env=None)
        ...     await proc.stop(kill_grace=1.0)
        ...     proc.close()
        ...     return proc.exit_code, group_alive(proc.pgid)
        >>> asyncio.run(main())
        (143, False)
    """

    def __init__(self, transport: asyncio.SubprocessTransport, exited: asyncio.Future[None]) -> None:
        self.transport = transport
        self._stdout: asyncio.ReadTransport | None = None  # connected by spawn()
        self.pid: int = transport.get_pid()
        self.pgid: int = self.pid
        # asyncio's transport has the Popen; uvloop's has none (then popen is None)
        self.popen: subprocess.Popen[bytes] | None = transport.get_extra_info("subprocess")
        self._exited = exited
        # the agent's start time, to tell its group from a later one with the same number
        # (None: already reaped, or no /proc)
        self._started = start_time(self.pid)
        self._gone = False
        exited.add_done_callback(lambda _: self._seen_gone())  # the common case: at its exit

    @classmethod
    async def spawn(
        cls,
        argv: Sequence[str],
        listener: ProcessListener,
        *,
        env: dict[str, str] | None,
        cwd: str | None = None,
        kill_grace: float = 2.0,
    ) -> AgentProcess:
        """Start ``argv`` with piped stdio in a new session; output goes to ``listener``.

        stdout is a pipe of its own, connected straight to the loop (``connect_read_pipe``:
        a chunk reaches ``listener.stdout_data`` in the loop's read callback, one loop
        iteration sooner than through asyncio's subprocess pipes). With
        :data:`OWNER_GUARD` (Linux), the agent is started through the owner guard, which
        execs it in place (same pid, group, pipes and exit status) and leaves a watcher
        that stops the group (SIGTERM, SIGKILL after ``kill_grace``) if this process dies.

        Raises :class:`~cursor_agent_api.errors.AgentNotFoundError` when the executable is
        missing or cannot be executed, :class:`~cursor_agent_api.errors.AgentStartError` when
        the system is out of what a new process needs (open files, processes, memory); the
        same with the guard or without it (the guard reports a failed start on a status pipe).
        Cancelled while it starts (or connecting stdout fails), it lets the start complete,
        kills the whole group and sees it gone (:meth:`undo`) before the cancel (or error) goes
        on: the caller never holds a process it did not get.
        """
        if signal_module.getsignal(signal_module.SIGCHLD) is signal_module.SIG_IGN:
            raise AgentStartError(
                "cannot start the agent: this process ignores SIGCHLD (signal.SIG_IGN), so "
                "the kernel reaps the agent before its exit status can be read",
                remedy="restore it before starting the agent: "
                       "signal.signal(signal.SIGCHLD, signal.SIG_DFL)")
        loop = asyncio.get_running_loop()
        exited: asyncio.Future[None] = loop.create_future()
        protocol = _Protocol(listener, exited)
        status_r = status_w = stdout_r = stdout_w = -1
        start: asyncio.Future[tuple[asyncio.SubprocessTransport, _Protocol]] | None = None
        cancel: asyncio.CancelledError | None = None
        try:
            stdout_r, stdout_w = os.pipe()
            if argv and _guard_available():
                status_r, status_w = os.pipe()
            guard = _guard_prefix(kill_grace, status_w) if status_w >= 0 else []
            start = asyncio.ensure_future(loop.subprocess_exec(
                lambda: protocol,
                *guard, *argv,
                stdin=subprocess.PIPE,
                stdout=stdout_w,
                stderr=subprocess.PIPE,
                env=env,
                cwd=cwd,
                start_new_session=True,
                pass_fds=(status_w,) if status_w >= 0 else (),
            ))
            # the child has its copies once the start is over
            start.add_done_callback(lambda _: _close_fds(stdout_w, status_w))
            # a cancel must not land in there, after the fork: asyncio would SIGKILL the
            # agent alone, then wait until every process holding its pipes closes them (a
            # child of the agent: maybe never); uvloop would leave the group running
            cancel = await _outlast(start)
            transport, _ = start.result()
        except OSError as exc:  # out of file descriptors, processes, memory; no executable
            _close_fds(status_r, stdout_r, *((status_w, stdout_w) if start is None else ()))
            raise cancel or _start_failure(argv[0] if argv else "", exc, cwd) from exc
        except RuntimeError as exc:
            _close_fds(status_r, stdout_r)
            if "thread" not in str(exc):
                raise
            # the loop's child watcher (3.11: a thread per child) could not start its thread:
            # the process runs, and nothing would ever reap it
            await _stop_unwatched(protocol)
            raise cancel or AgentStartError.of(argv[0], OSError(errno.EAGAIN, str(exc))) from exc
        except BaseException:
            _close_fds(status_r, stdout_r, *((status_w, stdout_w) if start is None else ()))
            raise
        process = cls(transport, exited)
        _RUNNING.add(process)
        if cancel is not None:  # cancelled while the start completed: stop what it started
            _close_fds(status_r, stdout_r)
            await process.undo()
            raise cancel
        if status_r >= 0:
            try:
                report = await _read_to_eof(loop, status_r)
            except BaseException:  # cancelled while the guard starts: stop what it started
                _close_fds(stdout_r)
                await process.undo()
                raise
            if report:  # the guard could not start the agent, and exits at once
                _close_fds(stdout_r)
                protocol.listener = _NO_LISTENER
                await process.wait()
                process.close()
                raise _guard_failure(argv[0], report, cwd)
        stdout, pipe = _StdoutProtocol(listener), _pipe_for(loop, stdout_r)
        try:
            process._stdout, _ = await loop.connect_read_pipe(lambda: stdout, pipe)
        except BaseException:
            # cancelled (Ctrl-C) or failed here, the caller never learns of its process: undo
            # the start, or nothing would ever stop it (tests/client/test_cancel_races.py)
            stdout.listener = _NO_LISTENER
            pipe.close()  # (closed already by the transport, if there was one)
            await process.undo()
            raise
        return process

    async def undo(self) -> None:
        """Stop the agent of a start cancelled midway (its caller gets no process, and its
        listener no more calls): SIGKILL its group (:meth:`kill_now`), see it gone before
        the cancel goes on (as a turn does; up to :data:`_UNDO_WAIT`, whatever cancels come
        meanwhile), release the transport."""
        protocol = self.transport.get_protocol()
        if isinstance(protocol, _Protocol):
            protocol.listener = _NO_LISTENER
        self.kill_now()
        gone = asyncio.ensure_future(self.wait_gone(_UNDO_WAIT))
        await _outlast(gone)  # the caller raises its own cancel or error
        if not gone.cancelled():
            gone.exception()  # read: it must not go on as "never retrieved"
        with contextlib.suppress(Exception):
            self.release()

    # ---- state -------------------------------------------------------------------------

    @property
    def exit_code(self) -> int | None:
        """The exit code, signals as ``128 + N`` (see :func:`normalize_exit_code`)."""
        return normalize_exit_code(self.transport.get_returncode())

    @property
    def has_exited(self) -> bool:
        """True once the agent itself has exited and been reaped."""
        return self._exited.done()

    def alive(self) -> bool:
        """True while the agent or any live process of its group exists (False for good
        once it is gone: see the class)."""
        return not self._seen_gone()

    def _seen_gone(self) -> bool:
        """True once the agent is reaped and its group was seen empty (latched: the process
        then leaves :data:`_RUNNING`). Until the agent is reaped its pid, the group's number,
        cannot be reused."""
        if not self._gone and self._reaped() and not self._group_left():
            self._gone = True
            _RUNNING.discard(self)
        return self._gone

    def _reaped(self) -> bool:
        """The agent's exit reached the loop, or its pid no longer exists with the agent's
        start time (not even as a zombie): reaped where the loop never heard of it (the
        child watcher's thread, after the loop was closed while the agent ran)."""
        if self._exited.done():
            return True
        return self._started is not None and start_time(self.pid) != self._started

    def _group_left(self) -> bool:
        """Whether the group still has a live process (the agent reaped): not when its
        number is led by a process started at another time than the agent (reused)."""
        if not group_alive(self.pgid):
            return False
        leader = live_start_time(self.pgid)
        return leader is None or self._started is None or leader == self._started

    # ---- stdio ---------------------------------------------------------------------------

    def write_stdin(self, data: bytes, *, close: bool = True) -> None:
        """Queue ``data`` for the agent's stdin (never blocks); then close stdin.

        A broken pipe (the agent exited without reading) is ignored.
        """
        pipe = self.transport.get_pipe_transport(0)
        if pipe is None or pipe.is_closing():
            return
        writer = cast(asyncio.WriteTransport, pipe)  # uvloop's pipes are not subclasses
        with contextlib.suppress(OSError, RuntimeError):
            if data:
                writer.write(data)
            if close:
                writer.write_eof()

    def pause_stdout(self) -> None:
        """Back-pressure: read no more of stdout until :meth:`resume_stdout`."""
        if self._stdout is not None and not self._stdout.is_closing():
            self._stdout.pause_reading()

    def resume_stdout(self) -> None:
        """Read stdout again."""
        if self._stdout is not None and not self._stdout.is_closing():
            self._stdout.resume_reading()

    def abandon_pipes(self) -> None:
        """Close our ends of stdout/stderr (a process outside the group still holds them)."""
        if self._stdout is not None:
            self._stdout.close()
        pipe = self.transport.get_pipe_transport(2)
        if pipe is not None and not pipe.is_closing():
            pipe.close()

    def close(self) -> None:
        """Release the transport (call once the agent has exited)."""
        if self._exited.done():
            self.release()

    def release(self) -> None:
        """Release the transport and stdout now (the loop is shutting down); the exit no
        longer stops it."""
        _RUNNING.discard(self)
        self.transport.close()
        if self._stdout is not None:
            self._stdout.close()

    # ---- signals -----------------------------------------------------------------------

    def signal(self, sig: int) -> bool:
        """Send ``sig`` to the whole group; False when nothing was left to signal (nothing
        is sent once it is gone)."""
        return not self._seen_gone() and signal_group(self.pgid, sig)

    async def wait(self) -> int | None:
        """Wait for the agent itself (not its group) to exit; its normalized exit code."""
        await asyncio.shield(self._exited)
        return self.exit_code

    async def stop(self, sig: int = signal_module.SIGTERM, *, kill_grace: float = 2.0) -> None:
        """Signal the group with ``sig``; SIGKILL after ``kill_grace``; wait until all are gone
        (:func:`~.groups.stop_groups`, in a thread) and the agent is reaped.

        Safe to call more than once and when the agent has already exited.
        """
        if self.alive():
            await asyncio.to_thread(stop_groups, [self.pgid], sig=sig, grace=kill_grace)
        await self.wait_gone(None)

    async def wait_gone(self, timeout: float | None) -> bool:
        """Wait until the agent is reaped and its group empty; False if ``timeout`` passed."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        if not self._exited.done():
            try:
                await asyncio.wait_for(asyncio.shield(self._exited), timeout)
            except asyncio.TimeoutError:
                return False
        delay = 0.005
        while not self._seen_gone():
            now = loop.time()
            if deadline is not None and now >= deadline:
                return False
            await asyncio.sleep(delay if deadline is None else min(delay, deadline - now))
            delay = min(delay * 2, 0.1)
        return True

    def kill_now(self) -> None:
        """Last resort without a loop (interpreter or loop shutting down): SIGKILL the group
        (nothing once it is gone)."""
        if self._seen_gone():
            return
        with contextlib.suppress(OSError):
            os.killpg(self.pgid, signal_module.SIGKILL)
        if not self._exited.done():
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal_module.SIGKILL)
