"""When a turn's process group is signalled, and when the turn is over: a pure state machine.

No I/O, no clock, no loop (in the manner of h11's ``_state.py``): the caller reports what it
saw and asks :meth:`StopPolicy.step` what to do now; it gets one action back and performs it.

Inputs: :meth:`StopPolicy.result_seen` (the first ``result`` event),
:meth:`StopPolicy.cancel` (a signal the user asked for), and at each step the time and what
the caller observes: the agent exited, its process group is empty, end-of-file on its
stdout and stderr, the time of its last output, and whether output is paused (the consumer
is not reading, so silence is not the agent's).

Outputs (:data:`Action`): :class:`Signal` — send ``sig`` to the group; :class:`Wait` —
sleep until ``until`` (or until the next input, when ``None``); :data:`CLOSE_PIPES` — the
group is gone but a process outside it still holds the pipes: close our ends;
:data:`FINISH` — the agent is reaped, its group is empty, its pipes are closed: the turn is
over.

The rules (the behaviour of ``AgentRun``):

* before the result, ``timeout`` (from the start) and ``idle_timeout`` (from the last output,
  not counted while paused) stop the group with SIGTERM;
* the first result gives the agent ``result_grace`` seconds to exit by itself, then SIGTERM;
* so does end-of-file on both stdout and stderr before any result: the agent can say nothing
  more, so waiting for it to exit must not be endless (reason ``output_closed``);
* a cancel sends its own signal at once; a later ``cancel(SIGKILL)`` escalates at once;
* processes left in the group after the agent exited are stopped with SIGTERM;
* once a stop began, SIGKILL follows ``kill_grace`` seconds later unless the group is gone;
  only one stop is ever begun (its reason is :attr:`StopPolicy.reason`);
* the agent exited and its group is empty, but the pipes are still open: after
  ``drain_grace`` seconds, close them (not counted while paused).

Example (times in seconds, from a fake clock):
    >>> import signal
    >>> p = StopPolicy(started_at=0.0, timeout=None, idle_timeout=None, result_grace=3.0,
    ...                kill_grace=2.0)
    >>> p.step(1.0, exited=False, group_empty=False, eof=False, last_activity=1.0)
    Wait(until=None)
    >>> p.result_seen(1.0)
    >>> p.step(1.0, exited=False, group_empty=False, eof=False, last_activity=1.0)
    Wait(until=4.0)
    >>> p.step(4.0, exited=False, group_empty=False, eof=False, last_activity=1.0)
    Signal(sig=<Signals.SIGTERM: 15>, reason='after_result')
    >>> p.step(6.0, exited=False, group_empty=False, eof=False, last_activity=1.0)
    Signal(sig=<Signals.SIGKILL: 9>, reason='after_result')
    >>> p.step(6.1, exited=True, group_empty=True, eof=True, last_activity=1.0)
    Finish()
"""

from __future__ import annotations

import signal as signal_module
from dataclasses import dataclass

__all__ = [
    "CLOSE_PIPES",
    "DRAIN_GRACE",
    "FINISH",
    "POLL",
    "Action",
    "ClosePipes",
    "Finish",
    "Signal",
    "StopPolicy",
    "StopReason",
    "Wait",
    "stop_signal",
]

DRAIN_GRACE = 2.0
"""Seconds to wait for end-of-file on stdout/stderr once the agent and its group are
gone (a process that left the group may still hold the pipes); then we close them."""

POLL = 0.05
"""Seconds between looks at a group whose leader has exited (its members are not our
children: nothing tells us when they exit)."""


class StopReason:
    """Why the run signalled the agent's group (``AgentRun.stop_reason``).

    Example:
        >>> StopReason.TIMEOUT
        'timeout'
    """

    CANCEL = "cancel"
    TIMEOUT = "timeout"
    IDLE = "idle_timeout"
    AFTER_RESULT = "after_result"
    LEFTOVER = "leftover_processes"
    SHUTDOWN = "shutdown"
    OUTPUT_CLOSED = "output_closed"


@dataclass(frozen=True, slots=True)
class Signal:
    """Send ``sig`` to the agent's process group (``reason``: why the stop began)."""

    sig: int
    reason: str


@dataclass(frozen=True, slots=True)
class Wait:
    """Nothing to do before ``until`` (``None``: before the next input)."""

    until: float | None


@dataclass(frozen=True, slots=True)
class ClosePipes:
    """Close our ends of stdout/stderr: the group is gone, an outsider holds them."""


@dataclass(frozen=True, slots=True)
class Finish:
    """The turn is over: the agent is reaped, its group empty, its pipes closed."""


CLOSE_PIPES = ClosePipes()
FINISH = Finish()

Action = Signal | Wait | ClosePipes | Finish
"""What :meth:`StopPolicy.step` asks of its caller."""


_NOT_STOPPING = frozenset({signal_module.SIGCHLD, signal_module.SIGCONT, signal_module.SIGURG,
                           signal_module.SIGWINCH})
"""Signals whose default action is to ignore or to continue: none of them stops a process."""


def stop_signal(sig: object) -> int:
    """``sig`` as the number of a signal that can stop the agent (what ``cancel()`` sends), or
    ``ValueError`` naming it: not an integer, not a signal of this system (``999``, ``-1``), ``0``
    (sends nothing), or a signal that does not stop a process (SIGCONT, SIGCHLD, SIGURG,
    SIGWINCH). Checked before anything is sent: the turn's supervisor never meets it.

    Example:
        >>> stop_signal(signal_module.SIGINT)
        2
        >>> stop_signal(999)
        Traceback (most recent call last):
        ...
        ValueError: cancel() needs a signal that stops the agent (SIGTERM, SIGINT, SIGKILL…), got 999
    """
    if isinstance(sig, int) and not isinstance(sig, bool) \
            and sig in signal_module.valid_signals() and sig not in _NOT_STOPPING:
        return int(sig)
    raise ValueError(f"cancel() needs a signal that stops the agent (SIGTERM, SIGINT, SIGKILL…), "
                     f"got {sig!r}")


def _named(sig: int) -> int:
    try:
        return signal_module.Signals(sig)
    except ValueError:
        return sig


class StopPolicy:
    """The stop rules of one turn (see the module's text). Pure: feed it times and facts.

    ``phase`` is ``"running"``, then ``"stopping"`` once a signal was sent, ``"killed"``
    once SIGKILL was sent (or was no longer needed).

    Example:
        >>> p = StopPolicy(started_at=0.0, timeout=10.0, idle_timeout=None, result_grace=3.0,
        ...                kill_grace=2.0)
        >>> p.step(10.0, exited=False, group_empty=False, eof=False, last_activity=9.0)
        Signal(sig=<Signals.SIGTERM: 15>, reason='timeout')
        >>> p.phase, p.reason
        ('stopping', 'timeout')
    """

    def __init__(
        self,
        *,
        started_at: float,
        timeout: float | None,
        idle_timeout: float | None,
        result_grace: float,
        kill_grace: float,
        drain_grace: float = DRAIN_GRACE,
        poll: float = POLL,
    ) -> None:
        self.started_at = started_at
        self.timeout = timeout
        self.idle_timeout = idle_timeout
        self.result_grace = result_grace
        self.kill_grace = kill_grace
        self.drain_grace = drain_grace
        self.poll = poll
        self.result_at: float | None = None
        self.cancel_signal: int | None = None
        self.reason: str | None = None
        self.phase = "running"
        self._stop_at = 0.0
        self._drain_from: float | None = None
        self._eof_at: float | None = None  # stdout and stderr both ended, the agent running
        self._pipes_closed = False

    # ---- inputs ------------------------------------------------------------------------

    def result_seen(self, now: float) -> None:
        """The first ``result`` event arrived at ``now`` (later calls change nothing)."""
        if self.result_at is None:
            self.result_at = now

    def cancel(self, sig: int) -> None:
        """The user asked to stop with ``sig``; only SIGKILL overrides an earlier request."""
        if self.cancel_signal is None or sig == signal_module.SIGKILL:
            self.cancel_signal = sig

    # ---- the step --------------------------------------------------------------------------

    def step(self, now: float, *, exited: bool, group_empty: bool, eof: bool,
             last_activity: float, paused: bool = False) -> Action:
        """What to do at ``now``, given what the caller sees.

        ``exited``: the agent itself was reaped. ``group_empty``: no live process is left in
        its group (only read once ``exited``). ``eof``: stdout and stderr are both closed.
        ``paused``: the consumer is not reading (the idle and drain clocks stop).
        """
        gone = exited and group_empty
        if gone and eof:
            self.phase = "done"
            return FINISH
        group_left = exited and not group_empty
        until: float | None = None

        def soon(t: float) -> None:
            nonlocal until
            until = t if until is None else min(until, t)

        if self.phase == "running":
            reason: str | None = None
            sig: int = signal_module.SIGTERM
            if self.cancel_signal is not None:
                reason, sig = StopReason.CANCEL, self.cancel_signal
            elif group_left:
                reason = StopReason.LEFTOVER
            elif self.result_at is not None:
                if not exited:
                    t = self.result_at + self.result_grace
                    if now >= t:
                        reason = StopReason.AFTER_RESULT
                    soon(t)
            elif not exited:
                if self.timeout is not None:
                    t = self.started_at + self.timeout
                    if now >= t:
                        reason = StopReason.TIMEOUT
                    soon(t)
                if self.idle_timeout is not None and not paused:
                    t = last_activity + self.idle_timeout
                    if now >= t:
                        reason = reason or StopReason.IDLE
                    soon(t)
                if eof:  # no result, and nothing more can come: the agent should exit now
                    if self._eof_at is None:
                        self._eof_at = now
                    t = self._eof_at + self.result_grace
                    if now >= t:
                        reason = reason or StopReason.OUTPUT_CLOSED
                    soon(t)
            if reason is not None:
                self.reason = reason
                self._stop_at = now
                self.phase = "killed" if sig == signal_module.SIGKILL else "stopping"
                return Signal(_named(sig), reason)
        elif self.phase == "stopping":
            t = self._stop_at + self.kill_grace
            if now >= t or self.cancel_signal == signal_module.SIGKILL:
                self.phase = "killed"
                if not gone:
                    assert self.reason is not None
                    return Signal(signal_module.SIGKILL, self.reason)
            else:
                soon(t)
        if group_left:
            soon(now + self.poll)
        if gone and not eof and not self._pipes_closed and not paused:
            if self._drain_from is None:
                self._drain_from = now
            t = self._drain_from + self.drain_grace
            if now >= t:
                self._pipes_closed = True
                return CLOSE_PIPES
            soon(t)
        return Wait(until)
