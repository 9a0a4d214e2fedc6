"""The ``cursor-agent-api`` console script's entry point (``[project.scripts]`` in
pyproject.toml).

The command line is imported here, inside a ``try``: a Ctrl-C typed while Python loads it
(click, the group: most of the first ~60 ms) ends the command with status 130 after a new
line, as a Ctrl-C at any later moment does (:class:`~cursor_agent_api.cli.CommandLine`),
rather than with Python's ``KeyboardInterrupt`` traceback. What comes before this function
runs no entry point can cover: Python's own start (pip's script imports ``re`` first), and
this package's ``__init__`` and this module, which load only ``importlib``, ``warnings`` and
``__future__`` beyond what Python had loaded, about a millisecond (``typing``, ten times as
long, is left for later).

Example:
    >>> try:
    ...     main(["--version"])
    ... except SystemExit as done:
    ...     print("exit", done.code)  # doctest: +ELLIPSIS
    cursor-agent-api, version ...
    exit 0
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without loading typing before the ``try``)

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["main"]


def main(args: Sequence[str] | None = None) -> None:
    """Run ``cursor-agent-api`` with ``args`` (default: ``sys.argv[1:]``)."""
    try:
        from .cli import main as command_line
    except KeyboardInterrupt:
        if sys.stderr is not None:  # (closed: print would write to stdout)
            print(file=sys.stderr)  # the line the ^C was typed on ends
        sys.exit(130)
    command_line.main(args)
