"""How Ctrl-C (SIGINT), SIGTERM and SIGHUP act while ``run`` or ``chat`` runs a turn.

As the turn goes (:class:`TurnSignals`):

* while the agent runs, the first signal stops the turn: it is cancelled (SIGINT to the
  agent's process group);
* while the agent is being stopped, the next one kills it (SIGKILL);
* once the agent has ended, while the chat is saved and the turn's end shown, one signal is
  held: it acts once the chat id is saved and said (SIGTERM and SIGHUP end the command: it
  dies from the signal, :mod:`cursor_agent_api.signal_exit`; a Ctrl-C on a turn already cancelled adds
  nothing; one on a turn that ended by itself cancelled nothing: :class:`LateInterrupt`).
  One more while held ends the command at once, so a save or a view that cannot finish (a
  lock held, a pipe nobody reads) never keeps it running.

SIGTERM and SIGHUP (:data:`ENDING_SIGNALS`) then end the command: :func:`ending_signals`.

Example:
    >>> signals = TurnSignals()
    >>> signals.hold()  # the agent ended: the chat is being saved
    >>> signals.handle(signal.SIGTERM, None)  # held, not raised
    >>> signals.take()
    <Signals.SIGTERM: 15>
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ..signal_exit import SignalExit, stopping

if TYPE_CHECKING:
    from .turns import TurnOutcome

__all__ = ["ENDING_SIGNALS", "LateInterrupt", "Terminated", "TurnSignals", "ending_signals"]

ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
"""Signals that end the command: during a turn, they first end the turn as Ctrl-C does."""


class Terminated(KeyboardInterrupt):
    """One of :data:`ENDING_SIGNALS` arrived during a turn. A ``KeyboardInterrupt``, so that
    it takes every path a Ctrl-C takes (the stream's Ctrl-C safety included).

    Example:
        >>> ended = Terminated(signal.SIGTERM)
        >>> isinstance(ended, KeyboardInterrupt), ended.signum == signal.SIGTERM
        (True, True)
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class LateInterrupt(KeyboardInterrupt):
    """A Ctrl-C held while a turn that ended by itself was saved and its end shown, raised
    once they are: it cancelled nothing (the turn completed). A ``KeyboardInterrupt`` (``run``
    ends as at any Ctrl-C: it dies from the SIGINT); ``chat`` says what happened and goes on. ``outcome``:
    the turn's, as it ended.

    Example:
        >>> issubclass(LateInterrupt, KeyboardInterrupt)
        True
    """

    def __init__(self, outcome: TurnOutcome) -> None:
        super().__init__()
        self.outcome = outcome


def _interruption(signum: int) -> KeyboardInterrupt:
    return Terminated(signum) if signum in ENDING_SIGNALS else KeyboardInterrupt()


class TurnSignals:
    """The handler of the turn's signals, and where the turn stands (see the module).

    The state changes without a call between the signal and the change: the handler
    itself counts what it raised, so a signal landing anywhere is either raised where the
    turn catches it or held.

    Example:
        >>> signals = TurnSignals()
        >>> def deliver(signum):
        ...     try:
        ...         signals.handle(signum, None)
        ...     except KeyboardInterrupt as exc:
        ...         return f"raised {type(exc).__name__}"
        ...     return "held"
        >>> deliver(signal.SIGINT)  # the agent runs: the turn is stopped
        'raised KeyboardInterrupt'
        >>> signals.hold()
        >>> deliver(signal.SIGHUP), deliver(signal.SIGTERM)  # one held; one more ends at once
        ('held', 'raised Terminated')
    """

    def __init__(self) -> None:
        self._raises = 2  # stop the turn, then kill the agent; then hold
        self._held: signal.Signals | None = None
        self._taken = False

    def handle(self, signum: int, frame: object) -> None:
        """The signal handler (the main thread runs it between two bytecodes)."""
        if self._raises == 0 and self._held is None:
            self._held = signal.Signals(signum)
            return
        self._raises = self._raises - 1 if self._raises else 0
        raise _interruption(signum)

    def stopping(self) -> None:
        """The agent is being stopped: the next signal kills it; the ones after are held."""
        self._raises = min(self._raises, 1)

    def hold(self) -> None:
        """The agent has ended: a signal is held from now (one more ends at once)."""
        self._raises = 0

    def take(self) -> signal.Signals | None:
        """The signal held, for the turn to act on (once: then nothing is left to act on;
        a signal after it still ends the command at once)."""
        if self._taken:
            return None
        self._taken = True
        return self._held


_DEFAULTS: tuple[tuple[signal.Signals, Callable[..., Any] | int], ...] = (
    (signal.SIGINT, signal.default_int_handler),
    *((sig, signal.SIG_DFL) for sig in ENDING_SIGNALS),
)


@contextlib.contextmanager
def ending_signals() -> Iterator[TurnSignals]:
    """While the block runs, Ctrl-C, SIGTERM and SIGHUP are handled by the
    :class:`TurnSignals` it gives (in the main thread, where Python runs signal handlers); a
    ``Terminated`` that leaves the block ends the command: :class:`~cursor_agent_api.signal_exit.SignalExit`
    (a ``SystemExit(128 + N)``: the command then dies from the signal), and so
    does a SIGTERM or SIGHUP held and not taken (a Ctrl-C so: ``KeyboardInterrupt``, once
    the handlers are given back). Only a signal left at its default action is taken: one
    ignored (``nohup``) or handled by someone else stays so. The previous handlers come back
    when the block ends, so outside a turn the signals act as always; the exit handlers
    (the runtime's, which stop what is left of any agent's process group) run before the
    command dies (:func:`~cursor_agent_api.signal_exit.exit_by_signal`).

    Example:
        >>> before = signal.getsignal(signal.SIGTERM)  # SIG_DFL, unless a host process set it
        >>> with ending_signals() as signals:
        ...     during = signal.getsignal(signal.SIGTERM)
        >>> (during == signals.handle) == (before is signal.SIG_DFL)
        True
        >>> signal.getsignal(signal.SIGTERM) is before
        True
    """
    signals = TurnSignals()
    taken: list[tuple[signal.Signals, Callable[..., Any] | int]] = []
    if threading.current_thread() is threading.main_thread():
        for sig, default in _DEFAULTS:
            if signal.getsignal(sig) is default:
                signal.signal(sig, signals.handle)
                taken.append((sig, default))
    try:
        yield signals
    except Terminated as exc:
        raise SignalExit(exc.signum) from None
    finally:
        try:
            for sig, default in taken:
                signal.signal(sig, default)
        except KeyboardInterrupt as exc:  # it landed as the handlers were given back
            for sig, default in taken:
                signal.signal(sig, default)
            if isinstance(exc, Terminated):
                raise SignalExit(exc.signum) from None
            raise
        stopping()  # a SignalExit on its way (the program's): the next signal still ends it at once
    held = signals.take()
    if held in ENDING_SIGNALS:
        raise SignalExit(held)
    if held is not None:
        raise KeyboardInterrupt
