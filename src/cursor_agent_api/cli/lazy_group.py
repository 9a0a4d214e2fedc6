"""A click group that imports a subcommand's module only when that subcommand is used.

The command line's start is mostly imports (the client, the runtime, rich, markdown-it, the
server): a command that imported every subcommand's module paid for all of them on each
start, ``--help`` included. :class:`LazyGroup` knows each subcommand by the module that
defines it and the one line its listing shows, so ``--help`` imports none of them and
``replay`` imports only ``replay``'s.

Example:
    >>> import click
    >>> @click.group(cls=LazyGroup, lazy_commands={
    ...     "replay": LazyCommand("cursor_agent_api.cli.replay:replay", "Render a recording.")})
    ... def tool() -> None:
    ...     "A tool."
    >>> tool.list_commands(click.Context(tool))
    ['replay']
    >>> tool.get_command(click.Context(tool), "replay").params[0].name
    'file'
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, NamedTuple

import click


class LazyCommand(NamedTuple):
    """Where a subcommand lives (``"package.module:attribute"``) and its line in the
    group's ``--help`` (the first sentence of its own help, which the tests compare)."""

    target: str
    short_help: str


class LazyGroup(click.Group):
    """A :class:`click.Group` whose ``lazy_commands`` are imported on first use: when the
    subcommand runs, or its own ``--help`` is asked for. The group's ``--help`` lists them
    from their :class:`LazyCommand` lines without importing them."""

    def __init__(self, *args: Any, lazy_commands: Mapping[str, LazyCommand] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands = dict(lazy_commands or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy_commands and cmd_name not in self.commands:
            self.add_command(self._load(cmd_name), cmd_name)
        return super().get_command(ctx, cmd_name)

    def _load(self, cmd_name: str) -> click.Command:
        module_name, _, attribute = self.lazy_commands[cmd_name].target.partition(":")
        command = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{module_name}:{attribute} is not a click command")
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The ``Commands:`` section, as click writes it, with the lazy subcommands' lines
        taken from their :class:`LazyCommand` (so listing them imports nothing)."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            if name in self.lazy_commands and name not in self.commands:
                # a stand-in with the line: click shortens it as it would the real one's
                command: click.Command | None = click.Command(
                    name, help=self.lazy_commands[name].short_help)
            else:
                command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

