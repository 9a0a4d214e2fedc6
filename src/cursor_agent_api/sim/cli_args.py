"""The command line of the real CLI (PROTOCOL.md §1), parsed into :class:`Options`.

Flags: ``-p/--print``, ``--output-format text|json|stream-json``,
``--stream-partial-output``, ``--resume ID``, ``--model SLUG``, ``--workspace DIR``,
``-f/--force/--yolo``, ``--trust``, ``--approve-mcps``, ``--api-key KEY``, ``--mode agent|plan|ask``
and ``--plan`` (print mode only: ignored under ``acp``, ACP.md §1), ``--auth-token T``,
``-e/--endpoint URL``, ``-k/--insecure`` and ``--allowed-tools`` (accepted, ignored but the token),
``-H/--header 'Name: Value'`` (repeatable), ``-v/--version``, ``--list-models``; the prompt
as positional words. Subcommands: ``create-chat``, ``status``/``whoami``, ``models``,
``login``, ``logout`` (and ``ls``/``resume``, which need a terminal). An unknown option is
an error (exit 1, ``error: unknown option '--x'``), as the real CLI's.

Example:
    >>> o = parse_args(["-p", "--output-format", "stream-json", "-H", "X-A: 1", "list", "files"])
    >>> o.print_mode, o.output_format, o.headers, o.prompt
    (True, 'stream-json', ['X-A: 1'], 'list files')
    >>> parse_args(["create-chat"]).command
    'create-chat'
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from typing import NoReturn

SUBCOMMANDS = frozenset(
    {"create-chat", "status", "whoami", "models", "login", "logout", "ls", "resume", "mcp", "acp", "update"}
)


MODES = ("agent", "plan", "ask")
"""``--mode``'s values (ACP.md §4's session modes); ``--plan`` is ``--mode plan``."""


class UsageError(Exception):
    """The command line is wrong; the message is what to print (exit 1). See :func:`parse_args`."""


@dataclass(slots=True)
class Options:
    """What the command line asked for.

    Example:
        >>> Options(prompt="hi").output_format
        'text'
    """

    command: str | None = None
    prompt: str | None = None
    print_mode: bool = False
    output_format: str = "text"
    stream_partial_output: bool = False
    resume: str | None = None
    model: str | None = None
    workspace: str | None = None
    force: bool = False
    trust: bool = False
    approve_mcps: bool = False
    api_key: str | None = None
    mode: str = "agent"
    auth_token: str | None = None
    headers: list[str] = field(default_factory=list)
    version: bool = False
    list_models: bool = False
    command_args: list[str] = field(default_factory=list)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        if message.startswith("unrecognized arguments:"):
            first = message.split(":", 1)[1].split()[0]
            raise UsageError(f"error: unknown option '{first}'")
        raise UsageError(f"error: {message}")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (also gives ``--help``).

    Example:
        >>> build_parser().prog
        'cursor-agent-sim'
    """
    p = _Parser(
        prog="cursor-agent-sim",
        description="A faithful stand-in for the Cursor Agent CLI (`agent`), for tests and demos.",
        allow_abbrev=False,
        epilog=(
            "Subcommands: create-chat, status (whoami), models, login, logout, acp. "
            "Environment: CURSOR_AGENT_SIM_FAULT, CURSOR_AGENT_SIM_SCRIPT, CURSOR_AGENT_SIM_SPEED, "
            "CURSOR_AGENT_SIM_DELAY, CURSOR_AGENT_SIM_SEED, CURSOR_CONFIG_DIR, CURSOR_API_KEY."
        ),
    )
    p.add_argument("-p", "--print", dest="print_mode", action="store_true", help="headless: print the answer")
    p.add_argument("--output-format", choices=("text", "json", "stream-json"), default="text")
    p.add_argument("--stream-partial-output", action="store_true", help="token-level assistant deltas")
    p.add_argument("--resume", metavar="CHAT_ID", help="continue a chat")
    p.add_argument("--model", metavar="SLUG")
    p.add_argument("--workspace", metavar="DIR")
    p.add_argument(
        "-f", "--force", "--yolo", dest="force", action="store_true", help="approve every tool call"
    )
    p.add_argument("--trust", action="store_true", help="trust the workspace (recorded in the config dir)")
    p.add_argument("--approve-mcps", action="store_true")
    p.add_argument("--api-key", metavar="KEY")
    p.add_argument(
        "--mode", choices=MODES, default="agent", help="the turn's mode (ignored under acp: session/set_mode)"
    )
    p.add_argument("--plan", dest="mode", action="store_const", const="plan", help="--mode plan")
    # the real CLI's other global flags: accepted (before ``acp`` too) and ignored
    p.add_argument("--auth-token", metavar="TOKEN")
    p.add_argument("-e", "--endpoint", metavar="URL")
    p.add_argument("-k", "--insecure", action="store_true")
    p.add_argument("--allowed-tools", action="append", default=[], metavar="TOOLS")
    p.add_argument("-H", "--header", dest="headers", action="append", default=[], metavar="'Name: Value'")
    p.add_argument("-v", "--version", action="store_true")
    p.add_argument("--list-models", action="store_true")
    p.add_argument("words", nargs="*", metavar="prompt")
    return p


def parse_args(argv: list[str] | None = None) -> Options:
    """Parse ``argv`` (default ``sys.argv[1:]``); raise :class:`UsageError` when it is wrong.

    Example:
        >>> try:
        ...     parse_args(["--bogus"])
        ... except UsageError as e:
        ...     print(e)
        error: unknown option '--bogus'
    """
    args = sys.argv[1:] if argv is None else argv
    ns = build_parser().parse_intermixed_args(args)
    opts = Options(
        print_mode=ns.print_mode,
        output_format=ns.output_format,
        stream_partial_output=ns.stream_partial_output,
        resume=ns.resume,
        model=ns.model,
        workspace=ns.workspace,
        force=ns.force,
        trust=ns.trust,
        approve_mcps=ns.approve_mcps,
        api_key=ns.api_key,
        mode=ns.mode,
        auth_token=ns.auth_token,
        headers=list(ns.headers),
        version=ns.version,
        list_models=ns.list_models,
    )
    for header in opts.headers:
        name, sep, _ = header.partition(":")
        if not sep or not name.strip():
            raise UsageError(f"error: invalid header '{header}' (expected 'Name: Value')")
    words: list[str] = list(ns.words)
    if words and words[0] in SUBCOMMANDS:
        opts.command = words[0]
        opts.command_args = words[1:]
    elif words:
        opts.prompt = " ".join(words)
    return opts
