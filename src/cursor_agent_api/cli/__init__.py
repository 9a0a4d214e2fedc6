"""The ``cursor-agent-api`` command: one click group (:mod:`.group`), one module per
subcommand.

Subcommands register themselves in the group; each lives in its own module (``replay.py``,
...). Expected failures print one line and exit non-zero, never a traceback.

This package's ``__init__`` imports nothing: ``python -m cursor_agent_api.cli`` imports it
before its ``__main__`` runs, and a Ctrl-C while click and the group load (most of the
first ~60 ms) would be Python's ``KeyboardInterrupt`` traceback there; ``__main__`` imports
them inside the console script's ``try`` (:mod:`cursor_agent_api.console_script`).
``main``, ``SUBCOMMANDS`` and ``CommandLine`` are the group's, loaded when first asked for.

Example:
    $ cursor-agent-api replay tests/data/cursor-real/02-*.ndjson --summary

    >>> from cursor_agent_api.cli import main
    >>> main.name
    'main'
"""

from __future__ import annotations

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without loading typing: see above)

if TYPE_CHECKING:
    from .group import SUBCOMMANDS, CommandLine, main

__all__ = ["SUBCOMMANDS", "CommandLine", "main"]


if not TYPE_CHECKING:  # (mypy sees only the names above: a typo, ``cli.mian``, is reported)

    def __getattr__(name: str) -> object:
        if name in __all__:
            from . import group

            return getattr(group, name)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
