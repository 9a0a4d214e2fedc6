"""One turn as the command line runs it: stream, show, record, cancel on Ctrl-C, save.

Shared by ``run`` and ``chat``. Ctrl-C while a turn runs sends SIGINT to the agent's
process group (SIGKILL on a second Ctrl-C), and the turn ends as cancelled; the chat
itself goes on.

Example:
    >>> from cursor_agent_api.protocol import parse_event
    >>> recorder = Recorder(None)
    >>> recorder.write(parse_event('{"type":"user"}'))  # no file: nothing happens
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from rich.text import Text

from ..errors import CursorAgentError, SessionError
from ..protocol import AgentEvent, AgentResult
from ..sessions import ConversationSession
from .console import make_console
from .options import continue_command
from .render import printable
from .saved_chats import SavedChats
from .views import TurnView

if TYPE_CHECKING:
    from .steer import TerminalSteering

__all__ = ["Recorder", "TurnOutcome", "run_turn"]


class Recorder:
    """``--record FILE``: the raw output lines, as received, one per line."""

    def __init__(self, path: Path | None) -> None:
        self._file: BinaryIO | None = open(path, "wb") if path else None  # noqa: SIM115

    def write(self, event: AgentEvent) -> None:
        """Append the event's original line (events the library made itself have none)."""
        if self._file is None or event.line is None:
            return
        line = event.line if isinstance(event.line, bytes) else event.line.encode()
        self._file.write(line + b"\n")
        self._file.flush()

    def close(self) -> None:
        """Close the file."""
        if self._file is not None:
            self._file.close()
            self._file = None


@dataclass(slots=True)
class TurnOutcome:
    """What a turn ended with, for the exit code."""

    result: AgentResult
    interrupted: bool

    @property
    def exit_code(self) -> int:
        """0 success, 130 interrupted or cancelled, 1 any other failure."""
        if self.result.success:
            return 0
        if self.interrupted or self.result.cancelled:
            return 130
        return 1


def _not_started() -> AgentResult:
    error = "interrupted while the agent was starting; the prompt was not sent"
    return AgentResult(success=False, result="", session_id=None, error=error,
                       exception=CursorAgentError(error), cancelled=True)


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
    With ``steering`` (``--acp`` on a terminal), the view pauses while a question is asked.
    """
    if steering is not None:
        steering.view = view
        steering.reset()
    try:
        stream = session.send_stream(prompt)
    except KeyboardInterrupt:  # Ctrl-C while the agent starts: no turn ran, the chat goes on
        if steering is not None:
            steering.interrupt()
            steering.settle()
        view.finish(_not_started(), continue_hint="")
        return TurnOutcome(_not_started(), interrupted=True)
    interrupted = False
    events = stream.with_changes()  # the stream folds each event, once; the view applies that
    try:
        for event, changes in events:
            recorder.write(event)
            if steering is not None:
                with steering.lock:
                    view.handle(event, changes)
            else:
                view.handle(event, changes)
    except KeyboardInterrupt:
        interrupted = True
        if steering is not None:
            steering.interrupt()
        stream.cancel(signal.SIGINT)
    finally:
        events.close()
    try:
        result = session.finalize_stream(prompt, stream)
    except KeyboardInterrupt:
        interrupted = True
        stream.cancel(signal.SIGKILL)
        result = session.finalize_stream(prompt, stream)
    if steering is not None:
        steering.settle()
    unsaved = _save(saved, session)
    hint = ""
    if result.session_id:
        hint = continue_command(result.session_id, simulated, session.config.workspace,
                                acp=session.config.transport == "acp")
    view.finish(result, continue_hint=hint)  # the answer first, whatever became of the save
    if unsaved:
        make_console(stderr=True).print(Text(unsaved, style="yellow"))
    return TurnOutcome(result, interrupted)


def _save(saved: SavedChats, session: ConversationSession) -> str:
    """Save the chat; on failure (a full disk, a file where the folder should be), the
    one-line warning to show once the turn is shown, else ``""``. The turn is not lost with
    the file: the agent keeps the chat, ``--resume ID`` continues it."""
    try:
        saved.save(session)
    except (OSError, SessionError) as exc:
        reason = str(exc)
        if isinstance(exc, OSError) and exc.strerror:
            reason = exc.strerror + (f": {exc.filename}" if exc.filename else "")
        return printable(f"⚠ this turn was not saved in {saved.root} ({reason}); the agent "
                         f"keeps the chat: --resume {session.session_id} continues it")
    return ""
