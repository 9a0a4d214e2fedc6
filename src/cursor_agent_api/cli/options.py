"""The options ``run`` and ``chat`` share, and the :class:`AgentConfig` they build.

The options mirror :class:`~cursor_agent_api.config.AgentConfig`. The API key is
never an option (it would be visible in ``ps``): set ``CURSOR_API_KEY``.

Example:
    $ cursor-agent-api run --simulate --trust --model sonnet-4.6 --timeout 600 "list the files"
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ..config import MODEL_ID_MAX_LENGTH, AgentConfig, is_chat_id, model_id_problem
from .console import CliUsageError, current_folder
from .render import printable
from .runner_options import Seconds, check_simulate_or_binary
from .saved_chats import AmbiguousChatError, ChatLookupError, SavedChats
from .typed_path import TypedPath

F = TypeVar("F", bound=Callable[..., Any])

SIMULATED_BANNER = (
    "⚠ SIMULATED — running the bundled simulator (cursor-agent-sim), not Cursor's agent"
)


def agent_options(func: F) -> F:
    """Decorate ``run`` with the agent options (see the module docstring)."""
    return _agent_options(func, chat=False)


def chat_agent_options(func: F) -> F:
    """Decorate ``chat`` with the agent options: the same, but ``--output`` shows turns to a
    person only (``auto``, ``live``, ``text``: JSON is ``run``'s) and ``chat`` has no
    ``--output-format``.

    Example:
        >>> @click.command()
        ... @chat_agent_options
        ... def cmd(**options: object) -> None: ...
        >>> [list(o.type.choices) for o in cmd.params if o.name == "output"]
        [['auto', 'live', 'text']]
    """
    return _agent_options(func, chat=True)


def _agent_options(func: F, *, chat: bool) -> F:
    if chat:
        outputs = ["auto", "live", "text"]
        output_help = "live view on a terminal, else plain text; text: plain text always."
        partial_help = "Stream the text token by token (default: on)."
    else:
        outputs = ["auto", "live", "text", "json", "ndjson"]
        output_help = ("live view on a terminal, else plain text; json: one final result; "
                       "ndjson: the normalized events as they arrive.")
        partial_help = ("Stream the text token by token (default: on, except with "
                        "--output-format, where it is off as in `agent --print`).")
    options = [
        click.option("--workspace", "-w", type=TypedPath(file_okay=False, path_type=Path),
                     default=None, help="Directory the agent works in (default: the current one)."),
        click.option("--model", "-m", default=None, help="Model slug, e.g. sonnet-4.6."),
        click.option("--force", "-f", "--yolo", "force_approve", is_flag=True,
                     help="Approve every tool call (shell commands included)."),
        click.option("--trust", is_flag=True, help="Trust the workspace (headless runs need it)."),
        click.option("--approve-mcps", is_flag=True, help="Approve MCP servers."),
        click.option("--resume", "resume", default=None, metavar="CHAT_ID",
                     help="Continue this chat."),
        click.option("--timeout", type=Seconds(min=0, min_open=True), default=None,
                     help="Seconds for the whole turn (default: none)."),
        click.option("--idle-timeout", type=Seconds(min=0, min_open=True), default=None,
                     help="Seconds without any output before giving up (default: off)."),
        click.option("--partial/--no-partial", default=None, help=partial_help),
        click.option("--stream-partial-output", is_flag=True,
                     help="The same as --partial (the agent's own name for it)."),
        click.option("--max-line-bytes", type=click.IntRange(min=1), default=None,
                     help="Longest output line accepted from the agent (default: 64 MiB)."),
        click.option("--header", "-H", "headers", multiple=True, metavar="'NAME: VALUE'",
                     help="Extra request header (repeatable)."),
        click.option("--agent-binary", default=None, metavar="PATH",
                     help="The agent executable (default: agent, else cursor-agent)."),
        click.option("--acp", is_flag=True,
                     help="Drive the agent over ACP (`agent acp`): approve or reject each tool "
                          "call, answer its questions, cancel and keep the chat (docs/acp.md)."),
        click.option("--allow", "allowed_tools", multiple=True, metavar="RULE",
                     help="--acp: allow these calls without asking: Shell(ls), Write(src/**), "
                          "Mcp(server:tool) (repeatable)."),
        click.option("--deny", "denied_tools", multiple=True, metavar="RULE",
                     help="--acp: reject these calls without asking (repeatable; wins over --allow)."),
        click.option("--simulate", is_flag=True,
                     help="Run the bundled simulator instead of Cursor's agent."),
        click.option("--record", type=TypedPath(dir_okay=False, path_type=Path), default=None,
                     help="Write the agent's stream-json lines, as received, to this file "
                          "(with --acp: the events mapped from ACP); `replay` reads it."),
        click.option("--output", "-o", "output", type=click.Choice(outputs),
                     default="auto", show_default=True, help=output_help),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def build_config(
    *,
    workspace: Path | None,
    model: str | None,
    force_approve: bool,
    trust: bool,
    approve_mcps: bool,
    resume: str | None,
    timeout: float | None,
    idle_timeout: float | None,
    partial: bool,
    headers: tuple[str, ...],
    agent_binary: str | None,
    simulate: bool,
    max_line_bytes: int | None = None,
    acp: bool = False,
    allowed_tools: tuple[str, ...] = (),
    denied_tools: tuple[str, ...] = (),
) -> AgentConfig:
    """The :class:`AgentConfig` for the options; ``click.UsageError`` for a bad value.

    Example:
        >>> cfg = build_config(workspace=None, model=None, force_approve=False, trust=True,
        ...     approve_mcps=False, resume=None, timeout=None, idle_timeout=None, partial=True,
        ...     headers=(), agent_binary=None, simulate=False)
        >>> cfg.trust, cfg.stream_partial_output
        (True, True)
    """
    fields: dict[str, Any] = {
        "workspace": str((workspace or current_folder()).resolve()),
        "model": model,
        "force_approve": force_approve,
        "trust": trust,
        "approve_mcps": approve_mcps,
        "resume": resume,
        "timeout": timeout,
        "idle_timeout": idle_timeout,
        "stream_partial_output": partial,
        "headers": list(headers),
    }
    if max_line_bytes is not None:
        fields["max_line_bytes"] = max_line_bytes
    if acp and force_approve and denied_tools:
        raise CliUsageError("--force and --deny cannot go together with --acp: with --force the "
                            "agent runs every tool call without asking, so --deny would never "
                            "be consulted (a denied call would run); drop --force to steer")
    if acp:
        fields.update(transport="acp", allowed_tools=list(allowed_tools),
                      denied_tools=list(denied_tools))
    elif allowed_tools or denied_tools:
        raise click.UsageError("--allow and --deny need --acp (print mode asks nothing: "
                               "use --force there)")
    check_simulate_or_binary(simulate, agent_binary)
    if simulate:
        from ..sim.locate import sim_binary

        try:
            fields["agent_binary"] = sim_binary()
        except FileNotFoundError as exc:
            raise click.UsageError(str(exc)) from None
    elif agent_binary:
        fields["agent_binary"] = agent_binary
    if workspace is not None and not workspace.is_dir():
        raise click.UsageError(f"--workspace {printable(str(workspace), one_line=True)}: "
                               "no such directory")
    problem = None if model is None else model_id_problem(model)
    if model is not None and problem is not None:
        if not model.strip():
            problem = "is empty (a variable that was not set?)"
        shown = (repr(model) if len(model) <= MODEL_ID_MAX_LENGTH  # past it: the length is news
                 else f"{model[:40]!r}…")
        raise click.BadParameter(f"{shown} {problem}: pick a slug from `agent models`",
                                 param_hint="'--model'")
    filled = {}  # the fields the command line filled in itself, and where it took them
    if workspace is None:
        filled["workspace"] = ("the current folder is the workspace when --workspace is not "
                               "given, and it {why}: cd to another folder, or pass --workspace")
    if simulate:
        filled["agent_binary"] = "the simulator's path (--simulate) {why}"
    try:
        return AgentConfig(**fields)
    except (TypeError, ValueError) as exc:
        raise in_cli_words(exc, filled) from None


OPTION_OF_FIELD = {
    "workspace": "--workspace", "model": "--model", "headers": "--header",
    "agent_binary": "--agent-binary", "allowed_tools": "--allow", "denied_tools": "--deny",
    "max_line_bytes": "--max-line-bytes", "timeout": "--timeout",
    "idle_timeout": "--idle-timeout", "resume": "--resume",
}
"""The option of ``run`` and ``chat`` that sets each :class:`AgentConfig` field."""

_FIELD_NAMED = re.compile(r"AgentConfig\.(\w+)(?:\[\d+\])?(?: items)?:? ")


def in_cli_words(exc: Exception, filled: dict[str, str] | None = None) -> click.UsageError:
    """:class:`AgentConfig`'s refusal of a value (``AgentConfig.FIELD why``) as the usage error
    of the option the user typed: click's ``Invalid value for '--OPTION': why``. A field the
    command line filled in itself (``filled``: its sentence, with ``{why}``) is not blamed on
    an option the user did not give.

    Example:
        >>> try:
        ...     AgentConfig(headers=["no colon"])
        ... except ValueError as exc:
        ...     print(in_cli_words(exc).format_message())
        Invalid value for '--header': must look like 'Name: Value', got one starting 'no'
    """
    message = str(exc)
    named = _FIELD_NAMED.match(message)
    if named is None or named.group(1) not in OPTION_OF_FIELD:
        return click.UsageError(message)
    if filled and named.group(1) in filled:
        return click.UsageError(filled[named.group(1)].format(why=message[named.end():]))
    return click.BadParameter(message[named.end():],
                              param_hint=f"'{OPTION_OF_FIELD[named.group(1)]}'")


def resolve_resume(resume: str | None, saved: SavedChats | None = None) -> str | None:
    """The chat id that ``--resume`` names, checked before any prompt is read.

    A saved chat's id or a unique prefix of it gives that chat; an id this tool never saved
    is passed on only if it is a chat id (a UUID: the agent's own chats). Anything else is a
    :class:`CliUsageError` (exit 2) that names the problem.

    Example:
        >>> import tempfile
        >>> empty = SavedChats(Path(tempfile.mkdtemp()))
        >>> resolve_resume("8b72ae6d-ab42-4854-991e-6ecf580e66c2", empty)
        '8b72ae6d-ab42-4854-991e-6ecf580e66c2'
        >>> resolve_resume("--force", empty)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        cursor_agent_api.cli.console.CliUsageError: --resume --force: no saved chat matches it, ...
        >>> resolve_resume("", empty)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        cursor_agent_api.cli.console.CliUsageError: --resume needs a chat id: it was given an empty one ...
    """
    if resume is None:
        return None
    if not resume.strip():
        raise CliUsageError("--resume needs a chat id: it was given an empty one (a variable "
                            "that was not set?) — see `cursor-agent-api sessions list`")
    try:
        return (saved or SavedChats()).resolve(resume)
    except AmbiguousChatError as exc:
        raise CliUsageError(f"--resume {exc}") from None
    except ChatLookupError:
        if not is_chat_id(resume):
            raise CliUsageError(
                f"--resume {printable(resume, one_line=True)}: no saved chat matches it, "
                "and it is not a chat id "
                "(a UUID) — see `cursor-agent-api sessions list`") from None
        return resume  # a chat of the agent's own, not saved here


def resumed_transport(resume: str | None, acp: bool, saved: SavedChats | None = None) -> bool:
    """Whether the turn runs over ACP: ``--acp``, or the saved chat that ``--resume`` names
    ran over ACP. The agent loads a chat only over the transport that made it, so a saved
    chat keeps its own, and ``--acp`` on a chat saved in print mode is a
    :class:`CliUsageError` (exit 2) saying what to do. (Print mode has no flag: a command
    line without ``--acp`` names no transport.) A chat not saved here (the agent's own, by
    its id) runs as the command line says.

    Example:
        >>> import tempfile
        >>> from ..sessions import ConversationSession
        >>> chats, chat = SavedChats(Path(tempfile.mkdtemp())), "8b72ae6d-ab42-4854-991e-6ecf580e66c2"
        >>> _ = chats.save(ConversationSession(AgentConfig(transport="acp"), session_id=chat))
        >>> resumed_transport(chat, False, chats), resumed_transport(None, False, chats)
        (True, False)
        >>> _ = chats.save(ConversationSession(AgentConfig(), session_id=chat))
        >>> resumed_transport(chat, True, chats)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        cursor_agent_api.cli.console.CliUsageError: --resume 8b72...: this chat was saved in print mode, ...
    """
    if resume is None:
        return acp
    recorded = (saved or SavedChats()).transport(resume)
    if recorded == "acp":
        return True
    if recorded == "print" and acp:
        raise CliUsageError(
            f"--resume {resume}: this chat was saved in print mode, and the agent cannot "
            "load it over ACP (--acp): continue it without --acp, or start a new chat with "
            "--acp and without --resume")
    return acp


def resumed_agent(resume: str | None, agent_binary: str, saved: SavedChats | None = None) -> None:
    """Refuse to continue a saved chat on another agent than the one that made it: the
    simulator (``--simulate``) and Cursor's agent keep their chats apart (README "Where chats
    live"), so the other has no such chat and would start afresh under its id, the saved file
    then mixing both. A :class:`CliUsageError` (exit 2) saying what to do, before any prompt
    is read, as :func:`resumed_transport` refuses ``--acp``. A chat not saved here, or whose
    file records no agent (saved before settings were), runs as the command line says.

    Example:
        >>> import tempfile
        >>> from ..sessions import ConversationSession
        >>> chats, chat = SavedChats(Path(tempfile.mkdtemp())), "8b72ae6d-ab42-4854-991e-6ecf580e66c2"
        >>> sim = AgentConfig(agent_binary="/venv/bin/cursor-agent-sim")
        >>> _ = chats.save(ConversationSession(sim, session_id=chat))
        >>> resumed_agent(chat, "/venv/bin/cursor-agent-sim", chats)  # --simulate again: fine
        >>> resumed_agent(chat, "agent", chats)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        cursor_agent_api.cli.console.CliUsageError: --resume 8b72...: this chat was made with --simulate, ...
    """
    from ..sim.locate import is_simulator

    data = None if resume is None else (saved or SavedChats()).recorded(resume)
    made_by = (data or {}).get("config", {}).get("agent_binary")  # (a dict: the reader checked)
    if not isinstance(made_by, str) or is_simulator(made_by) == is_simulator(agent_binary):
        return
    if is_simulator(made_by):
        raise CliUsageError(
            f"--resume {resume}: this chat was made with --simulate, and Cursor's agent keeps "
            "its chats apart from the simulator's: it has no such chat, and would start "
            "afresh without the conversation — continue it with --simulate, or start a new "
            "chat without --resume")
    raise CliUsageError(
        f"--resume {resume}: this chat was made with Cursor's agent, and the simulator keeps "
        "its chats apart from the agent's: it has no such chat, and would start afresh "
        "without the conversation — continue it without --simulate, or start a new chat "
        "with --simulate and without --resume")


def resumed_workspace(resume: str | None, workspace: Path | None,
                      saved: SavedChats | None = None) -> None:
    """Refuse ``--workspace`` naming another folder than the saved chat's: the agent keeps
    chats per folder (docs/client.md), so there it would find no such chat and start afresh
    under its id, and the saved chat would move there. A :class:`CliUsageError` (exit 2)
    naming both folders and what to do, before any prompt is read, as a session refuses a
    turn in another folder (``ValueError``). The chat's own folder, however written, runs.

    Example:
        >>> import tempfile
        >>> from ..sessions import ConversationSession
        >>> chats, chat = SavedChats(Path(tempfile.mkdtemp())), "8b72ae6d-ab42-4854-991e-6ecf580e66c2"
        >>> _ = chats.save(ConversationSession(AgentConfig(workspace="/tmp"), session_id=chat))
        >>> resumed_workspace(chat, Path("/tmp/."), chats)  # its own folder
        >>> resumed_workspace(chat, Path("/"), chats)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        cursor_agent_api.cli.console.CliUsageError: --resume 8b72... with --workspace / refused: ...
    """
    if resume is None or workspace is None:
        return
    data = (saved or SavedChats()).recorded(resume)
    folder = (data or {}).get("workspace")
    try:
        if not isinstance(folder, str) or os.path.realpath(folder) == os.path.realpath(workspace):
            return
    except ValueError:  # a NUL: no path (a damaged file, which loading it reports)
        return
    raise CliUsageError(
        f"--resume {resume} with --workspace {printable(str(workspace), one_line=True)} "
        f"refused: this chat lives in {printable(folder, one_line=True)}, and the agent keeps "
        "chats per folder, so there it would start afresh without the conversation — leave "
        "--workspace out (the chat runs in its own folder from anywhere), or start a new chat "
        "there without --resume")


RESUME_OVERRIDABLE = ("model",)
"""The settings a saved chat keeps that ``--resume`` takes unless given on the command line
(its workspace it always keeps: :func:`resumed_workspace`)."""


def with_config(func: Callable[..., Any]) -> Callable[..., Any]:
    """Turn the agent options of a command into one ``config`` argument, and ``given``: which
    of :data:`RESUME_OVERRIDABLE` were given on the command line."""

    @functools.wraps(func)
    def wrapper(**kwargs: Any) -> Any:
        keys = ("workspace", "model", "force_approve", "trust", "approve_mcps", "resume",
                "timeout", "idle_timeout", "headers", "agent_binary", "max_line_bytes", "acp",
                "allowed_tools", "denied_tools")
        config_args = {k: kwargs.pop(k) for k in keys}
        partial, agent_name = kwargs.pop("partial"), kwargs.pop("stream_partial_output")
        # `agent --print` streams no deltas unless asked: the drop-in (--output-format) neither.
        drop_in = kwargs.get("output_format") is not None
        config_args["partial"] = agent_name or (partial if partial is not None else not drop_in)
        # a bad id fails now, before any prompt is read, in the command line's words
        config_args["resume"] = resolve_resume(config_args["resume"])
        # a saved chat goes on over its own transport (--acp on a print-mode one: refused)
        config_args["acp"] = resumed_transport(config_args["resume"], config_args["acp"])
        # --resume of a saved chat: runs in its own folder (another --workspace: refused)
        resumed_workspace(config_args["resume"], config_args["workspace"])
        # a model given here wins over the saved one, one not given takes it (build_config
        # fills the workspace with the current folder regardless: the saved one is used)
        given = frozenset(k for k in RESUME_OVERRIDABLE if config_args[k] is not None)
        config = build_config(**config_args, simulate=kwargs["simulate"])
        # a saved chat goes on with the agent that made it (the simulator's chats are apart)
        resumed_agent(config.resume, config.agent_binary)
        return func(config=config, given=given, **kwargs)

    return wrapper


def continue_command(chat_id: str, simulated: bool, workspace: str | None, *,
                     acp: bool = False) -> str:
    """The exact command that continues a chat.

    Example:
        >>> continue_command("abc", True, None)
        'cursor-agent-api chat --resume abc --simulate'
    """
    parts = ["cursor-agent-api", "chat", "--resume", _quote(chat_id)]
    if workspace and os.path.realpath(workspace) != os.path.realpath(current_folder()):
        parts += ["--workspace", _quote(workspace)]
    if acp:
        parts.append("--acp")
    if simulated:
        parts.append("--simulate")
    return " ".join(parts)


def _quote(text: str) -> str:
    r"""``text`` as one shell word that pastes back as ``text``: :func:`shlex.quote`'s, or,
    when it holds a character a terminal would obey (an escape, a tab, a bidi control, a byte
    that was not text), ``"$(printf '…')"`` with each byte that is not printable ASCII
    written as printf's octal escape, so that the line shown is inert. Any POSIX shell reads
    it (bash, dash, zsh, ksh); ``$'…'`` is not one (dash takes its ``\'`` as the end of the
    quoting: a name could then run a command). A name ending with a newline would lose it
    (the shell's command substitution drops it); ``--workspace`` refuses newlines anyway.

    Example:
        >>> print(_quote("/tmp/my ws"), _quote("/tmp/a\\b"))
        '/tmp/my ws' '/tmp/a\b'
        >>> print(_quote("/tmp/a\tb\x1b[2J\u202e'\\c\udce9 100%"))
        "$(printf '/tmp/a\011b\033[2J\342\200\256'\''\\c\351 100%%')"
    """
    import shlex

    if printable(text) == text and "\n" not in text and "\t" not in text:
        return shlex.quote(text)
    body = "".join(_printf_byte(b) for b in os.fsencode(text))
    if body.startswith("-"):  # (printf would take it for an option)
        body = "\\055" + body[1:]
    return "\"$(printf '" + body + "')\""


def _printf_byte(byte: int) -> str:
    """One byte of a name inside ``printf '…'``: printable ASCII as itself (``'``, ``\\`` and
    ``%`` escaped), any other as its octal escape."""
    char = chr(byte)
    escaped = {"'": "'\\''", "\\": "\\\\", "%": "%%"}.get(char)
    if escaped is not None:
        return escaped
    return char if 0x20 <= byte < 0x7F else f"\\{byte:03o}"
