"""The optional extras (``pyproject.toml``'s ``[project.optional-dependencies]``) and the one
error a missing one gives: an ``ImportError`` naming the extra and the ``pip install`` that
brings it, never a bare ``No module named …``.

What lives here: :func:`install_command`, :func:`needs_extra` (the command line's one line
for a missing module of an extra), :func:`missing_extra` (the error, from the
``ImportError`` the import raised), :func:`is_missing_dependency` (an import failed because a
third-party module is absent, not because of a fault of this package's own modules) and
:func:`first_missing` (the first of some modules that does not import: the job queue's
modules, :data:`QUEUE_MODULES`, are imported only when a job is, so ``serve --dispatch queue``
and ``worker`` look for them at start).

Example:
    >>> install_command("postgres")
    "pip install 'cursor-agent-api[postgres]'"
    >>> err = missing_extra("tools", "cursor_agent_api.tools",
    ...                     ModuleNotFoundError("No module named 'mcp'", name="mcp"))
    >>> str(err).startswith("cursor_agent_api.tools needs the [tools] extra: pip install '")
    True
    >>> str(err).endswith("(No module named 'mcp')")
    True
    >>> err.name
    'mcp'
    >>> first_missing(("json", "no_such_module_here")), first_missing(("json",))
    ('no_such_module_here', None)
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterable

__all__ = ["QUEUE_MODULES", "SERVER_MODULES", "first_absent", "first_missing", "install_command",
           "is_missing_dependency", "missing_extra", "needs_extra"]

SERVER_MODULES = ("fastapi", "uvicorn", "sqlalchemy", "aiosqlite", "alembic")
"""The ``server`` extra's modules; the store's (``aiosqlite``, ``alembic``) are imported only
as the database opens, so ``serve`` and ``worker`` look for them at start."""

QUEUE_MODULES = ("procrastinate", "psycopg", "psycopg_pool")
"""The ``postgres`` extra's job queue (``serve --dispatch queue``, ``worker``); its driver,
``asyncpg``, is checked with the database URL."""


def install_command(extra: str) -> str:
    """The command that installs ``extra``."""
    return f"pip install 'cursor-agent-api[{extra}]'"


def needs_extra(who: str, extra: str, module: str) -> str:
    """The command line's one line when ``module`` of ``extra`` is missing, for ``who`` (the
    command or the option that needs it).

    Example:
        >>> needs_extra("the worker", "server", "sqlalchemy")
        "the worker needs the 'server' extra (sqlalchemy is missing): pip install 'cursor-agent-api[server]'"
    """
    return f"{who} needs the '{extra}' extra ({module} is missing): {install_command(extra)}"


def missing_extra(extra: str, what: str, error: ImportError) -> ImportError:
    """The ``ImportError`` to raise when ``what`` cannot be imported for lack of ``extra``
    (``error``: what the import raised; its module name is kept in ``name``)."""
    return ImportError(f"{what} needs the [{extra}] extra: {install_command(extra)} ({error})",
                       name=error.name)


def is_missing_dependency(error: ImportError) -> bool:
    """Whether ``error`` says a module from outside this package is absent (an extra's), not
    that one of this package's own modules failed.

    Example:
        >>> is_missing_dependency(ModuleNotFoundError("No module named 'fastapi'", name="fastapi"))
        True
        >>> is_missing_dependency(ImportError("cannot import name 'x'", name="cursor_agent_api.server"))
        False
    """
    return bool(error.name) and str(error.name).partition(".")[0] != __name__.partition(".")[0]


def first_missing(modules: Iterable[str]) -> str | None:
    """The first of ``modules`` that does not import (absent, or failing as it is imported)."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError:
            return module
    return None


def first_absent(modules: Iterable[str]) -> str | None:
    """The first of ``modules`` that is not installed, found without importing any of them
    (:func:`importlib.util.find_spec` of a top-level name reads the import path only): cheap
    enough for a command to ask before it checks its options, which may need one of them.

    Example:
        >>> first_absent(["json", "no_such_module_here", "os"])
        'no_such_module_here'
        >>> first_absent(["json"]) is None
        True
    """
    for module in modules:
        try:
            if importlib.util.find_spec(module) is None:
                return module
        except (ImportError, ValueError):
            return module
    return None
