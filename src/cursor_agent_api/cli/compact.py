"""``cursor-agent-api compact``: shrink the server's SQLite file after chats were deleted.

``DELETE /api/chats/{id}`` frees the chat's pages inside the file; the file keeps its size
until it is rewritten. Stop the server, run ``compact`` (SQLite's ``VACUUM``, then a
checkpoint that empties the WAL), start the server again. It takes about as long as copying
the file. It reads the same database URL as ``serve`` (``--database-url``,
``CURSOR_AGENT_API_DATABASE_URL``, else the default file; with ``--simulate``, the default
file of ``serve --simulate``). For PostgreSQL it does nothing
and says why (autovacuum makes the space reusable; ``VACUUM FULL`` gives it back). A missing
file, a wrong URL and PostgreSQL are told before the server's modules are imported (a
second, about); only a file to compact needs them.

Example:
    $ cursor-agent-api serve          # … then DELETE /api/chats/{id}; stop the server
    $ cursor-agent-api compact
    compacted /home/me/.local/share/cursor-agent-api/server.sqlite3: 65.5 MB -> 98.3 kB (3998 free pages)
"""

from __future__ import annotations

import os

import click

from ..extras import SERVER_MODULES, first_absent, first_missing, needs_extra

POSTGRES_NOTE = (
    "nothing to do on PostgreSQL: autovacuum makes the space of deleted rows reusable (the "
    "tables stop growing, they do not shrink); to give it back to the file system, run "
    "VACUUM FULL by hand (it locks each table while it rewrites it)"
)


def _mb(n: int) -> str:
    """A size for people.

    Example:
        >>> _mb(65_536_000), _mb(98_304)
        ('65.5 MB', '98.3 kB')
    """
    return f"{n / 1e6:.1f} MB" if n >= 1_000_000 else f"{n / 1e3:.1f} kB"


@click.command("compact")
@click.option(
    "--database-url",
    envvar="CURSOR_AGENT_API_DATABASE_URL",
    default=None,
    help="The server's database, as for serve (default: its default SQLite file). "
    "[env: CURSOR_AGENT_API_DATABASE_URL]",
)
@click.option(
    "--simulate",
    is_flag=True,
    help="Without a database URL: the default database of serve --simulate.",
)
def compact(database_url: str | None, simulate: bool) -> None:
    """Give a SQLite database's free pages back (VACUUM); run it while the server is stopped."""
    absent = first_absent(SERVER_MODULES)  # (nothing imported: the URL's check needs one)
    if absent is not None:
        raise click.ClickException(needs_extra("compact", "server", absent))
    from ..database_urls import database_url_problem, is_postgres, sqlite_path
    from .console import CliError, CliUsageError, given_as

    if database_url is not None:
        problem = database_url_problem(database_url)
        if problem is not None:
            raise CliUsageError(f"{given_as('database_url', '--database-url')} {problem}")
    from .serve import serve_database_url

    url = database_url or serve_database_url(simulate=simulate)
    if is_postgres(url):
        click.echo(POSTGRES_NOTE)
        return
    path = sqlite_path(url)
    if path is None:
        raise CliUsageError("compact needs an SQLite file or a PostgreSQL database")
    path = os.path.expanduser(path)
    from .render import printable

    shown = printable(path, one_line=True)  # a name the user typed: never obeyed, one line
    if not os.path.isfile(path):  # said before the server's imports
        raise CliError(f"no database file {shown}")
    missing = first_missing(SERVER_MODULES)
    if missing is not None:
        raise click.ClickException(needs_extra("compact", "server", missing))
    from ..server.store.compaction import DatabaseBusyError, compact_sqlite

    try:
        done = compact_sqlite(path)
    except FileNotFoundError:
        raise CliError(f"no database file {shown}") from None
    except DatabaseBusyError:
        raise CliError(
            f"the database {shown} is busy (another process holds its write lock): stop the "
            "server, then run compact again"
        ) from None
    click.echo(f"compacted {shown}: {_mb(done.before)} -> {_mb(done.after)} ({done.free_pages} free pages)")
