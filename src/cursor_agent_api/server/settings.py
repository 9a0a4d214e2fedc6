"""Server settings: one frozen dataclass, filled by ``cursor-agent-api serve``.

Nothing here opens a socket or a file; :func:`default_database_url` (kept in
:mod:`cursor_agent_api.database_urls`) only computes a path (the directory is created when the
store starts).

Example:
    >>> s = ServerSettings(token="t" * 32)
    >>> s.host, s.max_concurrent_runs
    ('127.0.0.1', 4)
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path

from ..database_urls import default_database_url as default_database_url
from ..server_options import LOOPBACK_HOSTS as LOOPBACK_HOSTS  # (checked before the server imports)
from ..server_options import MIN_TOKEN_LENGTH as MIN_TOKEN_LENGTH
from ..server_options import WILDCARD_HOSTS as WILDCARD_HOSTS
from ..server_options import check_token as check_token
from .checks.host import host_origin

WS_PROTOCOL_VERSION = 1
"""Version of the WebSocket protocol documented in ``docs/websocket.md``."""

SESSION_IDLE_SECONDS = 7 * 24 * 3600.0
"""A browser session unused this long ends (the expiry slides with every use)."""

SESSION_MAX_SECONDS = 30 * 24 * 3600.0
"""No browser session lasts longer than this after its sign-in."""


def new_token() -> str:
    """A fresh random token (48 hex characters, 192 bits).

    Example:
        >>> len(new_token())
        48
    """
    return secrets.token_hex(24)


def earlier_default_database(database_url: str) -> str | None:
    """What to say when the default database is not there yet but the one of a version from
    before 11-23 is: the default SQLite file was then always in the per-user data directory,
    ``$CURSOR_AGENT_API_HOME`` set or not (now it is in the tool's home). One line naming the
    earlier file and how to use it; ``None`` otherwise. Nothing is moved.

    Example:
        >>> earlier_default_database("sqlite+aiosqlite:////nowhere/server.sqlite3") is None
        True
    """
    from platformdirs import user_data_dir

    from ..database_urls import sqlite_path, sqlite_url

    path = sqlite_path(database_url)  # the form of default_database_url()
    if path is None:
        return None
    new = Path(path)
    old = Path(user_data_dir("cursor-agent-api", appauthor=False)) / new.name
    if new.exists() or old == new or not old.is_file():
        return None
    return (
        f"this server starts a new, empty database {new} ($CURSOR_AGENT_API_HOME); the one of "
        f"versions before 11-23 is {old}: to keep using it, stop the server and start it with "
        f"--database-url {sqlite_url(old)}, or move that file (and its -wal) over {new}"
    )


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """Everything the server needs to know, fixed at start.

    ``roots`` are the directories workspaces must live under (resolved at
    start; default: the current directory). ``agent_env`` is added to the
    agent's environment (used to pass the simulator's settings through).
    ``api_key`` goes to the agent's environment only: it is never stored
    in the database, printed or logged (it is hidden from ``repr``).

    Example:
        >>> s = ServerSettings(token="abc", port=8765)
        >>> s.base_url
        'http://127.0.0.1:8765'
        >>> "abc" in repr(s)
        False
    """

    token: str = field(default_factory=new_token, repr=False)
    host: str = "127.0.0.1"
    port: int = 8765
    database_url: str = field(default_factory=default_database_url)
    roots: tuple[Path, ...] = field(default_factory=lambda: (Path.cwd().resolve(),))
    agent_binary: str | None = None
    agent_env: dict[str, str] = field(default_factory=dict, repr=False)
    api_key: str | None = field(default=None, repr=False)
    simulate: bool = False
    max_concurrent_runs: int = 4
    max_body_bytes: int = 1_048_576
    max_prompt_bytes: int = 262_144
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    subscriber_queue_size: int = 2000
    batch_max_events: int = 500
    shutdown_grace_seconds: float = 10.0
    ws_ping_interval: float = 20.0
    run_timeout: float | None = None
    idle_timeout: float | None = None
    permission_timeout: float = 900.0
    """Seconds an ACP chat's permission request, question or plan waits for an answer in the
    page; then it is rejected (skipped) and its record says so (docs/server.md)."""
    session_idle_seconds: float = SESSION_IDLE_SECONDS
    session_max_seconds: float = SESSION_MAX_SECONDS
    session_check_interval: float = 30.0
    """Seconds between two checks that a WebSocket's session is still live (it expired, or
    another server sharing the database signed it out); a logout here closes it at once."""
    printed_code_seconds: float = 600.0
    """Seconds the sign-in code ``serve`` prints is good for when its stdout is not a terminal
    (a log file or a journal, read by others later); on a terminal it is good until used."""
    login_failure_burst: int = 10
    login_failure_refill_seconds: float = 5.0
    # The store (docs/server.md, "When the database is unavailable" and "Size limits").
    store_busy_timeout: float = 30.0
    store_connect_timeout: float = 10.0
    """PostgreSQL: seconds a new connection may take (a host that stops answering); then the
    request is the database's 503. Also how soon an open connection whose host went silent
    while it waited for an answer or idled is declared dead (TCP keepalive: ``store/engine.py``:
    ``KeepAlive``; data sent and not acknowledged is left to ``store_statement_timeout``)."""
    store_statement_timeout: float = 60.0
    """PostgreSQL: seconds one statement's answer may take (the migrations at start excepted);
    then the request is the 503 and the connection is dropped."""
    store_buffer_bytes: int = 64 * 1024 * 1024
    store_buffer_events: int = 50_000
    store_retry_max_delay: float = 5.0
    batch_max_bytes: int = 8 * 1024 * 1024
    max_field_bytes: int = 256 * 1024
    max_page_bytes: int = 4 * 1024 * 1024
    subscriber_queue_bytes: int = 32 * 1024 * 1024
    # Distributed mode (docs/distributed.md): "inprocess" runs agents here; "queue" defers
    # them as jobs to workers (PostgreSQL only).
    dispatch: str = "inprocess"
    queue: str = "runs"
    stalled_after: float = 30.0
    sweep_interval: float = 5.0
    notify_poll_interval: float = 5.0
    dead_owner_check_interval: float = 10.0
    """In-process dispatch: seconds between two looks at the active runs owned by another
    server process of this host; those whose process is gone (killed) are ended
    ``interrupted`` (:mod:`.dispatch.dead_owners`, docs/server.md)."""

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT`` as a browser on this machine would type it.

        A wildcard bind (``0.0.0.0``, ``::``) is no address to open, and no ``Host`` the
        server accepts: the URL names the loopback address of the same family, which it
        accepts (another machine reaches it by a name given with ``--allow-host``).

        Example:
            >>> ServerSettings(token="t", host="0.0.0.0", port=80).base_url
            'http://127.0.0.1:80'
            >>> ServerSettings(token="t", host="::", port=80).base_url
            'http://[::1]:80'
        """
        host = self.host
        if host in WILDCARD_HOSTS:
            host = "::1" if host == "::" else "127.0.0.1"
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"
        return f"http://{host}:{self.port}"

    @property
    def open_url(self) -> str:
        """A URL with the token in it (what ``serve`` printed before one-time codes).

        ``serve`` prints :meth:`login_url` instead: a token in a URL stays in the
        browser's history as a working password.
        """
        return f"{self.base_url}/?token={self.token}"

    def login_url(self, code: str, host: str | None = None) -> str:
        """The URL that signs a browser in with one-time ``code`` (print it once, never log it).

        ``host`` is the ``Host`` header of the request that asked for it, once the Host check
        let it in: when it names this machine (``127.0.0.1``, ``localhost``, ``[::1]``) the
        link names its port, the one the client used (an SSH forward's). Only a plain
        ``name[:port]`` is taken (rebuilt from its parts). Any other name (an
        ``--allow-host`` name, maybe a proxy's that speaks https: the link would say http, and
        the code travel in clear) names :attr:`base_url`, as anything else does.

        Example:
            >>> ServerSettings(token="t", port=1).login_url("c")
            'http://127.0.0.1:1/?code=c'
            >>> s = ServerSettings(token="t", port=1)
            >>> s.login_url("c", "127.0.0.1:19765"), s.login_url("c", "[::1]")
            ('http://127.0.0.1:19765/?code=c', 'http://[::1]/?code=c')
            >>> s.login_url("c", "localhost:1@evil.example"), s.login_url("c", "agent.example")
            ('http://127.0.0.1:1/?code=c', 'http://127.0.0.1:1/?code=c')
        """
        origin = host_origin(host)
        name = origin.rpartition(":")[0] if origin and not origin.endswith("]") and ":" in origin \
            else origin
        if origin and name in {h.lower() for h in LOOPBACK_HOSTS}:
            return f"http://{origin}/?code={code}"
        return f"{self.base_url}/?code={code}"

    def host_allowlist(self) -> frozenset[str]:
        """Host names (no port) accepted in the ``Host`` header.

        Example:
            >>> "localhost" in ServerSettings(token="t").host_allowlist()
            True
        """
        hosts = {h.lower() for h in LOOPBACK_HOSTS}
        if self.host not in WILDCARD_HOSTS:
            hosts.add(self.host.lower().strip("[]"))
        hosts.update(h.lower().strip("[]") for h in self.allowed_hosts)
        return frozenset(hosts)
