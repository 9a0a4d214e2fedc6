"""A step of the server's start-up that the database fails is named (``StartError``: ``serve``
says it in one line, ``tests/distributed/test_serve_start_silent_host.py``), and what the
steps before it opened is closed: every connection, the store, the job queue's pool, the
LISTEN connections. When the relay of ``--dispatch queue`` could not listen, the job queue's
pool was left open (the start's error came out of the dispatcher before it was kept)."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest
from pg_proxy import proxied
from sqlalchemy.exc import ArgumentError, InvalidRequestError, ProgrammingError, StatementError

from cursor_agent_api.server import ServerSettings, create_app
from cursor_agent_api.server.app import StartError
from cursor_agent_api.server.runs import RunManager
from cursor_agent_api.server.store import StoreUnavailableError

ENDED_WITHIN = 60.0
"""A hang's limit only, for the connections to end once the start failed."""


def _settings(db_url: str, tmp_path: Path, **changes: object) -> ServerSettings:
    settings = ServerSettings(token="t" * 16, database_url=db_url, roots=(tmp_path,), simulate=True)
    return dataclasses.replace(settings, **changes)  # type: ignore[arg-type]


def test_a_relay_that_cannot_listen_fails_the_start_with_every_connection_closed(
        db_url: str, tmp_path: Path) -> None:
    if not db_url.startswith("postgresql"):
        pytest.skip("the job queue needs PostgreSQL")
    with proxied(db_url) as (proxy, through):
        app = create_app(_settings(through, tmp_path, dispatch="queue", store_connect_timeout=1.0,
                                   store_statement_timeout=2.0))

        async def start() -> BaseException:
            await app.state.store.start()  # as serve does; then the host goes silent at the LISTEN
            proxy.hold_on(b"cursor-agent-api-listen")
            try:
                async with app.router.lifespan_context(app):
                    pass  # pragma: no cover - the start-up fails
            except Exception as e:
                return e
            raise AssertionError("the start-up did not fail")  # pragma: no cover

        error = asyncio.run(start())
        assert proxy.holding, "the host never went silent: the relay did not connect"
        # the store's, the job queue's pool's and the sign-outs' connections: all closed
        assert proxy.clients_ended(ENDED_WITHIN), "a connection of the failed start is still open"
    assert isinstance(error, StartError), repr(error)
    assert error.step == "the LISTEN connection for the workers' records (the relay)", error.step
    assert isinstance(error.cause, TimeoutError), repr(error.cause)


def test_a_lasting_database_error_at_the_recovery_fails_the_start_named(
        db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not one that may go away by itself (that one is retried in the background, the server
    serving: test_start_up.py): the database refused the statement (here, as a role without
    the right would be refused)."""

    async def refused(self: RunManager) -> list[str]:
        raise ProgrammingError("UPDATE runs …", {}, Exception("permission denied for table runs"))

    monkeypatch.setattr(RunManager, "recover", refused)
    app = create_app(_settings(db_url, tmp_path))

    async def start() -> None:
        await app.state.start.start()

    with pytest.raises(StartError) as failed:
        asyncio.run(start())
    assert failed.value.step == "marking the runs a previous server left active interrupted"
    assert str(failed.value).endswith("the database refused the write (ProgrammingError: Exception)")
    assert "UPDATE" not in str(failed.value)  # (never the SQL)
    with pytest.raises(StoreUnavailableError, match="the database is closed"):
        app.state.store.engine  # noqa: B018 - closed: the engine is gone


@pytest.mark.parametrize("bug", [
    ArgumentError("a bad argument"),
    InvalidRequestError("not a valid request"),
    StatementError("a bad parameter", "UPDATE runs …", {}, TypeError("not a str")),
    KeyError("a bug"),
], ids=lambda bug: type(bug).__name__)
def test_a_bug_in_a_step_is_not_called_the_databases_failure(
        bug: Exception, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLAlchemy's errors of its own are the program's bugs, not the database's: raised as
    they are (a traceback), not "… failed on the database …" without their text (review 32)."""

    async def buggy(self: RunManager) -> list[str]:
        raise bug

    monkeypatch.setattr(RunManager, "recover", buggy)
    app = create_app(_settings(db_url, tmp_path))

    async def start() -> None:
        await app.state.start.start()

    with pytest.raises(type(bug)) as raised:
        asyncio.run(start())
    assert raised.value is bug
    with pytest.raises(StoreUnavailableError, match="the database is closed"):
        app.state.store.engine  # noqa: B018 - closed all the same
