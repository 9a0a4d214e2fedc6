"""``cursor-agent-api run PROMPT``: one turn, shown live.

The prompt comes from the arguments, ``--prompt-file FILE`` (``-`` = stdin), or
standard input when it is not a terminal. Exit codes: 0 success, 1 failed turn
(the typed error's message and its remedy), 2 usage error, 130 Ctrl-C.

Example:
    $ cursor-agent-api run --simulate --trust "list the files"
    $ echo "what is 2 + 2?" | cursor-agent-api run --simulate --trust --output json
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from ..config import AgentConfig
from ..errors import CursorAgentError
from ..sessions import ConversationSession
from .options import SIMULATED_BANNER, agent_options, with_config
from .saved_chats import SavedChats
from .turns import Recorder, run_turn
from .views import make_view


def read_prompt(words: tuple[str, ...], prompt_file: Path | None) -> str:
    """The prompt from the words, the file, or stdin; ``click.UsageError`` when there is none."""
    if words and prompt_file is not None:
        raise click.UsageError("give the prompt as arguments or with --prompt-file, not both")
    if prompt_file is not None:
        try:
            if str(prompt_file) == "-":
                return sys.stdin.read()
            return prompt_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise click.UsageError(f"cannot read --prompt-file {prompt_file}: {exc}") from None
    if words:
        return " ".join(words)
    if not sys.stdin.isatty():
        return sys.stdin.read()
    raise click.UsageError("no prompt: give it as arguments, with --prompt-file, or on stdin")


def load_session(config: AgentConfig, saved: SavedChats) -> ConversationSession:
    """A session for ``config``: the saved chat when resuming one we know, else a new one."""
    if config.resume and saved.exists(config.resume):
        session = ConversationSession.load(saved.path(config.resume), config)
        if session.session_id != config.resume:  # the file was renamed by hand
            return ConversationSession(config, session_id=config.resume)
        return session
    return ConversationSession(config, session_id=config.resume)


@click.command()
@click.argument("words", nargs=-1)
@click.option("--prompt-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Read the prompt from this file ('-' = stdin).")
@agent_options
@with_config
def run(config: AgentConfig, words: tuple[str, ...], prompt_file: Path | None, simulate: bool,
        record: Path | None, output: str) -> None:
    """Run one turn of the agent on PROMPT and show it as it happens."""
    prompt = read_prompt(words, prompt_file)
    if not prompt.strip():
        raise click.UsageError("the prompt is empty")
    console = Console(highlight=False, soft_wrap=output != "live")
    err = Console(stderr=True, highlight=False)
    if simulate:
        (err if output in ("json", "ndjson") else console).print(SIMULATED_BANNER,
                                                               style="bold yellow")
    saved = SavedChats()
    try:
        recorder = Recorder(record)
    except OSError as exc:
        raise click.UsageError(f"cannot write --record {record}: {exc.strerror}") from None
    view = make_view(output, console)
    try:
        with load_session(config, saved) as session:
            outcome = run_turn(session, prompt, view, recorder, saved=saved, simulated=simulate)
    except CursorAgentError as exc:  # the agent could not even start
        _stop(view)
        err.print(f"[bold red]✗[/] {exc}", highlight=False)
        sys.exit(1)
    except KeyboardInterrupt:
        _stop(view)
        sys.exit(130)
    finally:
        recorder.close()
    sys.exit(outcome.exit_code)


def _stop(view: Any) -> None:
    stop = getattr(view, "stop", None)
    if stop is not None:
        stop()
