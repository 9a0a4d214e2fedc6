"""``cursor-agent-api chat``: a multi-turn session on one chat.

Line editing and history (GNU readline); Enter sends; Ctrl-C cancels the running
turn and keeps the chat (at the prompt it clears the line; as a turn ends by itself, while
it is saved, it cancels nothing and the chat says so); Ctrl-D leaves. Every
turn is saved: ``chat --resume ID`` (or a unique prefix of ID) continues later,
``sessions list`` shows it; an ID that is neither saved nor a chat id fails at once. A saved
chat resumes in its own folder (another ``--workspace`` is refused) with its own model
(``--model`` given wins).

Exit status: 0, or 1 if a turn failed. With prompts on a pipe, the chat stops at the
first failed turn (the next prompts assumed it worked), at a line that is not UTF-8
text (exit status 2: it was not sent), and at Ctrl-C (the turn is cancelled, the next
prompts are not sent, the chat id said; then the chat dies from the SIGINT, a shell's ``$?``
130, so that a shell loop running it stops too: :mod:`cursor_agent_api.signal_exit`); at a terminal, such a
line is refused and the chat goes on, and Ctrl-C cancels the turn only.

Example:
    $ cursor-agent-api chat --simulate --trust
    › list the files
    ...
    › ^D
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import Any

import click
from rich.text import Text

from ..config import AgentConfig
from ..errors import CursorAgentError
from ..home import home_dir, private_dir
from ..signal_exit import SignalExit
from .console import CliUsageError, error_text, is_terminal, make_console, writing_output
from .options import SIMULATED_BANNER, chat_agent_options, continue_command, with_config
from .render import printable
from .run import acp_steering, as_utf8, load_session, read_stdin, utf8_prompt
from .saved_chats import SavedChats
from .turn_signals import LateInterrupt
from .turns import open_recorder, run_turn
from .views import make_view

PROMPT = "› "
PIPED_STOP = "⊘ Ctrl-C — the chat stops; the prompts still on its input are not sent"
"""What a chat whose prompts come from a pipe says when Ctrl-C stops it (then it dies from the
SIGINT)."""
LATE_CTRL_C = "⊘ Ctrl-C came once the turn had completed: nothing was cancelled — the chat goes on"
"""What a chat at a terminal says for a Ctrl-C that came while a turn that had ended by
itself was saved and shown (held until then: :class:`~.turn_signals.LateInterrupt`)."""


def _setup_readline() -> None:
    try:
        import readline
    except ImportError:  # not on every platform: plain input() then
        return
    history = home_dir() / "chat_history"
    with contextlib.suppress(OSError):
        private_dir(history.parent)
        if history.exists():
            readline.read_history_file(history)
    readline.set_history_length(1000)
    import atexit

    def save() -> None:
        with contextlib.suppress(OSError, ValueError):  # a line that was not UTF-8
            readline.write_history_file(history)

    atexit.register(save)


@click.command()
@chat_agent_options
@with_config
def chat(config: AgentConfig, given: frozenset[str], simulate: bool, record: Path | None,
         output: str) -> None:
    """Talk with the agent, turn after turn, on one chat."""
    console = make_console()  # a pipe or a log: long lines stay whole (JSON output: `run`)

    def say(*args: Any, **kwargs: Any) -> None:  # stdout cannot be written: one line, exit 1
        with writing_output():
            console.print(*args, **kwargs)

    saved = SavedChats()
    recorder = open_recorder(record)  # a bad --record is said first, alone
    if simulate:
        try:
            say(SIMULATED_BANNER, style="bold yellow")
        except BaseException:  # stdout cannot be written: no chat, the file as it was
            recorder.close()
            raise
    recorder.begin()  # the chat starts: an earlier recording in the file goes
    interactive = is_terminal(sys.stdin)
    if interactive:
        _setup_readline()
    config, steering = acp_steering(config, make_console(stderr=True))
    try:
        session = load_session(config, saved, given)
    except CursorAgentError as exc:  # the saved chat's file is damaged: one line, as in run
        recorder.close()
        say(Text(f"✗ {printable(error_text(exc))}", style="bold red"))
        sys.exit(1)
    where = printable(session.config.workspace or ".")  # a resumed chat's, unless -w was given
    say(Text(  # the folder is data, never markup: …/proj[/old] is shown as is
        f"chat {session.session_id or '(new)'} in {where} — Enter sends, Ctrl-C cancels a turn, "
        "Ctrl-D leaves",
        style="dim",
    ))
    status = 0
    lost = False  # the output could not be written: stdout is done with
    stopped = False  # by a Ctrl-C, its prompts from a pipe: it then dies from the SIGINT

    def piped_stop() -> bool:  # Ctrl-C: a chat whose prompts come from a pipe stops
        nonlocal stopped
        if interactive:
            return False
        say(PIPED_STOP, style="yellow")  # its next prompts assumed this one ran
        stopped = True
        return True

    try:
        while True:
            try:
                prompt = _ask() if interactive else _read_line()
                if prompt.strip():
                    utf8_prompt(prompt, "this line")
            except EOFError:
                break
            except KeyboardInterrupt:
                if piped_stop():
                    break
                say()
                continue
            except (CliUsageError, UnicodeDecodeError) as exc:  # not sent: nothing ran
                reason = str(exc) if isinstance(exc, CliUsageError) else \
                    "this line is not UTF-8 text (type it again in UTF-8)"
                say(Text(f"✗ {reason} — not sent", style="bold red"))
                if not interactive:
                    status = 2  # a script's next prompts assumed this one was sent
                    break
                continue
            if not prompt.strip():
                continue
            view = make_view(output, console, simulated=simulate)
            try:
                outcome = run_turn(session, prompt, view, recorder, saved=saved,
                                   simulated=simulate, steering=steering)
            except CursorAgentError as exc:
                _stop(view)
                say(Text(f"✗ {printable(error_text(exc, simulated=simulate))}",
                                   style="bold red"))
                status = 1
                break
            except LateInterrupt as late:  # the turn had ended by itself: nothing cancelled
                if piped_stop():
                    break
                say(LATE_CTRL_C, style="yellow")
                outcome = late.outcome  # then as any turn's (a failed one: status 1)
            except KeyboardInterrupt:  # before the turn began: nothing ran, the chat goes on
                _stop(view)
                if piped_stop():
                    break
                say("⊘ turn cancelled — the chat goes on", style="yellow")
                continue
            if outcome.interrupted and piped_stop():
                break
            if outcome.interrupted:
                say("⊘ turn cancelled — the chat goes on", style="yellow")
            elif outcome.output_lost:  # run_turn said so, and the chat id, on stderr
                status, lost = 1, True
                break
            elif not outcome.result.success and not outcome.result.cancelled:
                status = 1  # the footer said why
                if not interactive:
                    break  # a script's next prompts assumed this one worked
    finally:
        recorder.close()
        session.close()
    folder = session.config.workspace
    if session.session_id and not lost and folder is not None and not os.path.isdir(folder):
        # (its --resume would fail as this chat did: no command that cannot work)
        say(Text(f"chat {session.session_id}: its workspace {printable(os.fspath(folder))} no "
                 "longer exists, so it cannot be continued there", style="dim"), soft_wrap=True)
    elif session.session_id and not lost:
        say(Text(
            "continue later: " + printable(continue_command(
                session.session_id, simulate, session.config.workspace,
                acp=config.transport == "acp")),
            style="dim",
        ), soft_wrap=True)  # whole, for the terminal to wrap: a newline would break a paste
    if stopped:
        raise SignalExit(signal.SIGINT)
    sys.exit(status)


def _stop(view: object) -> None:
    stop = getattr(view, "stop", None)
    if stop is not None:
        stop()


def _ask() -> str:
    """A line typed at the terminal. When the output is a pipe or a file (``chat | tee
    chat.log``; ``input()`` wrote its mark there), the line is written after the mark, as
    :func:`_read_line` writes a piped one: the log holds what was asked (and a ``tee`` to the
    terminal shows the line twice, after the terminal's own echo: README.md says so)."""
    logged = not is_terminal(sys.stdout)
    try:
        line = as_utf8(input(PROMPT), sys.stdin.encoding)
    except EOFError:  # Ctrl-D: the mark's line ends
        if logged:
            _log("")
        raise
    if logged:
        _log(line)
    return line


def _log(line: str) -> None:
    shown = printable(line)  # a byte that is not UTF-8 (a lone surrogate) as \xNN
    with writing_output():
        sys.stdout.write(shown + "\n")


def _read_line() -> str:
    line = read_stdin(line=True)
    if not line:
        raise EOFError
    line = line.rstrip("\r\n")  # a CRLF file (Windows) or a terminal that sends CR: not in the prompt
    with writing_output():
        sys.stdout.write(PROMPT)
    _log(line)
    return line
