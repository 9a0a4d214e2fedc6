"""Database URLs: checked before a server or worker starts (one line naming the fix), shown
without their password, and given to the drivers that are not SQLAlchemy's (libpq's form).

The store runs on SQLAlchemy's asyncio engine, so a URL needs an async driver:
``sqlite+aiosqlite:///PATH`` or ``postgresql+asyncpg://USER@HOST/DB`` (the ``postgres``
extra). Other URLs would fail deep inside SQLAlchemy with a long traceback;
:func:`database_url_problem` says what is wrong and what to write instead. Passwords in
the URL never appear in the message. An SQLite URL must name a file: without one (``$DB``
unset in ``sqlite+aiosqlite:///$DB``) or with ``:memory:``, SQLite keeps the database in memory
and every chat would be lost when the server stops, so it is refused too.

It lives outside the server package, and reads URLs with SQLAlchemy's own ``make_url`` (its URL
module only: no dialect, no driver), so that ``serve`` and ``worker`` refuse a wrong URL before
they import the server, FastAPI or uvicorn (``tests/cli/test_lazy_imports.py``).

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
from typing import Any
from urllib.parse import quote, unquote

from sqlalchemy.engine.url import URL, make_url
from sqlalchemy.exc import ArgumentError

from .home import home_dir

SQLITE_DRIVER = "sqlite+aiosqlite"
POSTGRES_DRIVER = "postgresql+asyncpg"
POSTGRES_EXTRA = "pip install 'cursor-agent-api[postgres]'"
_FORMS = "sqlite+aiosqlite:///PATH or postgresql+asyncpg://USER@HOST/DB"


def sqlite_url(path: os.PathLike[str] | str) -> str:
    """The ``sqlite+aiosqlite`` URL of the file ``path``, whatever characters it holds: a
    ``?``, ``#`` or ``%XX`` in a directory's name is escaped, not read as URL syntax.

    Example:
        >>> sqlite_url("/data/what?now/50% off/server.sqlite3")
        'sqlite+aiosqlite:////data/what%3Fnow/50%25 off/server.sqlite3'
        >>> sqlite_path(sqlite_url("/d/a%41b#c"))
        '/d/a%41b#c'
    """
    url = URL.create(SQLITE_DRIVER, database=os.fspath(path))
    return url.render_as_string(hide_password=False)


def default_database_url(name: str = "server.sqlite3") -> str:
    """The default SQLite file: ``name`` in the tool's home, beside the saved chats.

    The home is :func:`~cursor_agent_api.home.home_dir`: ``$CURSOR_AGENT_API_HOME``, else the
    per-user data directory. Here, not in the server's settings, so that a command can name
    it without importing the server (``compact`` of a missing file).

    Example:
        >>> default_database_url().startswith("sqlite+aiosqlite:///")
        True
    """
    return sqlite_url(home_dir() / name)


def sqlite_path(database_url: str) -> str | None:
    """The file of a ``sqlite+aiosqlite`` URL (unescaped); ``None`` for another URL.

    Example:
        >>> sqlite_path("sqlite+aiosqlite:////d/what%3Fnow/db"), sqlite_path("postgres://h/d")
        ('/d/what?now/db', None)
    """
    try:
        url = make_url(database_url)
    except ArgumentError:
        return None
    return url.database or None if url.drivername == SQLITE_DRIVER else None


def _shown(url: URL) -> str:
    """The URL as it may be shown: no password, and no query (``?password=…`` is one). A
    password with an ``@`` left unencoded is hidden whole: the host is what follows the
    authority's last ``@`` (SQLAlchemy reads the first as the end of the password, the rest
    as the host).

    Example:
        >>> _shown(make_url("postgres://me:pw@db/app?password=pw&sslmode=require"))
        'postgres://me:***@db/app?…'
        >>> _shown(make_url("postgresql+asyncpg://u:Sec@ret@db:5432/app"))
        'postgresql+asyncpg://u:***@db:5432/app'
    """
    host = url.host or ""
    if "@" in host:  # an unencoded "@" in the password (or the user): all of it hidden
        url = url.set(host=host.rpartition("@")[2], password="***")
    text = url.set(query={}).render_as_string(hide_password=True)
    return f"{text}?…" if url.query else text


def database_url_problem(url: str) -> str | None:
    """What is wrong with ``url`` and how to fix it, in one line; ``None`` if it is usable.

    The scheme is compared as a string before anything else: no SQLAlchemy dialect is looked
    up by it, so an unknown scheme is this line, not a ``NoSuchModuleError`` traceback (a
    PostgreSQL URL is then read as the store reads it, :func:`libpq_url`). (The examples below
    wrap the one line.)

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
        >>> tls = "postgresql+asyncpg://db/app?ssl=require&sslmode=disable"
        >>> print(database_url_problem(tls))  # doctest: +NORMALIZE_WHITESPACE
        postgresql+asyncpg://db/app?…: ssl=require and sslmode=disable ask for different TLS
        modes: keep one of them
        >>> database_url_problem("postgresql+asyncpg://db/app?sslrootcert=/ca.pem") is None
        True
    """
    if "://" not in url:
        path = os.path.abspath(os.path.expanduser(url)) if url.strip() else "PATH"
        return f"not a URL: for an SQLite file use {sqlite_url(path)}"
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        return f"not a database URL: use {_FORMS}"
    shown = _shown(parsed)
    backend, _, driver = parsed.drivername.partition("+")  # text: no dialect is loaded
    if backend == "sqlite":
        if driver != "aiosqlite":
            fixed = _shown(parsed.set(drivername=SQLITE_DRIVER))
            return f"{shown} has no async driver: use {fixed}"
        return _sqlite_file_problem(parsed, shown)
    if backend in ("postgresql", "postgres"):
        fixed = _shown(parsed.set(drivername=POSTGRES_DRIVER))
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
        return _postgres_query_problem(parsed, shown)
    return f"{shown}: unsupported database; use {_FORMS}"


_URL_PARAMETERS = frozenset({
    "host", "port", "user", "password", "database", "passfile", "service", "sslmode", "ssl",
    "sslcert", "sslkey", "sslrootcert", "sslcrl", "sslpassword", "sslnegotiation",
    "ssl_min_protocol_version", "ssl_max_protocol_version", "target_session_attrs",
    "krbsrvname", "gsslib", "application_name", "options", "prepared_statement_cache_size"})
"""What a PostgreSQL URL's query may hold: libpq's connection parameters that asyncpg's DSN
reads too (every connection is given the one libpq URL: :func:`libpq_url`), ``ssl`` (the
same as ``sslmode``), ``database`` (SQLAlchemy's name for the path) and SQLAlchemy's own
``prepared_statement_cache_size``. asyncpg would send any other key to the server as a
setting, and the store could not connect."""

_CONNECT_WAITS = "every connection waits store_connect_timeout (10 s by default) instead"
_NOT_FROM_URL = {"connect_timeout": _CONNECT_WAITS, "timeout": _CONNECT_WAITS,
                 "command_timeout": "every statement waits store_statement_timeout (60 s by "
                                    "default) instead",
                 "dbname": "the database is the URL's path (or ?database=)",
                 # libpq's only (asyncpg has no such setting): the job queue's driver reads them
                 # from the environment too
                 "channel_binding": "set PGCHANNELBINDING in the environment instead (libpq, the "
                                    "job queue's driver, reads it; asyncpg has no such setting)",
                 "gssencmode": "set PGGSSENCMODE in the environment instead (libpq, the job "
                               "queue's driver, reads it; asyncpg has no such setting)"}


def _postgres_query_problem(url: URL, shown: str) -> str | None:
    """What is wrong with a PostgreSQL URL's query (see :data:`_URL_PARAMETERS`), or None."""
    query = url.query
    for key, value in query.items():
        if key not in _URL_PARAMETERS:
            why = _NOT_FROM_URL.get(key, "it is not a connection parameter both drivers read "
                                         "(asyncpg's and libpq's; docs/distributed.md)")
            return f"{shown}: {key[:40]}= in the URL is not used: {why}; drop it"
        if not isinstance(value, str) and key not in ("host", "port"):
            return f"{shown}: {key}= is given {len(value)} times in the URL: keep one"
    modes = {query[name] for name in ("ssl", "sslmode") if name in query}
    if len(modes) > 1:  # each driver would take its own form's: different TLS, unsaid
        return (f"{shown}: ssl={query['ssl']} and sslmode={query['sslmode']} ask for different "
                "TLS modes: keep one of them")
    cache = query.get(_STATEMENT_CACHE)
    if cache is not None and not re.fullmatch(r"[0-9]+", str(cache)):
        return f"{shown}: {_STATEMENT_CACHE}= takes a whole number (0: no cache)"
    return _libpq_problem(url, shown)


def _libpq_problem(url: URL, shown: str) -> str | None:
    """Why libpq cannot read the URL's libpq form (:func:`libpq_url`), said without any of
    its text (libpq's own message quotes the URL, password and all), or None. Without
    psycopg (the job queue's driver, the ``postgres`` extra's), only SQLAlchemy's reading."""
    try:
        text = libpq_url(url)
    except (ArgumentError, ValueError, TypeError):  # hosts and ports that do not pair up
        return (f"{shown}: its hosts and ports cannot be read (use ?host=A:5432&host=B:5432, "
                "or ?host=A,B&port=5432,5432)")
    try:
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        return None
    try:
        conninfo_to_dict(text)
    except Exception:  # (psycopg's ProgrammingError: its message quotes the URL)
        return (f"{shown}: libpq cannot read it as a connection string (a character it forbids, "
                "such as an encoded NUL %00, or a host it cannot parse): check each part")
    return None


def _sqlite_file_problem(url: URL, shown: str) -> str | None:
    """Why an SQLite URL names no file that outlives the process (none, or in memory)."""
    database = url.database or ""
    if not database.strip():
        return (f"{shown} names no database file (SQLite would keep it in memory, and lose "
                f"every chat when the server stops): use {SQLITE_DRIVER}:///PATH")
    if database == ":memory:" or database.startswith("file::memory:") \
            or url.query.get("mode") == "memory":
        return (f"{unquote(shown)} is an in-memory database (every chat lost when the server "
                f"stops): use {SQLITE_DRIVER}:///PATH")
    return None


def shown_url(url: str) -> str:
    """``url`` as it may be shown: its password hidden, its query too (``?password=…``).

    Example:
        >>> shown_url("postgresql+asyncpg://me:secret@db/app")
        'postgresql+asyncpg://me:***@db/app'
    """
    return _shown(make_url(url))


def holds_password(url: str) -> bool:
    """Whether ``url`` carries a password (in its user part or its query).

    Example:
        >>> holds_password("postgresql+asyncpg://me:pw@db/app"), holds_password("sqlite+aiosqlite:///x")
        (True, False)
        >>> holds_password("postgresql+asyncpg://me@db/app?password=pw")
        True
        >>> holds_password("postgresql+asyncpg://me@db/app?sslpassword=pw")
        True
    """
    try:
        parsed = make_url(url)
    except Exception:  # (said elsewhere: database_url_problem)
        return False
    return bool(parsed.password) or not {"password", "sslpassword"}.isdisjoint(parsed.query)


def libpq_url(database_url: str | URL) -> str:
    """The server's SQLAlchemy URL (``postgresql+asyncpg://…``) as a libpq URL, the one form
    every PostgreSQL connection is given (psycopg's, the job queue's; asyncpg's DSN, the
    store's and the LISTEN connections'), read by both drivers alike.

    The URL is read as SQLAlchemy's asyncpg dialect reads it (as the store read it before it
    was given a DSN): ``?host=``, ``?port=``, ``?user=``, ``?password=``, ``?database=`` win
    over the authority, and ``?host=A:p&host=B:q`` or ``?host=A,B&port=p,q`` list several hosts.
    Then it is written in the one form both drivers read the same: hosts in the authority
    (``A:p,B:q``; a Unix socket's folder in ``?host=``), every part and value
    percent-encoded (a space is ``%20``, never ``+``, which libpq keeps as ``+``). The TLS mode
    is ``sslmode``: ``?ssl=require`` (SQLAlchemy's and asyncpg's form) and ``?sslmode=require``
    (libpq's) mean the same (:func:`database_url_problem` refuses both with different modes).
    SQLAlchemy's own ``prepared_statement_cache_size=`` is left out (:func:`engine_args`).

    The password stays in the URL given to the drivers; it is never printed.

    Example:
        >>> libpq_url("postgresql+asyncpg://u@db/app?ssl=require")
        'postgresql://u@db/app?sslmode=require'
        >>> libpq_url("postgresql+asyncpg://u:p%20w@/app?host=/run/pg&application_name=my%20app")
        'postgresql://u:p%20w@/app?host=%2Frun%2Fpg&application_name=my%20app'
        >>> libpq_url("postgresql+asyncpg://u@x/app?host=a:1&host=b:2")
        'postgresql://u@a:1,b:2/app'
        >>> libpq_url("postgresql+asyncpg://u@[::1]:5432/app")
        'postgresql://u@[::1]:5432/app'
    """
    from sqlalchemy.dialects.postgresql.asyncpg import PGDialect_asyncpg  # (no driver import)

    url = make_url(database_url)  # (a URL as it is)
    dialect = PGDialect_asyncpg()  # type: ignore[no-untyped-call]
    _, opts = dialect.create_connect_args(  # type: ignore[no-untyped-call]
        url.set(drivername=POSTGRES_DRIVER))
    hosts, ports = opts.pop("host", None), opts.pop("port", None)
    hosts = [hosts] if isinstance(hosts, str) else list(hosts or [])
    if len(hosts) == 1 and ports is None and (v6 := re.fullmatch(r"\[(.*)\]:(\d+)", hosts[0])):
        hosts, ports = [v6[1]], int(v6[2])  # ?host=[::1]:5432 (SQLAlchemy splits no brackets)
    hosts = [h[1:-1] if h.startswith("[") and h.endswith("]") else h for h in hosts]
    ports = [str(p) for p in (ports if isinstance(ports, list) else [ports] * max(1, len(hosts)))
             if p is not None]  # (none: the drivers' own default, PGPORT's or 5432)
    user, password = opts.pop("user", None), opts.pop("password", None)
    database = opts.pop("database", None)
    opts.pop(_STATEMENT_CACHE, None)  # SQLAlchemy's, not libpq's (engine_args)
    if "ssl" in opts:
        opts.setdefault("sslmode", opts.pop("ssl"))
    auth = ""
    if user is not None or password is not None:
        auth = _quoted(user or "") + (f":{_quoted(password)}" if password is not None else "") + "@"
    query: dict[str, Any] = {}
    if not hosts and ports:  # a port without a host (PGHOST's, or the default socket)
        query = {"port": ports[0]}
    if any(h.startswith("/") for h in hosts):  # a socket's folder: in the query (both read it)
        netloc = auth
        query = {"host": ",".join(hosts), **({"port": ",".join(ports)} if ports else {})}
    else:
        named = [f"[{h}]" if ":" in h else _quoted(h) for h in hosts]  # (IPv6 in brackets)
        if ports and hosts:
            named = [f"{h}:{p}" for h, p in zip(named, ports, strict=True)]
        netloc = auth + ",".join(named)
    query.update(opts)
    path = f"/{_quoted(database)}" if database is not None else ""
    text = "&".join(f"{_quoted(k)}={_quoted(str(v))}" for k, v in query.items())
    return f"postgresql://{netloc}{path}" + (f"?{text}" if text else "")


def _quoted(text: str) -> str:
    return quote(text, safe="")


_STATEMENT_CACHE = "prepared_statement_cache_size"
"""SQLAlchemy's asyncpg dialect's own URL parameter (``=0`` behind PgBouncer in transaction
mode): handed to the store's engine, never to a driver as a libpq parameter."""


def engine_args(database_url: str) -> tuple[str, dict[str, Any]]:
    """What the store's SQLAlchemy engine is made with: its URL and its driver's connect
    arguments. For PostgreSQL, asyncpg is handed :func:`libpq_url` as its DSN, which it reads
    as libpq does: SQLAlchemy would hand the URL's query to ``asyncpg.connect()`` as keyword
    arguments, and any libpq parameter (``application_name=``, ``sslrootcert=``) was a
    ``TypeError`` there. SQLAlchemy's own ``prepared_statement_cache_size=`` still goes to
    SQLAlchemy (:func:`database_url_problem` checks it is a whole number). Any other URL as it is.

    Example:
        >>> engine_args("postgresql+asyncpg://u@db/app?sslmode=verify-full")
        ('postgresql+asyncpg://', {'dsn': 'postgresql://u@db/app?sslmode=verify-full'})
        >>> engine_args("postgresql+asyncpg://u@db/app?prepared_statement_cache_size=0")[1]
        {'dsn': 'postgresql://u@db/app', 'prepared_statement_cache_size': 0}
        >>> engine_args("sqlite+aiosqlite:////d/x.db")
        ('sqlite+aiosqlite:////d/x.db', {})
    """
    url = make_url(database_url)
    if url.get_backend_name() != "postgresql":
        return database_url, {}
    args: dict[str, Any] = {"dsn": libpq_url(database_url)}
    if _STATEMENT_CACHE in url.query:
        args[_STATEMENT_CACHE] = int(str(url.query[_STATEMENT_CACHE]))
    return f"{POSTGRES_DRIVER}://", args


def is_postgres(database_url: str) -> bool:
    """True when ``database_url`` names a PostgreSQL database (the queue needs one).

    Example:
        >>> is_postgres("sqlite+aiosqlite:///x.db"), is_postgres("postgresql+asyncpg://h/db")
        (False, True)
    """
    return make_url(database_url).get_backend_name() in ("postgresql", "postgres")
