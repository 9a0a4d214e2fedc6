"""``cursor-agent-api run PROMPT``: one turn, shown live.

The prompt comes from the arguments, ``--prompt-file FILE`` (``-`` = stdin), or
standard input when it is not a terminal. Exit codes: 0 success, 1 failed turn
(the typed error's message and its remedy), 2 usage error. Ctrl-C, SIGTERM and SIGHUP
cancel the turn and save it (:mod:`.turns`); then the command dies from the signal, so
that a shell loop running it stops too (a shell's ``$?``: 130, 143, 129;
:mod:`cursor_agent_api.signal_exit`). A turn cancelled otherwise exits with 130.

``--output-format text|json|stream-json`` makes it a drop-in for ``agent -p``: the same
output, byte for byte where the agent wrote it (see :class:`~.views.AgentFormatView`).

Example:
    $ cursor-agent-api run --simulate --trust "list the files"
    $ echo "what is 2 + 2?" | cursor-agent-api run --simulate --trust --output json
    $ cursor-agent-api run -p --output-format json --yolo "what is 2 + 2?"   # as `agent -p`
"""

from __future__ import annotations

import codecs
import errno
import signal
import sys
from collections.abc import Collection
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.text import Text

from ..client import check_prompt
from ..config import AgentConfig
from ..errors import CursorAgentError
from ..protocol import AgentResult
from ..runtime.outcome import client_result_event
from ..sessions import ConversationSession
from ..signal_exit import SignalExit
from .console import CliUsageError, error_text, is_terminal, make_console, output_failure
from .options import SIMULATED_BANNER, agent_options, with_config
from .render import printable
from .saved_chats import SavedChats
from .steer import TerminalSteering, unattended_calls, unattended_plans
from .turns import open_recorder, run_turn
from .typed_path import TypedPath
from .views import AgentFormatView, JsonView, NdjsonView, make_view


def read_prompt(words: tuple[str, ...], prompt_file: Path | None) -> str:
    """The prompt from the words, the file, or stdin (``-`` alone, as a word or as the file,
    is stdin); ``click.UsageError`` when there is none, :class:`CliUsageError` (one line) when
    it cannot be read or is not UTF-8 text. A file's bytes are the prompt as they are, as
    stdin's: CRLF stays CRLF.

    Example:
        >>> import tempfile
        >>> with tempfile.NamedTemporaryFile(suffix=".txt") as f:
        ...     _ = f.write(b"line1\\r\\nline2"); f.flush()
        ...     read_prompt((), Path(f.name))
        'line1\\r\\nline2'
    """
    if words and prompt_file is not None:
        raise click.UsageError("give the prompt as arguments or with --prompt-file, not both")
    if words == ("-",):  # `run -`: stdin, as `replay -` and `--prompt-file -` read it
        prompt_file = Path("-")
    if prompt_file is not None:
        if str(prompt_file) == "-":
            if sys.stdin is None:  # closed (<&-): not an empty prompt, no prompt at all
                raise CliUsageError("cannot read the prompt from standard input: it is closed "
                                    "— give the prompt as arguments, with --prompt-file FILE, "
                                    "or pipe it in")
            return utf8_prompt(read_stdin(), "the prompt on stdin")
        shown = printable(str(prompt_file), one_line=True)  # typed: never obeyed, one line
        try:
            data = prompt_file.read_bytes()
        except OSError as exc:
            raise CliUsageError(f"cannot read --prompt-file {shown}: "
                                f"{exc.strerror or exc}") from None
        return utf8_prompt(data.decode("utf-8", "surrogateescape"),
                           f"the prompt in --prompt-file {shown}")
    if words:  # argv: a byte that is not UTF-8 arrives as a lone surrogate (surrogateescape)
        return utf8_prompt(as_utf8(" ".join(words), sys.getfilesystemencoding()), "the prompt")
    if sys.stdin is not None and not is_terminal(sys.stdin):  # None: stdin closed (<&-)
        return utf8_prompt(read_stdin(), "the prompt on stdin")
    raise click.UsageError("no prompt: give it as arguments, with --prompt-file, or on stdin")


def read_stdin(*, line: bool = False) -> str:
    """Standard input (one line with ``line``) decoded as UTF-8 whatever the locale, a byte
    that is not UTF-8 kept as a lone surrogate for :func:`utf8_prompt` to name (``""``: EOF)."""
    if sys.stdin is None:  # closed (<&-): nothing to read
        return ""
    raw = getattr(sys.stdin, "buffer", None)
    if raw is None:  # a text-only stdin (an embedding's): it decoded already
        return sys.stdin.readline() if line else sys.stdin.read()
    data = raw.readline() if line else raw.read()
    return str(data.decode("utf-8", "surrogateescape"))


def as_utf8(text: str, encoding: str | None) -> str:
    r"""``text`` as the terminal typed it: decoded in ``encoding``, the locale's, which in the
    C locale without Python's UTF-8 mode (``LC_ALL=C PYTHONUTF8=0``) is ASCII - there each
    byte of ``é`` is a lone surrogate - and read again as UTF-8 (what it is, on the terminals
    of today). Another encoding (UTF-8, Latin-1) decoded it already.

    Example:
        >>> as_utf8("caf\udcc3\udca9", "ascii"), as_utf8("caf\udce9", "ascii")
        ('café', 'caf\udce9')
        >>> as_utf8("café", "latin-1")
        'café'
    """
    if encoding is None or codecs.lookup(encoding).name != "ascii":
        return text
    return text.encode("ascii", "surrogateescape").decode("utf-8", "surrogateescape")


def utf8_prompt(text: str, what: str) -> str:
    r"""``text`` if it can be sent (UTF-8, not empty: :func:`~cursor_agent_api.client.check_prompt`),
    else :class:`CliUsageError` naming where.

    Example:
        >>> utf8_prompt("caf\udce9", "the prompt")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        cursor_agent_api.cli.console.CliUsageError: the prompt is not UTF-8 text: character 3 ...
    """
    try:
        check_prompt(text)
    except ValueError as exc:
        raise CliUsageError(str(exc).replace("the prompt", what, 1)) from None
    return text


def load_session(config: AgentConfig, saved: SavedChats,
                 given: Collection[str] = ()) -> ConversationSession:
    """A session for ``config``: the saved chat when resuming one we know, else a new one.

    A saved chat runs in its saved workspace with its saved model, unless ``given`` names
    the model (``--model`` given on the command line wins; another ``--workspace`` was
    refused: :func:`~.options.resumed_workspace`).

    :class:`~.saved_chats.DamagedChatError` (a ``CursorAgentError``) if that chat's file
    cannot be read, is not a session or holds another chat (a copy), or is not a file.
    """
    if config.resume and saved.exists(config.resume):
        return saved.load(config.resume, config, keep=given)
    return ConversationSession(config, session_id=config.resume)


@click.command()
@click.argument("words", nargs=-1)
@click.option("--prompt-file", type=TypedPath(dir_okay=False, path_type=Path), default=None,
              help="Read the prompt from this file ('-' = stdin).")
@click.option("--output-format", type=click.Choice(["text", "json", "stream-json"]),
              default=None,
              help="Print exactly what `agent --print --output-format …` prints: the final "
                   "answer; the agent's result object; the agent's event lines as it wrote "
                   "them. Errors go to stderr, once.")
@click.option("--print", "-p", "print_mode", is_flag=True,
              help="Accepted and ignored, as in `agent -p` (run always prints).")
@click.option("--api-key", "api_key", default=None, hidden=True, expose_value=True)
@agent_options
@with_config
def run(config: AgentConfig, given: frozenset[str], words: tuple[str, ...],
        prompt_file: Path | None, simulate: bool, record: Path | None, output: str,
        output_format: str | None, print_mode: bool, api_key: str | None) -> None:
    """Run one turn of the agent on PROMPT and show it as it happens.

    A drop-in for `agent -p`: the same flags (--output-format, --force/--yolo, --trust,
    --resume, --model, --workspace, -H, --stream-partial-output), the same output, and
    every turn saved (`sessions list`), typed errors, no process left behind.
    """
    if api_key is not None:
        raise CliUsageError("--api-key would show the key to every user of this machine (ps): "
                       "set CURSOR_API_KEY instead")
    if output_format is not None and output != "auto":
        raise CliUsageError("--output-format and --output: give one of them")
    saved = SavedChats()
    prompt = read_prompt(words, prompt_file)  # (an empty one refused there, by check_prompt)
    console = make_console(soft_wrap=output != "live")
    err = make_console(stderr=True)
    recorder = open_recorder(record)  # a bad --record is said first, alone
    if simulate:
        to_err = output in ("json", "ndjson") or output_format is not None
        try:
            (err if to_err else console).print(SIMULATED_BANNER, style="bold yellow")
        except OSError as exc:  # stdout cannot be written (a full disk): no turn runs unseen
            recorder.close()
            if exc.errno == errno.EPIPE:
                raise  # a closed pipe: click ends quietly
            err.print(Text(printable(f"✗ {output_failure(exc)}"), style="bold red"))
            sys.exit(1)
    recorder.begin()  # the turn starts: an earlier recording in the file goes
    view = (AgentFormatView(output_format, err, simulated=simulate) if output_format
            else make_view(output, console, err=err, simulated=simulate))
    config, steering = acp_steering(config, err)
    try:
        with load_session(config, saved, given) as session:
            outcome = run_turn(session, prompt, view, recorder, saved=saved, simulated=simulate,
                               steering=steering)
    except CursorAgentError as exc:  # the agent could not even start
        _stop(view)
        if isinstance(view, (JsonView, NdjsonView)):  # the one JSON answer, as every failure
            _not_started(view, exc)
        else:
            err.print(Text(f"✗ {printable(error_text(exc, simulated=simulate))}",
                           style="bold red"))
        sys.exit(1)
    except KeyboardInterrupt:
        _stop(view)
        raise SignalExit(signal.SIGINT) from None
    finally:
        recorder.close()
    if outcome.interrupted:  # by Ctrl-C (SIGTERM and SIGHUP: run_turn raised SignalExit)
        raise SignalExit(signal.SIGINT)
    sys.exit(outcome.exit_code)


def acp_steering(config: AgentConfig, err: Console) -> tuple[AgentConfig, TerminalSteering | None]:
    """``--acp``: the config with the callbacks of a person at the terminal, who reads the
    questions on ``err`` (stderr: stdout may be JSON, a pipe, a file) and answers on stdin —
    both must be terminals. Otherwise nothing can be asked: the rules decide
    (``--allow``/``--deny``, then reject: the first call rejected so is said in one line on
    ``err``, with the ``--allow`` rule that would allow it), and a plan is rejected (accepted
    with ``--force``), said in one line on ``err``.

    Example:
        >>> config, steering = acp_steering(AgentConfig(), make_console(stderr=True))
        >>> steering is None and config.on_plan is None  # print mode: nothing to steer
        True
    """
    if config.transport != "acp":
        return config, None
    if is_terminal(sys.stdin) and is_terminal(sys.stderr):
        steering = TerminalSteering(err)
        return config.with_overrides(**steering.fields(force=config.force_approve)), steering
    unattended: dict[str, Any] = {"on_plan": unattended_plans(err, force=config.force_approve)}
    if config.can_use_tool is None and config.permission_mode == "deny" and not config.force_approve:
        unattended["can_use_tool"] = unattended_calls(err)  # rejects as the mode, and says so
    return config.with_overrides(**unattended), None


def _not_started(view: JsonView | NdjsonView, exc: CursorAgentError) -> None:
    """What ``-o json`` and ``-o ndjson`` say when the agent could not start: the result
    object, the closing ``result:error`` event, as for any failed turn (``error_type``
    ``AgentNotFoundError``). A closed pipe is click's to end quietly."""
    result = AgentResult(success=False, result="", session_id=None, error=str(exc),
                         exception=exc, exit_code=exc.exit_code)
    view.handle(client_result_event(exc), ())
    view.finish(result, continue_hint="")


def _stop(view: Any) -> None:
    stop = getattr(view, "stop", None)
    if stop is not None:
        stop()
