"""One turn as the command line runs it: stream, show, record, cancel on Ctrl-C, save.

Shared by ``run`` and ``chat``. Ctrl-C while a turn runs sends SIGINT to the agent's
process group (SIGKILL on a second Ctrl-C), and the turn ends as cancelled: the view gets
the stream's closing result event (the library's, saying so) and the result; the chat
itself goes on. SIGTERM and SIGHUP (``timeout``, a CI cancel, ``docker stop``, a closed
terminal) end the turn the same way — cancelled, saved, its chat id said — and then the
command, which dies from the signal (:func:`ending_signals`, :mod:`cursor_agent_api.signal_exit`). A signal
arriving while the chat is saved and the turn's end shown is held until they are: the chat
id is saved and said first (:mod:`.turn_signals`). A closed output (``-o ndjson | head -1``)
cancels the turn too: it is saved, its chat id said on stderr, and the command ends quietly with status 1.

Example:
    >>> from cursor_agent_api.protocol import parse_event
    >>> recorder = Recorder(None)
    >>> recorder.write(parse_event('{"type":"user"}'))  # no file: nothing happens
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import signal
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import click
from rich.text import Text

from ..config import is_chat_id
from ..errors import SessionError, TurnCancelledError
from ..protocol import AgentEvent, AgentResult, EventType
from ..runtime.outcome import client_result_event
from ..sessions import ConversationSession
from ..signal_exit import SignalExit
from .console import make_console, output_failure
from .options import continue_command
from .render import printable
from .saved_chats import SavedChats
from .turn_signals import ENDING_SIGNALS, LateInterrupt, Terminated, TurnSignals, ending_signals
from .views import TurnView, agent_line, chat_lines, outcome_lines

if TYPE_CHECKING:
    from ..client import StreamingResponse
    from .steer import TerminalSteering

__all__ = ["ENDING_SIGNALS", "Recorder", "Terminated", "TurnOutcome", "ending_signals", "open_recorder",
           "run_turn"]

_RESULTS = frozenset((EventType.RESULT_SUCCESS, EventType.RESULT_ERROR))


class Recorder:
    """``--record FILE``: the agent's stream-json lines, as received, one per line (with
    ``--acp``, the events mapped from its JSON-RPC, one JSON object per line): ``replay`` reads
    either.

    A file that cannot be written (a full disk, an I/O error) stops the recording, never the
    turn: the failure is said once, on stderr, by :meth:`report` (after the turn is shown)
    or :meth:`close`. The file is opened (created if missing) at once, so that a path that
    cannot be written is said before anything else; it is emptied by :meth:`begin`, when the
    turn starts: a run refused before that leaves an earlier recording as it was, and removes
    a file it created.

    Example:
        >>> from cursor_agent_api.protocol import parse_event
        >>> said = []
        >>> recorder = Recorder(Path("/dev/full"), warn=said.append)
        >>> recorder.begin()
        >>> recorder.write(parse_event('{"type":"user"}'))
        >>> recorder.close()
        >>> said  # doctest: +ELLIPSIS
        ['⚠ --record /dev/full: recording stopped (No space left on device); ...']
    """

    def __init__(self, path: Path | None, *, warn: Callable[[str], None] | None = None) -> None:
        self._path = path
        self._created = path is not None and not path.exists()
        self._file: BinaryIO | None = open(path, "ab") if path else None  # noqa: SIM115
        self._begun = False
        self._warn = warn or _warn_on_stderr
        self._failure = ""

    def begin(self) -> None:
        """The turn starts: empty the file (a regular one: a device or a pipe has nothing
        to empty) of what an earlier run recorded."""
        self._begun = True
        file = self._file
        if file is None:
            return
        try:
            if stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                file.truncate(0)
        except OSError as exc:
            self._fail(exc)

    def write(self, event: AgentEvent) -> None:
        """Append the event's stream-json line (:func:`~.views.agent_line`: the agent's
        original line; with ``--acp``, the mapped event's object; events the library made
        itself have none)."""
        if self._file is None:
            return
        line = agent_line(event)
        if line is None:
            return
        try:
            self._file.write(line + b"\n")
            self._file.flush()
        except OSError as exc:
            self._fail(exc)

    def _fail(self, exc: OSError) -> None:
        self._failure = printable(
            f"⚠ --record {self._path}: recording stopped ({exc.strerror or exc}); the turn "
            "goes on, the file holds the lines written before", one_line=True)
        file, self._file = self._file, None
        if file is not None:
            with contextlib.suppress(OSError):  # its buffer cannot be written either
                file.close()

    def report(self) -> None:
        """Say a failure of the recording, once."""
        if self._failure:
            self._warn(self._failure)
            self._failure = ""

    def close(self) -> None:
        """Close the file (and say a failure not yet said)."""
        if self._file is not None:
            file, self._file = self._file, None
            try:
                file.close()
            except OSError as exc:  # its last lines could not be written
                self._fail(exc)
            if not self._begun and self._created and self._path is not None:
                with contextlib.suppress(OSError):  # the run was refused before its turn
                    self._path.unlink()
        self.report()


def open_recorder(record: Path | None) -> Recorder:
    """The :class:`Recorder` of ``--record``; a file that cannot be created is a usage error
    (exit 2). Called before the command prints anything (``--simulate``'s banner included):
    a run that cannot start announces nothing.

    Example:
        >>> open_recorder(Path("/nonexistent/run.jsonl"))
        Traceback (most recent call last):
        click.exceptions.UsageError: cannot write --record /nonexistent/run.jsonl: No such file or directory
    """
    try:
        return Recorder(record)
    except OSError as exc:
        raise click.UsageError(f"cannot write --record {printable(str(record), one_line=True)}: "
                               f"{exc.strerror}") from None


def _warn_on_stderr(message: str) -> None:
    make_console(stderr=True).print(Text(message, style="yellow"))


class _Shown:
    """The turn's view, until its output cannot be written (a full disk, an I/O error): then
    the turn goes on unshown and is saved; :meth:`report` says so on stderr, with the turn's
    outcome and chat id. A closed pipe (``| head``: :attr:`closed`) cancels the turn, which is
    saved; :meth:`report` then says only its chat id (stdout, now ``/dev/null``, takes what
    is left quietly).

    Example:
        >>> shown = _Shown()
        >>> def full(): raise OSError(errno.ENOSPC, "No space left on device")
        >>> shown.call(full); shown.call(print, "not shown"); shown.lost, shown.closed
        (OSError(28, 'No space left on device'), False)
    """

    def __init__(self) -> None:
        self.lost: OSError | None = None

    @property
    def closed(self) -> bool:
        """The output is a pipe nobody reads any more: the turn is to be cancelled."""
        return self.lost is not None and self.lost.errno == errno.EPIPE

    def call(self, show: Callable[..., None], *args: object, **kwargs: object) -> None:
        if self.lost is not None:
            return
        try:
            show(*args, **kwargs)
        except OSError as exc:
            self.lost = exc
            if exc.errno == errno.EPIPE:
                _quiet_stdout()

    def report(self, result: AgentResult, hint: str, *, simulated: bool) -> None:
        """Say the lost output, and what the view would have ended with, on stderr."""
        if self.lost is None:
            return
        err = make_console(stderr=True)
        if self.closed:  # whoever closed it asked for no more: the chat id alone, quietly
            with contextlib.suppress(OSError):  # stderr was that pipe too
                for line in chat_lines(result, hint):
                    err.print(line, soft_wrap=True)
            return
        err.print(Text(printable(f"✗ {output_failure(self.lost)}"), style="bold red"),
                  soft_wrap=True)
        lines = [] if result.success else outcome_lines(result, simulated=simulated)
        for line in [*lines, *chat_lines(result, hint)]:
            err.print(line, soft_wrap=True)


def _quiet_stdout() -> None:
    """Point stdout at ``/dev/null`` once its reader is gone: what is still buffered, and the
    flush at exit, go nowhere instead of failing with a ``BrokenPipeError`` traceback."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


@dataclass(slots=True)
class TurnOutcome:
    """What a turn ended with, for the exit code. ``interrupted``: cancelled by a Ctrl-C
    (SIGINT) the command received. ``terminated``: the signal of :data:`ENDING_SIGNALS` that
    cancelled it, for :func:`run_turn`, which then ends the command with it
    (:class:`~cursor_agent_api.signal_exit.SignalExit`): the outcomes it returns have none."""

    result: AgentResult
    interrupted: bool
    output_lost: bool = False
    terminated: int | None = None

    @property
    def exit_code(self) -> int:
        """The status of a turn that no signal to the command ended: 0 success, 130 cancelled
        (its agent saying so), 1 any other failure (the output lost too, and a turn cancelled
        because its output was closed). One that a signal to the command ended ends the
        command with :class:`~cursor_agent_api.signal_exit.SignalExit` instead (128 + N, that class's
        status): :func:`run_turn` raises it for SIGTERM and SIGHUP, its caller for a Ctrl-C
        (``interrupted``).

        Example:
            >>> r = AgentResult(success=False, result="", session_id=None, cancelled=True)
            >>> TurnOutcome(r, False).exit_code
            130
            >>> TurnOutcome(r, False, output_lost=True).exit_code  # | head -1
            1
        """
        if self.result.success:
            return 1 if self.output_lost else 0
        if self.result.cancelled and not self.output_lost:
            return 130
        return 1


def _not_started() -> AgentResult:
    """The result of a turn interrupted (Ctrl-C, SIGTERM) while its agent was starting:
    cancelled on request, as any cancelled turn.

    Example:
        >>> type(_not_started().exception).__name__, _not_started().cancelled
        ('TurnCancelledError', True)
    """
    error = "interrupted while the agent was starting; the prompt was not sent"
    return AgentResult(success=False, result="", session_id=None, error=error,
                       exception=TurnCancelledError(error), cancelled=True)


def run_turn(
    session: ConversationSession,
    prompt: str,
    view: TurnView,
    recorder: Recorder,
    *,
    saved: SavedChats,
    simulated: bool,
    steering: TerminalSteering | None = None,
) -> TurnOutcome:
    """Run one turn of ``session``: show it in ``view``, record it, save the chat.

    Raises what ``send_stream`` raises before the agent starts (``AgentNotFoundError``).
    With ``steering`` (``--acp`` on a terminal), the view pauses while a question is asked
    (its updates kept, never waited for: a timeout or a crash ends the turn as usual).
    SIGTERM or SIGHUP during the turn cancel it as Ctrl-C does; once it is saved and shown,
    :class:`~cursor_agent_api.signal_exit.SignalExit` ends the command
    (:func:`ending_signals`). A signal arriving while the chat is saved and the end shown
    waits until they are
    (:class:`~.turn_signals.TurnSignals`).
    """
    with ending_signals() as signals:
        outcome = _run_turn(session, prompt, view, recorder, saved=saved, simulated=simulated,
                            steering=steering, signals=signals)
        held = signals.take()
        if held is not None and outcome.interrupted and held not in ENDING_SIGNALS:
            held = None  # one more Ctrl-C on a cancelled turn: nothing more to do
        if held in ENDING_SIGNALS and outcome.terminated is None:
            outcome.terminated = held  # a SIGTERM after a Ctrl-C (a CI's cancel) ends it
        if outcome.terminated is not None:
            raise SignalExit(outcome.terminated)
        if held is not None:  # a Ctrl-C as the turn ended by itself: as one right after it
            raise LateInterrupt(outcome)
    return outcome


def _ended_by(exc: KeyboardInterrupt) -> int | None:
    return exc.signum if isinstance(exc, Terminated) else None


def _run_turn(
    session: ConversationSession,
    prompt: str,
    view: TurnView,
    recorder: Recorder,
    *,
    saved: SavedChats,
    simulated: bool,
    steering: TerminalSteering | None,
    signals: TurnSignals,
) -> TurnOutcome:
    if steering is not None:
        steering.view = view
        steering.reset()
    try:
        stream = session.send_stream(prompt)
    except KeyboardInterrupt as exc:  # Ctrl-C while the agent starts: no turn ran
        signals.hold()
        if steering is not None:
            steering.interrupt()
            steering.settle()
        result = _of_the_chat(_not_started(), session)
        # the closing result event, as every interrupted turn ends with (NDJSON's last line)
        view.handle(client_result_event(result.exception), ())
        view.finish(result, continue_hint=_continue_hint(result, session, simulated))
        return TurnOutcome(result, interrupted=True, terminated=_ended_by(exc))
    interrupted = False
    terminated: int | None = None
    seen_result = False
    shown = _Shown()
    stop_with = signal.SIGINT  # while the agent runs, a signal cancels the turn
    events = stream.with_changes()  # the stream folds each event, once; the view applies that
    try:
        try:
            for event, changes in events:
                if event.type in _RESULTS:
                    seen_result = True
                recorder.write(event)
                if steering is not None:  # never waits for a question on screen
                    steering.show(functools.partial(shown.call, view.handle, event, changes),
                                  request=event.type is EventType.INTERACTION_QUERY
                                  and event.subtype == "request")
                else:
                    shown.call(view.handle, event, changes)
                if shown.closed:  # | head -1: nobody reads on; cancelled, then saved
                    break
        finally:
            events.close()
        if shown.closed:
            result, terminated = _stop(session, prompt, stream, stop_with, signals, steering)
        else:
            stop_with = signal.SIGKILL  # the agent's output is over: a signal kills it at once
            result = session.finalize_stream(prompt, stream)
            signals.hold()
    except KeyboardInterrupt as exc:
        interrupted, terminated = True, _ended_by(exc)
        result, again = _stop(session, prompt, stream, stop_with, signals, steering)
        terminated = terminated or again
    closing = stream.transcript.result_event
    if interrupted and not seen_result and closing is not None:
        # The stream stopped handing events out at the cancel; its closing result event
        # (the library's, saying the turn was cancelled) ends what the view showed (NDJSON's
        # last line). Its changes are not passed: the view stopped following the fold, and
        # finish() shows the end of the turn.
        shown.call(view.handle, closing, ())
    if steering is not None:
        steering.settle()
    unsaved = _save(saved, session, result)
    result = _of_the_chat(result, session)
    hint = _continue_hint(result, session, simulated)
    shown.call(view.finish, result, continue_hint=hint)  # the answer first, then the save
    shown.report(result, hint, simulated=simulated)
    recorder.report()
    if unsaved:
        _warn_on_stderr(unsaved)
    return TurnOutcome(result, interrupted, output_lost=shown.lost is not None,
                       terminated=terminated)


def _of_the_chat(result: AgentResult, session: ConversationSession) -> AgentResult:
    """``result`` with the chat's id when the agent said none: a resumed chat's turn stopped
    before the agent's first event (``init``, which carries the id) is still that chat's, and
    its end says so (a new chat has no id yet: nothing to say).

    Example:
        >>> chat = "8b72ae6d-ab42-4854-991e-6ecf580e66c2"
        >>> with ConversationSession(session_id=chat) as session:
        ...     _of_the_chat(_not_started(), session).session_id == chat
        True
    """
    if result.session_id or not session.session_id:
        return result
    return replace(result, session_id=session.session_id)


def _continue_hint(result: AgentResult, session: ConversationSession, simulated: bool) -> str:
    """The command that continues the turn's chat, ``""`` without a chat id (or with one
    that is not a UUID: the agent's word, never passed to ``--resume``)."""
    if not (result.session_id and is_chat_id(result.session_id)):
        return ""
    return continue_command(result.session_id, simulated, session.config.workspace,
                            acp=session.config.transport == "acp")


def _stop(session: ConversationSession, prompt: str, stream: StreamingResponse, how: int,
          signals: TurnSignals, steering: TerminalSteering | None) -> tuple[AgentResult, int | None]:
    """Stop the turn a signal interrupted (``how``: SIGINT while the agent wrote, SIGKILL
    once it had written all) and wait for its end; its result, and the signal of
    :data:`ENDING_SIGNALS` that killed the agent meanwhile (a second one), if any."""
    try:
        signals.stopping()
        if steering is not None and how != signal.SIGKILL:
            steering.interrupt()
        stream.cancel(how)
        result = session.finalize_stream(prompt, stream)
        signals.hold()
        return result, None
    except KeyboardInterrupt as exc:  # one more: killed now (the next ones are held)
        stream.cancel(signal.SIGKILL)
        return session.finalize_stream(prompt, stream), _ended_by(exc)


def _save(saved: SavedChats, session: ConversationSession, result: AgentResult) -> str:
    """Save the chat; on failure (a full disk, a file where the folder should be, a workspace
    whose path is not UTF-8, which the JSON file cannot hold), the one-line warning to show
    once the turn is shown, else ``""``. The turn is not lost with the file: the agent keeps
    the chat, ``--resume ID`` continues it. A chat id from the agent that is not a UUID
    (never passed to ``--resume``) leaves the chat without an id: not saved, said so."""
    try:
        if saved.save(session) is None and result.session_id and not is_chat_id(result.session_id):
            return printable(f"⚠ this turn was not saved: the agent's chat id "
                             f"{result.session_id!r:.80} is not a UUID (it cannot be continued)")
    except (OSError, SessionError, ValueError) as exc:  # (ValueError: a path JSON cannot hold)
        reason = str(exc)
        if isinstance(exc, OSError) and exc.strerror:
            reason = exc.strerror + (f": {exc.filename}" if exc.filename else "")
        return printable(f"⚠ this turn was not saved in {saved.root} ({reason}); the agent "
                         f"keeps the chat: --resume {session.session_id} continues it")
    return ""
