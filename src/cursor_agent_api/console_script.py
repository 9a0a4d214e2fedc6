"""The ``cursor-agent-api`` console script's entry point (``[project.scripts]`` in
pyproject.toml).

The command line is imported here, inside a ``try``: a Ctrl-C typed while Python loads it
(click, the group: most of the first ~60 ms) ends the command after a new line, as a Ctrl-C
at any later moment does: it dies from the SIGINT (a shell's ``$?`` 130),
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
    """Run ``cursor-agent-api`` with ``args`` (default: ``sys.argv[1:]``), as the program: a
    command stopped by a signal it received dies from it once its cleanup is done
    (:func:`~cursor_agent_api.signal_exit.exit_by_signal`), a Ctrl-C while the command line
    loads too."""
    try:
        from .cli import main as command_line
        from .signal_exit import SignalExit, exit_by_signal, run_as_program
    except KeyboardInterrupt:
        if sys.stderr is not None:  # (closed: print would write to stdout)
            print(file=sys.stderr)  # the line the ^C was typed on ends
        # (beside this module, not in cli/: importing it loads no more than Python's own
        # modules, not the group and click again, the ~60 ms the Ctrl-C cut short)
        from .signal_exit import exit_by_signal
        exit_by_signal(2)  # SIGINT (``signal`` not loaded for one number)
    try:
        with run_as_program():  # a second signal while a command stops ends it at once
            command_line.main(args)
    except SignalExit as ended:
        exit_by_signal(ended.signum)
