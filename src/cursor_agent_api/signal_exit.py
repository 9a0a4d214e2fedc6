"""A command that a signal it received stopped ends as that signal would end it: it dies
from it, once its cleanup is done.

bash waits for its foreground command, then looks at how it ended ("wait and cooperative
exit"): a command that *died* from Ctrl-C (SIGINT) stops the loop or script that ran it; one
that *exited*, even with status 130, is taken to have handled the Ctrl-C itself, and ``for f
in a b c; do cursor-agent-api run …; done`` went on to the next iteration: one Ctrl-C per
iteration (dash stops the loop itself, whatever the command does). So the commands stopped by
Ctrl-C, SIGTERM or SIGHUP — once the turn is stopped, the chat saved and its id said, the
output flushed — give the signal its default action back and send it to themselves, as
CPython does for an uncaught ``KeyboardInterrupt``. A shell's ``$?`` is 130, 143 or 129 as
before; Python's ``subprocess`` sees ``-2``, ``-15`` or ``-1``.

Deep in a command, :class:`SignalExit` (a ``SystemExit`` with status 128 + N) unwinds it,
every ``finally`` and ``with`` run, and the group's ``main()`` ends with it: a function call,
whoever makes it (a program that sets ``sys.argv`` and calls it in a ``try``, click's
``CliRunner``), its caller's process not killed. The program's entry points — the console
script (:mod:`cursor_agent_api.console_script`) and ``python -m cursor_agent_api.cli`` — catch
it and die from the signal (:func:`exit_by_signal`).

Example:
    >>> import signal
    >>> ended = SignalExit(signal.SIGTERM)
    >>> ended.code, ended.signum.name  # the status a shell shows for it
    (143, 'SIGTERM')
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without loading typing: see console_script)

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable, Iterator
    from typing import Any, NoReturn

__all__ = ["ENDING", "SignalExit", "SignalWake", "StartSignals", "cancelled_by_signals", "die_now",
           "exit_by_signal", "held_signals", "run_as_program", "running_as_program", "say_at_once",
           "say_error", "stopping", "without_ending_signals"]

ENDING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""The signals that end a command (Ctrl-C, ``kill``, its terminal closed)."""

_program = False  # inside run_as_program(): the process is the command's program
_stopping: int | None = None  # the signal it stops for, once a SignalExit is made


@contextlib.contextmanager
def run_as_program() -> Iterator[None]:
    """While inside, the process is the ``cursor-agent-api`` program (its entry points run
    the command in it): a command stopping because of a signal may end the process at once
    on the next one (:func:`stopping`). Outside, ``main()`` stays a function call whose
    caller is never killed (a program that calls it, click's ``CliRunner``).

    Example:
        >>> with run_as_program():
        ...     running_as_program()
        True
        >>> running_as_program()
        False
    """
    global _program, _stopping
    _program = True
    try:
        yield
    finally:
        _program, _stopping = False, None


def running_as_program() -> bool:
    """Whether :func:`run_as_program` was called: only then may a command end the process.

    Example:
        >>> running_as_program()  # a doctest's process: main() would be a function call
        False
    """
    return _program


def _end_at_once(signum: int, *, even_ignored: bool = False) -> None:
    """From now on (main thread only), the ending signals have their default action: one
    ends the process at once, from that signal, without Python's traceback; one ignored
    since the start (``nohup``'s SIGHUP, a background job's SIGINT) stays so, unless
    ``even_ignored`` (then ``signum``, the one being acted on, ends it all the same)."""
    if threading.current_thread() is not threading.main_thread():
        return  # (only the main thread may set a handler)
    for sig in ENDING:
        if (sig == signum and even_ignored) or signal.getsignal(sig) != signal.SIG_IGN:
            signal.signal(sig, signal.SIG_DFL)


def stopping() -> bool:
    """Whether the program is stopping because of a signal (a :class:`SignalExit` was
    made in it); if so, the ending signals are set to end it at once again: what gives
    handlers back as a block ends (:func:`~cursor_agent_api.cli.turn_signals.ending_signals`)
    calls it after.

    Example:
        >>> stopping()  # (not the program here: a doctest)
        False
    """
    if _stopping is not None:
        _end_at_once(_stopping)
    return _stopping is not None


class SignalExit(SystemExit):
    """The command stops because it received signal ``signum`` (what is left of its cleanup
    runs as the exception unwinds); a ``SystemExit`` with the shell's status for it, 128 + N.
    In the program (:func:`run_as_program`), the first one made says the command is
    :func:`stopping`: from then, a second Ctrl-C, SIGTERM or SIGHUP ends the process at
    once, from that signal, quietly (its agents' groups are stopped by their owner guard).

    Example:
        >>> import signal
        >>> isinstance(SignalExit(signal.SIGINT), SystemExit), SignalExit(signal.SIGINT).code
        (True, 130)
    """

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.signum = signal.Signals(signum)
        global _stopping
        if _program:  # from now, a second ending signal ends it at once
            _stopping = self.signum if _stopping is None else _stopping
            _end_at_once(self.signum)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # closed (None), a pipe nobody reads: nothing to do
            if stream is not None:
                stream.flush()


def exit_by_signal(signum: int) -> NoReturn:
    """End the process as signal ``signum`` does by default, after what a normal exit does
    first: stdout and stderr flushed, the exit handlers run (the agents' process groups
    stopped, chat's history saved). The signal's default action is set back first, so a
    signal ignored since the start (``nohup``, a background job's SIGINT) ends it all the
    same; and a second Ctrl-C, SIGTERM or SIGHUP (any of them: a Ctrl-C after a SIGTERM
    too) while the exit handlers run ends it at once, from that signal, as one more Ctrl-C
    during a turn's save does, without Python's traceback from inside a handler (a second
    signal ignored since the start stays so).
    The process exits with ``128 + signum``, the status a shell would have shown, when
    the signal cannot end it: blocked (a parent's signal mask), or called outside the main
    thread while a Python handler takes it or it is ignored (SIGINT's ``KeyboardInterrupt``,
    SIGHUP under ``nohup``: only the main thread may set a handler; a signal with its default
    action, SIGTERM by default, is still sent). Never ends only the thread it is called in.

    Example (in a process of its own: it ends the process)::

        >>> import subprocess, sys
        >>> code = ("import signal; from cursor_agent_api.signal_exit import exit_by_signal;"
        ...         "print('said first', end=''); exit_by_signal(signal.SIGTERM)")
        >>> done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        >>> done.returncode, done.stdout
        (-15, 'said first')
    """
    _end_at_once(signum, even_ignored=True)  # one more Ctrl-C, SIGTERM or SIGHUP ends it at once
    _flush()
    atexit._run_exitfuncs()  # what the interpreter's exit runs; run once (then cleared)
    _flush()
    if signal.getsignal(signum) == signal.SIG_DFL:
        signal.pthread_kill(threading.get_ident(), signum)  # to this thread: it dies here
    os._exit(128 + signum)  # blocked, or a handler another thread cannot take away


def die_now(signum: int) -> NoReturn:
    """End the process at once from signal ``signum``: no cleanup, no exit handlers, nothing
    more flushed (a second signal while the command stops: its user wants it gone). What the
    agents' process groups still hold is stopped by their owner guard
    (:mod:`cursor_agent_api.runtime._guard`) as the process dies; a database is left as a
    kill leaves it (SQLite's WAL, PostgreSQL: what was committed is kept). Exits with
    ``128 + signum`` when the signal cannot end it (blocked; outside the main thread, see
    :func:`exit_by_signal`).

    Example (in a process of its own: it ends the process)::

        >>> import subprocess, sys
        >>> code = ("import atexit, signal; from cursor_agent_api.signal_exit import die_now;"
        ...         "atexit.register(print, 'not run'); die_now(signal.SIGINT)")
        >>> done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        >>> done.returncode, done.stdout, done.stderr
        (-2, '', '')
    """
    _end_at_once(signum, even_ignored=True)
    if signal.getsignal(signum) == signal.SIG_DFL:
        signal.pthread_kill(threading.get_ident(), signum)
    os._exit(128 + signum)


def say_at_once(line: str) -> bool:
    """Write ``line`` to stderr (file descriptor 2) only if that cannot block: in a signal
    handler, a blocking write to stderr a full pipe nobody reads would hang the process for
    ever (the next signal too: its handler waits behind it). Python's ``sys.stderr`` is
    bypassed (its lock may be held by the thread stuck writing); the line, shorter than
    ``PIPE_BUF``, is written in one ``write``: when a pipe has room (``POLLOUT``) it cannot
    block. Else it is skipped. ``O_NONBLOCK`` is not set on fd 2: its file description is
    shared with other processes (the shell, the terminal's other commands). Whether it was
    written.

    Example (stderr a pipe):
        >>> import subprocess, sys
        >>> code = "from cursor_agent_api.signal_exit import say_at_once; print(say_at_once('said\\\\n'))"
        >>> done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        >>> done.stdout, done.stderr
        ('True\\n', 'said\\n')
    """
    import select

    data = line.encode(errors="replace")[:select.PIPE_BUF]
    try:
        poller = select.poll()
        poller.register(2, select.POLLOUT)
        if not any(events & select.POLLOUT for _, events in poller.poll(0)):
            return False
        return os.write(2, data) == len(data)
    except (OSError, ValueError):  # closed, not pollable: nothing to say it on
        return False


@contextlib.contextmanager
def held_signals() -> Iterator[None]:
    """While the block runs (the last lines of a command that is ending: its teardown),
    a Ctrl-C, SIGTERM or SIGHUP is held: the block finishes, then :class:`SignalExit`
    ends the command from it. One more while one is held ends the program at once
    (:func:`die_now`; called as a function, not the program: ``SignalExit`` at once). A
    signal ignored since the start stays ignored; outside the main thread, nothing is held.
    The block raising while a signal is held (the command stopping with an error) does not
    lose it: the error is said as the command says it (click's ``Error: …`` line), then the
    signal ends the command.

    Example:
        >>> import os
        >>> try:
        ...     with held_signals():
        ...         os.kill(os.getpid(), signal.SIGTERM)  # held: the block goes on
        ...         print("last line")
        ... except SignalExit as ended:
        ...     print("then", ended.signum.name)
        last line
        then SIGTERM
        >>> import click
        >>> try:
        ...     with held_signals():
        ...         os.kill(os.getpid(), signal.SIGINT)
        ...         raise click.ClickException("it failed")
        ... except SignalExit as ended:
        ...     print("then", ended.signum.name)
        then SIGINT
    """
    # (the program already stopping for a signal: the next one is a second, at once)
    held: list[int] = [] if _stopping is None else [_stopping]

    def hold(signum: int, frame: object) -> None:
        if not held:
            held.append(signum)
        else:
            _again(signum)

    given: list[tuple[int, Any]] = []
    if threading.current_thread() is threading.main_thread():
        for sig in ENDING:
            if signal.getsignal(sig) != signal.SIG_IGN:
                given.append((sig, signal.signal(sig, hold)))
    failed: Exception | None = None
    try:
        yield
    except Exception as error:
        if not held:
            raise
        failed = error  # said below, then the signal held ends the command all the same
    finally:
        for taken, previous in given:
            signal.signal(taken, previous)
        stopping()  # (the program already stopping: the next signal still ends it at once)
    if held:
        _ended_by(held[0], failed)


def _again(signum: int, line: str | None = None) -> NoReturn:
    """A second ending signal while one is kept (:func:`held_signals`,
    :func:`cancelled_by_signals`): the program dies from it at once (``line`` said first);
    called as a function, not the program: :class:`SignalExit` where the code is."""
    if _program:
        if line is not None:
            say_at_once(line)
        die_now(signum)
    raise SignalExit(signum)


def _ended_by(signum: int, failed: Exception | None) -> NoReturn:
    """A block that kept a signal is left: ``failed`` (what it raised meanwhile) said as
    the command says it, then :class:`SignalExit` ends the command from that signal."""
    if failed is not None:
        say_error(failed)
    raise SignalExit(signum) from None


def say_error(error: Exception) -> None:
    """Say ``error`` on stderr, on a command's way to its death by a signal (the error
    would otherwise be lost with the status), as the command would have said it: a
    ``click.ClickException``'s own line (its ``show()``: ``Error: …``), nothing for a closed
    pipe (click ends it quietly), else Python's traceback (a bug: shown, as it is without a
    signal). Never raises (stderr closed or full: nothing said)."""
    show = getattr(error, "show", None)  # (click's exceptions; click not imported here)
    with contextlib.suppress(Exception):  # (stderr closed: nothing to say it on)
        if callable(show):
            show()
        elif not isinstance(error, BrokenPipeError):
            import traceback

            traceback.print_exception(error)


# ---- The main thread takes the signals, whichever thread the kernel gives them to -------
#
# The kernel gives a process's signal (``kill PID``, Ctrl-C, a supervisor's SIGTERM) to any
# of its threads that does not block it: the main thread when it can take it, another one
# when the main thread still has a signal pending (a second signal right after the first:
# the worker's documented "die at once"). Python's C handler then runs in that thread, but
# the Python handler runs in the main thread only, once it runs Python code again: a main
# thread asleep in its event loop's wait, or in a join, slept on. At the worker's end it
# waits so for the loop's executor's threads (asyncio's teardown): a signal given to one of
# them, stuck in a read, was held, or ended the worker, only once that thread ended.
#
# The threads of the worker (and of ``serve``), all started by its main thread (a thread is
# born with its creator's signal mask): its log lines' writer (``cli/log_output.py``);
# asyncio's default executor (``to_thread``, the name lookups of asyncpg's and psycopg's
# connects); asyncio's child watcher (Python 3.11 and older: one thread per agent, in
# ``waitpid``); the thread asyncio's teardown joins the executor in. Procrastinate, psycopg
# and asyncpg start none. So, while the main thread waits in its loop, any thread's signal wakes it
# (:class:`SignalWake`); the log lines' writer, joined after the loop, is born with the
# ending signals blocked (:func:`without_ending_signals`). The executor's threads keep them:
# their calls start processes (``git`` and its hooks), which would inherit them blocked.


@contextlib.contextmanager
def without_ending_signals() -> Iterator[None]:
    """Inside, this thread blocks Ctrl-C, SIGTERM and SIGHUP: a thread started inside is
    born so, and the kernel gives those signals to a thread that takes them (the main
    thread). One that comes meanwhile waits, and is taken as the block ends.

    Example:
        >>> masks = []
        >>> with without_ending_signals():
        ...     thread = threading.Thread(
        ...         target=lambda: masks.append(signal.pthread_sigmask(signal.SIG_BLOCK, [])))
        ...     thread.start()
        >>> thread.join()
        >>> signal.SIGTERM in masks[0], signal.SIGTERM in signal.pthread_sigmask(signal.SIG_BLOCK, [])
        (True, False)
    """
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, ENDING)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


class StartSignals:
    """What :func:`cancelled_by_signals` gives its block: the first signal taken (``first``),
    and :meth:`settle`, from which a signal no longer cancels the block."""

    def __init__(self, who: str, doing: str) -> None:
        self.who = who
        self.doing = doing
        self.first: signal.Signals | None = None
        """The first Ctrl-C, SIGTERM or SIGHUP taken (the command ends from it)."""
        self.cancels = True
        self.queued: asyncio.Handle | None = None  # the first signal's cancel, handed to the loop
        self.stop: Callable[[], None] | None = None  # (hand_over's)

    def settle(self, doing: str) -> None:
        """From now, the block is ``doing`` what ends it (closing what the start opened): a
        first signal no longer cancels it (a cancel queued and not run yet is dropped), it
        ends the command once the block is left; a second one still ends it at once."""
        self.cancels, self.doing, self.stop = False, doing, None
        if self.queued is not None:
            self.queued.cancel()

    def hand_over(self, stop: Callable[[], None]) -> None:
        """From now, the block hands over to what takes the signals next (uvicorn's
        ``serve()``, which installs its handlers as it begins): a first signal, taken already
        (its cancel queued, not run yet) or until those handlers are in place, no longer
        cancels the block (the cancel would land inside uvicorn's own start-up, a traceback),
        it calls ``stop`` (uvicorn's graceful stop: ``should_exit``), and still ends the
        command once the block is left."""
        self.settle(self.doing)
        self.stop = stop
        if self.first is not None:
            stop()

    def second_line(self, signum: int) -> str:
        """The line a second signal says as it ends the command at once."""
        return f"{self.who}: {signal.Signals(signum).name} again: stopped at once, {self.doing} cut short\n"


def _takes(sig: int, handler: Any, task: asyncio.Task[Any]) -> bool:
    """Whether :func:`cancelled_by_signals` takes ``sig`` from ``handler``: its default
    (``SIG_DFL``, Python's ``KeyboardInterrupt``) or ``asyncio.run``'s for ``task`` (its
    Ctrl-C); never one ignored (``nohup``'s SIGHUP) or a caller's own."""
    import functools

    if handler in (signal.SIG_DFL, signal.default_int_handler):
        return True
    return (sig == signal.SIGINT and isinstance(handler, functools.partial)
            and handler.keywords.get("main_task") is task)


@contextlib.contextmanager
def cancelled_by_signals(who: str, doing: str = "its start") -> Iterator[StartSignals]:
    """While the block runs (a command's start, up to what takes the signals over: uvicorn's
    handlers, the worker's), Ctrl-C, SIGTERM and SIGHUP cancel it; once it is left (what it
    opened closed as the cancel unwinds it), :class:`SignalExit` ends the command from the
    first: it dies from that signal, its log lines written. Use it inside the coroutine
    ``asyncio.run`` runs.

    * The cancel is done by the loop between two callbacks (``call_soon_threadsafe``), not
      inside the one the signal interrupts: ``asyncio.run``'s own Ctrl-C cancelled from
      there, and a connection completing then raised ``InvalidStateError``, with a traceback.
    * A second signal ends the program at once, from it, with one line (``who``: "SIGINT
      again: stopped at once, its start cut short"; :func:`die_now`); called as a function,
      not the program: :class:`SignalExit` at once, where the code is.
    * A signal the block does not take stays as it was: one ignored (``nohup``'s SIGHUP), a
      caller's own handler; outside the main thread nothing is taken. A handler installed
      over one of these meanwhile (uvicorn's while it serves) takes its signals; as it
      gives them back, a signal it re-sends is the first taken here.
    * On leaving, each signal's handler is the one it had, unless another took it since.

    Example:
        >>> import asyncio
        >>> said = []
        >>> async def interrupted_in_a_callback() -> str:
        ...     loop = asyncio.get_running_loop()
        ...     fut = loop.create_future()
        ...     def completes() -> None:
        ...         if not fut.done():
        ...             os.kill(os.getpid(), signal.SIGTERM)  # (its handler runs here)
        ...             fut.set_result("connected")  # not cancelled yet: no InvalidStateError
        ...             said.append("connected")
        ...     with cancelled_by_signals("demo"):
        ...         loop.call_soon(completes)
        ...         await fut
        ...         await asyncio.sleep(60)  # (cancelled)
        >>> try:
        ...     asyncio.run(interrupted_in_a_callback())
        ... except SignalExit as ended:
        ...     said.append(ended.signum.name)
        >>> said, signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
        (['connected', 'SIGTERM'], True)
        >>> def mine(signum: int, frame: object) -> None: ...
        >>> async def left_alone() -> bool:  # (asyncio.run installs none over a caller's own)
        ...     with cancelled_by_signals("demo"):
        ...         return signal.getsignal(signal.SIGINT) is mine
        >>> previous = signal.signal(signal.SIGINT, mine)
        >>> asyncio.run(left_alone())
        True
        >>> _ = signal.signal(signal.SIGINT, previous)
    """
    import asyncio

    signals = StartSignals(who, doing)
    task = asyncio.current_task()
    if threading.current_thread() is not threading.main_thread() or task is None or _stopping is not None:
        yield signals
        return
    loop = task.get_loop()

    def cancel() -> None:
        if signals.cancels and not task.done():
            task.cancel()

    def taken(signum: int, frame: object) -> None:
        if signals.first is None:
            signals.first = signal.Signals(signum)
            if signals.cancels:
                with contextlib.suppress(RuntimeError):  # (the loop closed meanwhile)
                    signals.queued = loop.call_soon_threadsafe(cancel)
            elif signals.stop is not None:
                signals.stop()
            return
        _again(signum, signals.second_line(signum))

    given = [(sig, previous) for sig in ENDING
             if _takes(sig, previous := signal.getsignal(sig), task)]
    for sig, _ in given:
        signal.signal(sig, taken)
    failed: Exception | None = None
    try:
        yield signals
    except asyncio.CancelledError:
        if signals.first is None:
            raise
    except Exception as error:
        if signals.first is None:
            raise
        failed = error  # (said below, then the signal ends the command all the same)
    finally:
        signals.settle(signals.doing)
        for sig, previous in given:
            if signal.getsignal(sig) is taken:
                signal.signal(sig, previous)
    if signals.first is not None:
        _ended_by(signals.first, failed)


class SignalWake:
    """A pipe that Python's C signal handler writes a byte to, in whichever thread it runs
    (``signal.set_wakeup_fd``), and that an event loop reads (:meth:`watch`): the loop's
    thread, the main one, wakes and runs the Python handler. Set from :meth:`watch` until
    :meth:`close` (after the loop's end: asyncio's teardown waits in the loop). The loop's
    own signal handlers (``add_signal_handler``) set their own meanwhile; the worker's
    (:func:`~cursor_agent_api.server.worker.serve_worker`) set this one back as they end.
    Outside the main thread (where no signal handler runs) it does nothing. That it wakes
    the worker is tested in ``tests/cli/test_second_signal.py``.

    Example:
        >>> import asyncio, threading
        >>> async def watched() -> bool:
        ...     wake = SignalWake()
        ...     wake.watch(asyncio.get_running_loop())
        ...     try:  # (the wakeup file descriptor, read and set again as it was)
        ...         return signal.set_wakeup_fd(wake.fd, warn_on_full_buffer=False) == wake.fd
        ...     finally:
        ...         wake.close()
        >>> asyncio.run(watched()), signal.set_wakeup_fd(-1)  # set back once closed
        (True, -1)
        >>> async def fd_watched() -> int:
        ...     wake = SignalWake()
        ...     wake.watch(asyncio.get_running_loop())
        ...     try:
        ...         return wake.fd
        ...     finally:
        ...         wake.close()
        >>> found = []
        >>> thread = threading.Thread(target=lambda: found.append(asyncio.run(fd_watched())))
        >>> thread.start(); thread.join(); found  # (not the main thread: nothing watched)
        [-1]
    """

    def __init__(self) -> None:
        self._pipe: tuple[int, int] | None = None  # (read, write), made by watch()
        self._previous: int | None = None

    @property
    def fd(self) -> int:
        """The file descriptor the signals' C handler writes to (-1 when not watching)."""
        return -1 if self._pipe is None else self._pipe[1]

    def watch(self, loop: asyncio.AbstractEventLoop) -> None:
        """Read the pipe in ``loop`` and make it the wakeup file descriptor (in the main
        thread; elsewhere, nothing)."""
        if threading.current_thread() is not threading.main_thread() or self._pipe is not None:
            return
        read, write = self._pipe = os.pipe()
        for fd in (read, write):
            os.set_blocking(fd, False)
        loop.add_reader(read, self._drain, read)
        self._previous = signal.set_wakeup_fd(write, warn_on_full_buffer=False)

    @staticmethod
    def _drain(read: int) -> None:
        with contextlib.suppress(OSError):  # (emptied: BlockingIOError)
            while os.read(read, 512):
                pass

    def close(self) -> None:
        """Set the wakeup file descriptor back, if it is still this one; close the pipe.
        (The loop, closed by now, no longer reads it.)"""
        pipe, self._pipe = self._pipe, None
        if pipe is None:
            return
        if self._previous is not None:
            current = signal.set_wakeup_fd(self._previous)
            if current != pipe[1]:  # (someone else's since: theirs stays)
                signal.set_wakeup_fd(current)
            self._previous = None
        for fd in pipe:
            with contextlib.suppress(OSError):
                os.close(fd)
