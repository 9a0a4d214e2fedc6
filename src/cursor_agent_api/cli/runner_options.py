"""The options ``serve`` and ``worker`` share: how the agents they run are started.

Both commands run agents on this machine (``serve`` in its own process, ``worker`` for
``serve --dispatch queue``), so the options that set up an agent's process are defined
once, here, with the same names, help and checks: the workspace roots, the simulator, the
binary, the agent's environment, the turn's time limits and the log level.

Example:
    >>> import click
    >>> @click.command()
    ... @runner_options
    ... def cmd(**options: object) -> None:
    ...     click.echo(sorted(options))
    >>> from click.testing import CliRunner
    >>> print(CliRunner().invoke(cmd, ["--run-timeout", "30"]).output.strip())
    ['agent_binary', 'agent_env', 'idle_timeout', 'log_level', 'pass_env', 'roots', 'run_timeout', 'simulate']
    >>> print(CliRunner().invoke(cmd, ["--run-timeout", "nan"]).output.splitlines()[-1])
    Error: Invalid value for '--run-timeout': nan is not a number of seconds.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

from .typed_path import TypedPath

__all__ = ["Seconds", "check_simulate_or_binary", "parse_agent_env", "runner_options"]

F = TypeVar("F", bound=Callable[..., Any])


class Seconds(click.FloatRange):
    """A number of seconds from the command line: ``FloatRange``'s bounds, and finite.

    ``FloatRange`` lets ``nan`` through (every comparison with it is false) and ``inf`` past a
    missing upper bound; a time limit, a heartbeat or a grace of either never ends
    (``asyncio.sleep(nan)`` never wakes). Every option of the command line that takes seconds
    has this type.

    Example:
        >>> import click
        >>> @click.command()
        ... @click.option("--wait", type=Seconds(min=0, min_open=True))
        ... def cmd(wait: float) -> None:
        ...     click.echo(wait)
        >>> from click.testing import CliRunner
        >>> print(CliRunner().invoke(cmd, ["--wait", "1.5"]).output.strip())
        1.5
        >>> print(CliRunner().invoke(cmd, ["--wait", "nan"]).output.splitlines()[-1])
        Error: Invalid value for '--wait': nan is not a number of seconds.
        >>> print(CliRunner().invoke(cmd, ["--wait", "soon"]).output.splitlines()[-1])
        Error: Invalid value for '--wait': 'soon' is not a number of seconds.
        >>> print(CliRunner().invoke(cmd, ["--wait", "0"]).output.splitlines()[-1])
        Error: Invalid value for '--wait': 0.0 is not in the range x>0.
    """

    name = "seconds"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        try:
            seconds = super().convert(value, param, ctx)
        except click.BadParameter:
            if isinstance(value, float) or _is_number(value):
                raise  # out of the range: click's words name the range
            self.fail(f"{value!r} is not a number of seconds.", param, ctx)
        if not math.isfinite(seconds):
            self.fail(f"{value} is not a number of seconds.", param, ctx)
        return seconds


def _is_number(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def check_simulate_or_binary(simulate: bool, agent_binary: str | None) -> None:
    """``--simulate`` and ``--agent-binary`` name two different agents: give one of them.

    The rule of every command that runs agents (``run``, ``chat``, ``serve``, ``worker``):
    the pair is a usage error (exit 2) rather than one silently winning — ``serve`` would label
    as simulated an agent that is not, ``run`` would ignore the binary asked for.

    Example:
        >>> check_simulate_or_binary(True, None); check_simulate_or_binary(False, "/bin/agent")
        >>> check_simulate_or_binary(True, "/bin/agent")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        cursor_agent_api.cli.console.CliUsageError: --simulate and --agent-binary: give one of them ...
    """
    if simulate and agent_binary is not None:
        from .console import CliUsageError

        raise CliUsageError(
            "--simulate and --agent-binary: give one of them (--simulate runs the bundled "
            f"simulator, --agent-binary {agent_binary} runs that program)")


def parse_agent_env(pairs: tuple[str, ...], names: tuple[str, ...]) -> dict[str, str]:
    """The agent's extra environment: ``--pass-env NAME`` copied from ours, then ``--agent-env``.

    Example:
        >>> parse_agent_env(("MODE=fast",), ())
        {'MODE': 'fast'}
        >>> parse_agent_env(("oops",), ())
        Traceback (most recent call last):
        ...
        click.exceptions.BadParameter: 'oops' is not NAME=VALUE
    """
    env: dict[str, str] = {}
    for name in names:
        if name in os.environ:
            env[name] = os.environ[name]
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{pair!r} is not NAME=VALUE", param_hint="--agent-env")
        env[key] = value
    return env


def runner_options(func: F) -> F:
    """Decorate a click command with the options that set up the agents it runs."""
    options = [
        click.option("--root", "roots", multiple=True, type=TypedPath(file_okay=False, exists=True),
                     help="A directory workspaces may live under (repeatable; default: the "
                          "current directory)."),
        click.option("--simulate", is_flag=True,
                     help="Run the bundled simulator instead of the real agent (labelled in "
                          "the UI). With 'serve --dispatch queue' the workers run the agents: "
                          "each worker's own --simulate decides."),
        click.option("--agent-binary", default=None, help="Path of the agent binary."),
        click.option("--agent-env", "agent_env", multiple=True, metavar="NAME=VALUE",
                     help="Extra environment variable for the agent (repeatable)."),
        click.option("--pass-env", "pass_env", multiple=True, metavar="NAME",
                     help="Copy this variable of this command's environment to the agent "
                          "(repeatable)."),
        click.option("--run-timeout", type=Seconds(min=0, min_open=True), default=None,
                     metavar="SECONDS",
                     help="Seconds a turn may last (default: no limit)."),
        click.option("--idle-timeout", type=Seconds(min=0, min_open=True), default=None,
                     metavar="SECONDS",
                     help="Seconds a turn may stay silent (default: no limit; real agents "
                          "are silent 30 s+)."),
        click.option("--log-level", default="info", show_default=True,
                     type=click.Choice(["critical", "error", "warning", "info", "debug"])),
    ]
    for option in reversed(options):
        func = option(func)
    return func
