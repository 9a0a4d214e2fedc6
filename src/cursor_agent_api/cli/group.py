"""The ``cursor-agent-api`` click group (:data:`main`, what ``cursor_agent_api.cli`` gives):
its subcommands, each in its own module, imported when used.

Example:
    >>> from click.testing import CliRunner
    >>> CliRunner().invoke(main, ["--version"]).output.startswith("cursor-agent-api, version")
    True
"""

from __future__ import annotations

import signal
from typing import Any

import click

from .. import __version__
from ..signal_exit import SignalExit
from .lazy_group import LazyCommand, LazyGroup

SUBCOMMANDS = {
    "chat": LazyCommand("cursor_agent_api.cli.chat:chat",
                        "Talk with the agent, turn after turn, on one chat."),
    "compact": LazyCommand("cursor_agent_api.cli.compact:compact",
                           "Give a SQLite database's free pages back (VACUUM); run it while the "
                           "server is stopped."),
    "replay": LazyCommand("cursor_agent_api.cli.replay:replay",
                          'Render a recorded stream-json FILE ("-" for standard input).'),
    "run": LazyCommand("cursor_agent_api.cli.run:run",
                       "Run one turn of the agent on PROMPT and show it as it happens."),
    "serve": LazyCommand("cursor_agent_api.cli.serve:serve",
                         "Serve agents over HTTP and WebSocket, with a durable, replayable "
                         "event log."),
    "sessions": LazyCommand("cursor_agent_api.cli.sessions_cmd:sessions",
                            "The chats this tool has saved (run and chat save every turn)."),
    "worker": LazyCommand("cursor_agent_api.cli.worker:worker",
                          "Run agents for API servers started with 'serve --dispatch queue'."),
}
"""Each subcommand: the module that defines it, imported only when it is used (so ``--help``
and each subcommand pay only for their own imports), and its line in ``--help``."""


class CommandLine(LazyGroup):
    """The group: a Ctrl-C that no subcommand handled — while ``run`` still reads its prompt
    from a pipe, while a module is imported — ends the command as every Ctrl-C does (click
    would say "Aborted!" and exit 1): with :class:`~cursor_agent_api.signal_exit.SignalExit` (status 130).

    ``main()`` is a function call, whoever makes it: a command stopped by a signal it
    received ends it with that ``SystemExit`` (status 128 + N), which its caller gets (a
    program that calls it in a ``try``, click's ``CliRunner``). Only the program's entry
    points — the console script (:mod:`cursor_agent_api.console_script`) and ``python -m
    cursor_agent_api.cli`` — then die from the signal (:func:`~cursor_agent_api.signal_exit.exit_by_signal`),
    so that a shell loop running the command stops too.
    """

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo(err=True)  # the line the ^C was typed on ends
            raise SignalExit(signal.SIGINT) from None


@click.group(cls=CommandLine, lazy_commands=SUBCOMMANDS,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="cursor-agent-api")
def main() -> None:
    """Drive Cursor's coding agent: run it, chat with it, replay what it did."""
    from .console import standard_output

    standard_output()  # started with stdout closed: each write says so in one line
