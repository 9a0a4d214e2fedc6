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
    from typing import NoReturn

__all__ = ["SignalExit", "exit_by_signal"]


class SignalExit(SystemExit):
    """The command stops because it received signal ``signum`` (its cleanup still to run
    as the exception unwinds); a ``SystemExit`` with the shell's status for it, 128 + N.

    Example:
        >>> import signal
        >>> isinstance(SignalExit(signal.SIGINT), SystemExit), SignalExit(signal.SIGINT).code
        (True, 130)
    """

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.signum = signal.Signals(signum)


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
    same; and the same signal again while the exit handlers run ends it at once (one
    more Ctrl-C, as during a turn's save), without Python's traceback from inside a handler.
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
    if threading.current_thread() is threading.main_thread():  # (the only one that may)
        signal.signal(signum, signal.SIG_DFL)  # from now: the same signal again ends it at once
    _flush()
    atexit._run_exitfuncs()  # what the interpreter's exit runs; run once (then cleared)
    _flush()
    if signal.getsignal(signum) == signal.SIG_DFL:
        signal.pthread_kill(threading.get_ident(), signum)  # to this thread: it dies here
    os._exit(128 + signum)  # blocked, or a handler another thread cannot take away
