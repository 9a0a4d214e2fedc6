"""``cursor-agent-sim``: a faithful stand-in for the Cursor Agent CLI, for tests, demos and CI.

It accepts the real CLI's flags and subcommands and answers in the exact protocol of current
builds (PROTOCOL.md): ``--print`` with ``text``, ``json`` or ``stream-json``, partial output,
resumable chats stored under ``CURSOR_CONFIG_DIR``, a small deterministic agent that really
works on the workspace, scripted replay of recordings, and faults on demand. Every event goes
through :mod:`cursor_agent_api.sim.wire`, the project's one definition of the shapes.

Modules: :mod:`.cli_args` (the command line), :mod:`.settings` (the ``CURSOR_AGENT_SIM_*``
variables and the faults), :mod:`.store` (chats, locks, trust, login), :mod:`.agent` (the
deterministic agent), :mod:`.workspace` (the tools' real effects), :mod:`.replay` (scripts),
:mod:`.writer` (stdout bytes), :mod:`.turn` (one print-mode turn), :mod:`.commands` (the
subcommands), :mod:`.signals`, :mod:`.messages` (the real stderr texts), :mod:`.ids`,
:mod:`.models`. The agent is :mod:`.planner` (a table of rules), :mod:`.executors` (a table of
tools) and :mod:`.agent` (the loop), written through an :mod:`.output`: :mod:`.stream_json`
(print mode) or :mod:`.acp_output` (``cursor-agent-sim acp``: :mod:`.acp`, :mod:`.jsonrpc`,
:mod:`.acp_store`). docs/simulator.md is the user's guide.

Example (a shell)::

    $ cursor-agent-sim -p --trust --output-format stream-json "list the files"
    {"type":"system","subtype":"init","apiKeySource":"login","cwd":"/tmp/ws",...}
    ...
    {"type":"result","subtype":"success",...,"result":"I'll list the files ..."}

Example (Python):
    >>> import subprocess, sys, tempfile
    >>> ws = tempfile.mkdtemp()
    >>> out = subprocess.run([sys.executable, "-m", "cursor_agent_api.sim", "-p", "--trust",
    ...                       "--workspace", ws, "What is 2 + 2?"], capture_output=True,
    ...                      env={"CURSOR_CONFIG_DIR": tempfile.mkdtemp(), "PATH": ""})
    >>> out.returncode, out.stdout
    (0, b'4\\n')
"""

from __future__ import annotations

import os
import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """The console entry point: run the command line ``argv`` (default ``sys.argv[1:]``) and
    return the exit code. It installs the SIGINT/SIGTERM handlers of the real CLI (exit 130 /
    143), so call it as a process's entry point, not inside another program.

    Example::

        $ python -m cursor_agent_api.sim --version
        2026.09.15-sim
    """
    # imported here, not at the top: importing the package (``sim.locate``, for the command
    # line's ``--simulate``) then costs nothing, and each subcommand imports what it needs
    from . import signals

    signals.install(lambda: None)  # 130 / 143 from the first instant, like the real CLI
    from .cli_args import UsageError, parse_args
    from .settings import SimSettings
    from .store import ChatStore, default_config_dir

    try:
        opts = parse_args(argv)
    except UsageError as e:
        sys.stderr.write(f"{e}\n")
        return 1
    env = os.environ
    try:
        settings = SimSettings.from_env(env)
    except ValueError as e:
        sys.stderr.write(f"cursor-agent-sim: {e}\n")
        return 1
    from . import commands

    if opts.version:
        sys.stdout.write(commands.VERSION + "\n")
        sys.stdout.flush()
        return 0
    store = ChatStore(default_config_dir(env))
    try:
        if opts.list_models or opts.command == "models":
            return commands.models(opts, env, store, settings)
        if opts.command == "create-chat":
            return commands.create_chat(opts, env, store, settings)
        if opts.command in ("status", "whoami"):
            return commands.status(opts, env, store, settings)
        if opts.command == "login":
            return commands.login(store)
        if opts.command == "logout":
            return commands.logout(store)
        if opts.command == "acp":
            from .acp import serve

            return serve(opts, env, store, settings)
        if opts.command == "mcp" and opts.command_args[:1] == ["list"]:
            return commands.mcp_list(opts, env, store)
        if opts.command in ("ls", "resume"):
            return commands.interactive_only(opts.command)
        if opts.command is not None:
            return commands.not_simulated(opts.command)
        if not (opts.print_mode or not sys.stdout.isatty() or not sys.stdin.isatty()):
            from .messages import interactive_unsupported

            sys.stderr.write(interactive_unsupported() + "\n")
            return 1
        from .turn import run_turn

        return run_turn(opts, env, store, settings)
    except BrokenPipeError:
        # the reader went away: leave quietly, as a CLI whose stdout was closed
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        return 1
