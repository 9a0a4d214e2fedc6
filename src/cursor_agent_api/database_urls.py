"""Database URLs: checked before a server or worker starts (one line naming the fix), shown
without their password, and given to the drivers that are not SQLAlchemy's (libpq's form).

The store runs on SQLAlchemy's asyncio engine, so a URL needs an async driver:
``sqlite+aiosqlite:///PATH`` or ``postgresql+asyncpg://USER@HOST/DB`` (the ``postgres``
extra). Other URLs would fail deep inside SQLAlchemy with a long traceback;
:func:`database_url_problem` says what is wrong and what to write instead. Passwords in
the URL never appear in the message. An SQLite URL must name a file: without one (``$DB``
unset in ``sqlite+aiosqlite:///$DB``) or with ``:memory:``, SQLite keeps the database in memory
and every chat would be lost when the server stops, so it is refused too.

Only text is read and written here: the URL is parsed and rendered as SQLAlchemy's
``make_url`` and ``URL.render_as_string`` do (:class:`_Url`), without importing SQLAlchemy
(nor the server), so ``serve`` and ``worker`` refuse a wrong URL before they load either
(``tests/cli/test_database_urls.py`` checks both: the same parse, and nothing heavy loaded).

Example:
    >>> database_url_problem("sqlite:///x.db")
    'sqlite:///x.db has no async driver: use sqlite+aiosqlite:///x.db'
    >>> database_url_problem("sqlite+aiosqlite:///x.db") is None
    True
    >>> libpq_url("postgresql+asyncpg://u:p@127.0.0.1:5432/db")
    'postgresql://u:p@127.0.0.1:5432/db'
"""

from __future__ import annotations

import importlib
import os
import re
from dataclasses import dataclass, replace
from urllib.parse import parse_qs, quote, unquote

SQLITE_DRIVER = "sqlite+aiosqlite"
POSTGRES_DRIVER = "postgresql+asyncpg"
POSTGRES_EXTRA = "pip install 'cursor-agent-api[postgres]'"
_FORMS = "sqlite+aiosqlite:///PATH or postgresql+asyncpg://USER@HOST/DB"

_PATTERN = re.compile(  # SQLAlchemy's own (sqlalchemy.engine.url._parse_url)
    r"""
        (?P<name>[\w\+]+)://
        (?:
            (?P<username>[^:/]*)
            (?::(?P<password>[^@]*))?
        @)?
        (?:
            (?:
                \[(?P<ipv6host>[^/\?]+)\] |
                (?P<ipv4host>[^/:\?]+)
            )?
            (?::(?P<port>[^/\?]*))?
        )?
        (?:/(?P<database>[^\?]*))?
        (?:\?(?P<query>.*))?
        """,
    re.X,
)


@dataclass(frozen=True)
class _Url:
    """A database URL's parts, parsed as SQLAlchemy's ``make_url`` parses them (user, password
    and database unescaped), rendered as its ``render_as_string`` renders them (the query kept
    as it was written). :meth:`parse` raises ``ValueError`` for what is no URL.

    Example:
        >>> url = _Url.parse("postgresql+asyncpg://me:p%40ss@[::1]:5432/app?sslmode=require")
        >>> url.password, url.host, url.port, url.database, url.params()
        ('p@ss', '::1', 5432, 'app', {'sslmode': ['require']})
        >>> url.render(hide_password=False)
        'postgresql+asyncpg://me:p%40ss@[::1]:5432/app?sslmode=require'
        >>> _Url.parse("no url")
        Traceback (most recent call last):
        ValueError: not a database URL: 'no url'
    """

    drivername: str
    username: str | None = None
    password: str | None = None
    host: str | None = None
    port: int | None = None
    database: str | None = None
    query: str | None = None

    @classmethod
    def parse(cls, text: str) -> _Url:
        match = _PATTERN.match(text)
        if match is None:
            raise ValueError(f"not a database URL: {text!r}")
        part = match.groupdict()
        username, password, database = (None if part[k] is None else unquote(part[k])
                                        for k in ("username", "password", "database"))
        port = int(part["port"]) if part["port"] else None  # (ValueError: not a number)
        return cls(part["name"], username, password, part["ipv4host"] or part["ipv6host"], port,
                   database, part["query"])

    @property
    def backend(self) -> str:
        """The database's name, without the driver (``postgresql`` of ``postgresql+asyncpg``)."""
        return self.drivername.partition("+")[0]

    def params(self) -> dict[str, list[str]]:
        """The query's parameters (blank ones left out, as SQLAlchemy leaves them)."""
        return parse_qs(self.query or "")

    def render(self, *, hide_password: bool) -> str:
        text = self.drivername + "://"
        if self.username is not None:
            text += quote(self.username, safe=" +")
            if self.password is not None:
                text += ":" + ("***" if hide_password else quote(self.password, safe=" +"))
            text += "@"
        if self.host is not None:
            text += f"[{self.host}]" if ":" in self.host else self.host
        if self.port is not None:
            text += f":{self.port}"
        if self.database is not None:
            text += "/" + quote(self.database, safe=" +/")
        return text + (f"?{self.query}" if self.query else "")


def sqlite_url(path: os.PathLike[str] | str) -> str:
    """The ``sqlite+aiosqlite`` URL of the file ``path``, whatever characters it holds: a
    ``?``, ``#`` or ``%XX`` in a directory's name is escaped, not read as URL syntax.

    Example:
        >>> sqlite_url("/data/what?now/50% off/server.sqlite3")
        'sqlite+aiosqlite:////data/what%3Fnow/50%25 off/server.sqlite3'
        >>> sqlite_path(sqlite_url("/d/a%41b#c"))
        '/d/a%41b#c'
    """
    return _Url(SQLITE_DRIVER, database=os.fspath(path)).render(hide_password=False)


def sqlite_path(database_url: str) -> str | None:
    """The file of a ``sqlite+aiosqlite`` URL (unescaped); ``None`` for another URL.

    Example:
        >>> sqlite_path("sqlite+aiosqlite:////d/what%3Fnow/db"), sqlite_path("postgres://h/d")
        ('/d/what?now/db', None)
    """
    try:
        url = _Url.parse(database_url)
    except ValueError:
        return None
    return url.database or None if url.drivername == SQLITE_DRIVER else None


def _shown(url: _Url) -> str:
    """The URL as it may be shown: no password, and no query (``?password=…`` is one).

    Example:
        >>> _shown(_Url.parse("postgres://me:pw@db/app?password=pw&sslmode=require"))
        'postgres://me:***@db/app?…'
    """
    text = replace(url, query=None).render(hide_password=True)
    return f"{text}?…" if url.query else text


def database_url_problem(url: str) -> str | None:
    """What is wrong with ``url`` and how to fix it, in one line; ``None`` if it is usable.

    Only the URL's text is read (its scheme compared as a string): no SQLAlchemy dialect is
    loaded (nor SQLAlchemy), so an unknown scheme is this line, not a ``NoSuchModuleError`` traceback. (The
    examples below wrap the one line.)

    Example:
        >>> msg = database_url_problem("postgresql://me:secret@db/app")
        >>> "use postgresql+asyncpg://me:***@db/app" in msg, "[postgres]" in msg, "secret" in msg
        (True, True, False)
        >>> database_url_problem("/var/lib/app.db")
        'not a URL: for an SQLite file use sqlite+aiosqlite:////var/lib/app.db'
        >>> print(database_url_problem("postgres://me:pw@db/app"))  # doctest: +NORMALIZE_WHITESPACE +ELLIPSIS
        postgres://me:***@db/app: the scheme is postgresql, not postgres: use
        postgresql+asyncpg://me:***@db/app (the postgres extra: ...)
        >>> print(database_url_problem("postgres+asyncpg://db/app"))  # doctest: +NORMALIZE_WHITESPACE
        postgres+asyncpg://db/app: the scheme is postgresql, not postgres: use
        postgresql+asyncpg://db/app
        >>> print(database_url_problem("sqlite3:///x.db"))  # doctest: +NORMALIZE_WHITESPACE
        sqlite3:///x.db: unsupported database; use sqlite+aiosqlite:///PATH or
        postgresql+asyncpg://USER@HOST/DB
        >>> print(database_url_problem("foo://"))  # doctest: +NORMALIZE_WHITESPACE
        foo://: unsupported database; use sqlite+aiosqlite:///PATH or
        postgresql+asyncpg://USER@HOST/DB
        >>> print(database_url_problem("sqlite+aiosqlite:///"))  # doctest: +NORMALIZE_WHITESPACE
        sqlite+aiosqlite:/// names no database file (SQLite would keep it in memory, and lose
        every chat when the server stops): use sqlite+aiosqlite:///PATH
        >>> print(database_url_problem("sqlite+aiosqlite:///:memory:"))  # doctest: +NORMALIZE_WHITESPACE
        sqlite+aiosqlite:///:memory: is an in-memory database (every chat lost when the server
        stops): use sqlite+aiosqlite:///PATH
    """
    if "://" not in url:
        path = os.path.abspath(os.path.expanduser(url)) if url.strip() else "PATH"
        return f"not a URL: for an SQLite file use {sqlite_url(path)}"
    try:
        parsed = _Url.parse(url)
    except ValueError:
        return f"not a database URL: use {_FORMS}"
    shown = _shown(parsed)
    backend, _, driver = parsed.drivername.partition("+")  # text: no dialect is loaded
    if backend == "sqlite":
        if driver != "aiosqlite":
            fixed = _shown(replace(parsed, drivername=SQLITE_DRIVER))
            return f"{shown} has no async driver: use {fixed}"
        return _sqlite_file_problem(parsed, shown)
    if backend in ("postgresql", "postgres"):
        fixed = _shown(replace(parsed, drivername=POSTGRES_DRIVER))
        if backend == "postgres":  # Heroku's, Render's, Fly's DATABASE_URL; SQLAlchemy has none
            extra = "" if driver == "asyncpg" else f" (the postgres extra: {POSTGRES_EXTRA})"
            return f"{shown}: the scheme is postgresql, not postgres: use {fixed}{extra}"
        if driver != "asyncpg":
            return (f"{shown} has no async driver: use {fixed} "
                    f"(the postgres extra: {POSTGRES_EXTRA})")
        try:
            importlib.import_module("asyncpg")
        except ImportError:
            return f"{shown} needs asyncpg, which is not installed: {POSTGRES_EXTRA}"
        return None
    return f"{shown}: unsupported database; use {_FORMS}"


def _sqlite_file_problem(url: _Url, shown: str) -> str | None:
    """Why an SQLite URL names no file that outlives the process (none, or in memory)."""
    database = url.database or ""
    if not database.strip():
        return (f"{shown} names no database file (SQLite would keep it in memory, and lose "
                f"every chat when the server stops): use {SQLITE_DRIVER}:///PATH")
    if database == ":memory:" or database.startswith("file::memory:") \
            or url.params().get("mode") == ["memory"]:
        return (f"{unquote(shown)} is an in-memory database (every chat lost when the server "
                f"stops): use {SQLITE_DRIVER}:///PATH")
    return None


def shown_url(url: str) -> str:
    """``url`` as it may be shown: its password hidden, its query too (``?password=…``).

    Example:
        >>> shown_url("postgresql+asyncpg://me:secret@db/app")
        'postgresql+asyncpg://me:***@db/app'
    """
    return _shown(_Url.parse(url))


def holds_password(url: str) -> bool:
    """Whether ``url`` carries a password (in its user part or its query).

    Example:
        >>> holds_password("postgresql+asyncpg://me:pw@db/app"), holds_password("sqlite+aiosqlite:///x")
        (True, False)
        >>> holds_password("postgresql+asyncpg://me@db/app?password=pw")
        True
    """
    try:
        parsed = _Url.parse(url)
    except ValueError:  # (said elsewhere: database_url_problem)
        return False
    return bool(parsed.password) or "password" in parsed.params()


def libpq_url(database_url: str) -> str:
    """The server's SQLAlchemy URL (``postgresql+asyncpg://…``) as a libpq URL.

    The password stays in the URL given to the drivers; it is never printed.
    """
    return replace(_Url.parse(database_url), drivername="postgresql").render(hide_password=False)


def is_postgres(database_url: str) -> bool:
    """True when ``database_url`` names a PostgreSQL database (the queue needs one).

    Example:
        >>> is_postgres("sqlite+aiosqlite:///x.db"), is_postgres("postgresql+asyncpg://h/db")
        (False, True)
    """
    return _Url.parse(database_url).backend in ("postgresql", "postgres")
