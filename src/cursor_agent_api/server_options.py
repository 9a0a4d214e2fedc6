"""The rules of ``serve``'s and ``worker``'s options that read only their text or number: the
token's, the bind addresses' kinds, the heartbeat's longest period.

They live outside the server package (importing one of its modules imports FastAPI, uvicorn,
SQLAlchemy's ORM and the app: about a second), so that the commands refuse a wrong option
before they import the server (``tests/cli/test_lazy_imports.py``); the server uses the same
names (:mod:`.server.settings`, :mod:`.server.store.engine`), each rule written once. The
database URL's rules are :mod:`.database_urls`'.

Example:
    >>> check_token("short")
    'the token must be at least 16 characters long (it is 5)'
    >>> heartbeat_problem(10.0) is None
    True
"""

from __future__ import annotations

MIN_TOKEN_LENGTH = 16
"""``serve`` refuses a shorter ``--token``."""

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")

WILDCARD_HOSTS = ("0.0.0.0", "::", "")
"""Bind addresses meaning "every interface": never a ``Host`` a browser sends (not allowed),
and not an address to open (:attr:`~.server.settings.ServerSettings.base_url` names the
loopback one)."""

LIVE_WITHIN = 60.0
"""Seconds since its last heartbeat within which a worker counts as running: for the refusal
to migrate under it, and for ``serve``'s warning beside queue workers. A worker's
``--heartbeat`` (10 s by default) is at most half of it (:data:`LONGEST_HEARTBEAT`)."""

LONGEST_STALLED_AFTER = 3600.0
"""The longest ``serve --stalled-after``, and the silence after which a worker that starts
prunes another from the job queue (Procrastinate's ``stalled_worker_timeout``): never one the
API servers do not take for lost yet, whatever their ``--stalled-after`` (a fixed 30 s pruned a
worker paused for 35 s, whose runs the sweep then interrupted at once: audit 15)."""

LONGEST_HEARTBEAT = LIVE_WITHIN / 2
"""The longest ``--heartbeat`` a worker takes: two of its heartbeats fit in
:data:`LIVE_WITHIN`, so a worker that is running always counts as running (one late
heartbeat included)."""


def check_token(token: str) -> str | None:
    """Why ``token`` cannot be the server's token, or ``None`` if it can.

    Example:
        >>> check_token("short")
        'the token must be at least 16 characters long (it is 5)'
        >>> check_token("x" * 16) is None
        True
        >>> check_token("x" * 15 + " ")
        'the token must be printable ASCII without spaces (it travels in an HTTP header)'
    """
    if len(token) < MIN_TOKEN_LENGTH:
        return f"the token must be at least {MIN_TOKEN_LENGTH} characters long (it is {len(token)})"
    if not token.isascii() or not token.isprintable() or any(c.isspace() for c in token):
        return "the token must be printable ASCII without spaces (it travels in an HTTP header)"
    return None


def heartbeat_problem(heartbeat: float) -> str | None:
    """Why a worker cannot beat every ``heartbeat`` seconds, or ``None`` if it can.

    Example:
        >>> heartbeat_problem(30.0) is None
        True
        >>> heartbeat_problem(31.0)  # doctest: +ELLIPSIS
        '--heartbeat 31 is over 30: a worker counts as running for 60 s after its last ...'
    """
    if not heartbeat <= LONGEST_HEARTBEAT:  # (nan too: asyncio.sleep(nan) never wakes)
        return (f"--heartbeat {heartbeat:g} is over {LONGEST_HEARTBEAT:g}: a worker counts as "
                f"running for {LIVE_WITHIN:g} s after its last heartbeat (a schema upgrade waits "
                "for the running ones, docs/distributed.md), so two heartbeats must fit in that "
                "time")
    return None
