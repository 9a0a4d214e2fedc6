"""The ``cursor-agent-api`` command: one click group, one module per subcommand.

Subcommands register themselves below; each lives in its own module
(``replay.py``, ...). Expected failures print one line and exit non-zero, never
a traceback.

Example:
    $ cursor-agent-api replay tests/data/cursor-real/02-*.ndjson --summary
"""

from __future__ import annotations

import click

from .. import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="cursor-agent-api")
def main() -> None:
    """Drive Cursor's coding agent: run it, chat with it, replay what it did."""
    from .console import standard_output

    standard_output()  # started with stdout closed: each write says so in one line


def _register() -> None:
    from .chat import chat
    from .compact import compact
    from .replay import replay
    from .run import run
    from .serve import serve
    from .sessions_cmd import sessions
    from .worker import worker

    main.add_command(run)
    main.add_command(chat)
    main.add_command(replay)
    main.add_command(sessions)
    main.add_command(serve)
    main.add_command(worker)
    main.add_command(compact)


_register()
