"""The LISTEN connections of PostgreSQL (:mod:`cursor_agent_api.server.pg_listen`) come back
once, and only once, when they fail — found by a review with a misbehaving database:

* a connection whose ping failed was closed while the next one opened, and its end (asyncpg
  tells it a moment after ``close()``) reached the next connection, which took it for its own
  end, was closed, told its end to the next… — the API server reconnected ~7 times a second
  for ever, each time reading every chat's last seq;
* the workers' LISTEN connection for answers was never pinged: a connection that stopped
  answering (a firewall dropped it) made every answer to the worker's ACP runs a 503, and the
  worker said nothing.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pg_proxy import PgProxy, can_vanish, proxied
from server_helpers import PG_ENV

from cursor_agent_api.server.dispatch.answers import ANSWERS_CHANNEL, AnswerListener, encode_answer
from cursor_agent_api.server.hub import Hub
from cursor_agent_api.server.notify import LISTEN_APPLICATION_NAME, Relay
from cursor_agent_api.server.settings import ServerSettings
from cursor_agent_api.server.store import Store

pytestmark = pytest.mark.skipif(not os.environ.get(PG_ENV), reason=f"needs PostgreSQL ({PG_ENV})")


@pytest.fixture
def warnings() -> Iterator[list[str]]:
    """The server logger's warnings while the test runs."""
    got: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            got.append(record.getMessage())

    logger = logging.getLogger("cursor_agent_api.server")
    handler, level = Keep(logging.WARNING), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield got
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


async def _listen_connections(store: Store) -> int:
    conn = await store.listen("unused", lambda _p: None, lambda: None)
    try:
        return int(await conn.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 "
            "AND datname = current_database()", LISTEN_APPLICATION_NAME))
    finally:
        await conn.close()


async def _quick_relay(db_url: str, tmp_path: Path) -> tuple[Store, Relay]:
    """A started store, and a relay on it (not started) pinging after 0.05 s of quiet."""
    store = Store(db_url)
    await store.start()
    return store, Relay(store, Hub(), ServerSettings(database_url=db_url, roots=(tmp_path,),
                                                     notify_poll_interval=0.05))


def test_a_failed_ping_reconnects_once(db_url: str, tmp_path: Path, warnings: list[str]) -> None:
    """The relay's ping fails once: one reconnect, then the new connection is pinged (it is
    not taken for lost because the old one ended after it opened)."""

    async def main() -> None:
        store, relay = await _quick_relay(db_url, tmp_path)
        pings = 0
        settled = asyncio.Event()
        real_ping, real_reconnected = store.ping, relay.reconnected

        async def ping(conn: Any) -> None:
            nonlocal pings
            pings += 1
            if pings == 1:
                raise TimeoutError  # as when the host stopped answering
            await real_ping(conn)
            if pings >= 6:  # five pings answered after the failure
                settled.set()

        async def reconnected() -> None:
            await real_reconnected()
            if relay.reconnects >= 5:  # the loop: it would never ping again
                settled.set()

        store.ping = ping  # type: ignore[method-assign]
        relay.reconnected = reconnected  # type: ignore[method-assign]
        await relay.start()
        try:
            await asyncio.wait_for(settled.wait(), 60)
            assert relay.reconnects == 1, warnings
            assert await _listen_connections(store) == 1
        finally:
            await relay.close()
            await store.close()

    asyncio.run(main())
    assert [w for w in warnings if "is back" in w] == ["the LISTEN connection is back"], warnings


def test_a_slow_ping_is_not_a_lost_connection(db_url: str, tmp_path: Path, warnings: list[str]) -> None:
    """A ping answered later than a short quiet interval (here 0.05 s: a loaded machine, a
    busy database) is an answer: the ping waited only as long as the interval, and the
    fresh clone's run saw a second reconnect that nothing had caused."""

    async def main() -> None:
        store, relay = await _quick_relay(db_url, tmp_path)
        pings = 0
        settled = asyncio.Event()
        real_ping = store.ping

        async def slow_ping(conn: Any) -> None:
            nonlocal pings
            await asyncio.sleep(0.3)  # six intervals, well within the ping's least wait
            await real_ping(conn)
            pings += 1
            if pings >= 3:
                settled.set()

        store.ping = slow_ping  # type: ignore[method-assign]
        await relay.start()
        try:
            await asyncio.wait_for(settled.wait(), 60)
            assert relay.reconnects == 0, warnings
        finally:
            await relay.close()
            await store.close()

    asyncio.run(main())
    assert warnings == [], warnings


async def _listening_for_answers(
    through: Store, *, ping_interval: float
) -> tuple[AnswerListener, asyncio.Queue[tuple[str, str]], asyncio.Event]:
    """An :class:`AnswerListener` on ``through``, started: the answers it takes (run and
    request ids), and an event set once it is back after a reconnection."""
    answers: asyncio.Queue[tuple[str, str]] = asyncio.Queue()

    async def on_answer(run_id: str, request_id: str, _body: Any) -> None:
        answers.put_nowait((run_id, request_id))

    listener = AnswerListener(through, on_answer)
    listener.ping_interval = ping_interval
    back = asyncio.Event()
    real_reconnected = listener.reconnected

    async def reconnected() -> None:
        await real_reconnected()
        back.set()

    listener.reconnected = reconnected  # type: ignore[method-assign]
    await listener.start()
    return listener, answers, back


def test_a_listen_connection_for_answers_that_stops_answering_is_opened_again(
    db_url: str, warnings: list[str]
) -> None:
    """The worker's LISTEN connection for answers is held (nothing forwarded, the TCP
    connection up): its ping notices, it is opened again, and the next answer is taken —
    with one line in the log each way."""

    async def main(proxy: PgProxy, through: str) -> None:
        store = Store(db_url)
        await store.start()
        listener, answers, back = await _listening_for_answers(Store(through), ping_interval=0.2)
        try:
            await store.notify(ANSWERS_CHANNEL, encode_answer("r1", "q1", {"decision": "reject"}))
            assert await asyncio.wait_for(answers.get(), 30) == ("r1", "q1")
            proxy.hold_open()  # this connection stops answering; a new one would not
            await asyncio.wait_for(back.wait(), 30)
            await store.notify(ANSWERS_CHANNEL, encode_answer("r2", "q2", {"decision": "reject"}))
            assert await asyncio.wait_for(answers.get(), 30) == ("r2", "q2")
            assert listener.reconnects == 1
        finally:
            await listener.close()
            await store.close()

    with proxied(db_url) as (proxy, through):
        asyncio.run(main(proxy, through))
    label = "the LISTEN connection for answers"
    assert [w for w in warnings if w.startswith(label)] == [
        f"{label} failed (TimeoutError); reconnecting", f"{label} is back"], warnings


@pytest.mark.parametrize("how", ["cut", "vanished"])
def test_a_listen_connection_that_ends_says_so_once_and_comes_back(
    db_url: str, warnings: list[str], how: str
) -> None:
    """The LISTEN connection ends without an error of its own (asyncpg tells its end: the
    connection cut, or its host gone without a word and TCP keepalive declaring it dead after
    ``store_connect_timeout``): one line says it was lost, one that it is back. Its loss
    said nothing before (only its health's ``last_error``)."""
    if how == "vanished" and not can_vanish():
        pytest.skip("TCP_REPAIR needs CAP_NET_ADMIN")

    async def main(proxy: PgProxy, through: str) -> None:
        store = Store(db_url)
        await store.start()
        # keepalive: silence declared dead after 4 s (KeepAlive.within(1)); no ping meanwhile
        listener, answers, back = await _listening_for_answers(
            Store(through, connect_timeout=1.0), ping_interval=600.0)
        try:
            await asyncio.to_thread(proxy.vanish if how == "vanished" else proxy.release)
            await asyncio.wait_for(back.wait(), 60)
            await store.notify(ANSWERS_CHANNEL, encode_answer("r1", "q1", {"decision": "reject"}))
            assert await asyncio.wait_for(answers.get(), 30) == ("r1", "q1")
            assert listener.reconnects == 1
        finally:
            await listener.close()
            await store.close()

    with proxied(db_url) as (proxy, through):
        asyncio.run(main(proxy, through))
    label = "the LISTEN connection for answers"
    assert [w for w in warnings if w.startswith(label)] == [
        f"{label} was lost; reconnecting", f"{label} is back"], warnings


def test_a_database_away_for_several_retries_is_said_once_each_way(
    db_url: str, warnings: list[str]
) -> None:
    """Audit 15: while the database refused connections, each retry (every 0.1 s … 5 s) logged
    "… failed (…); reconnecting": 7 lines in a 12 s outage, though the docs say once when it
    fails, once when it is back. The retries are now debug lines."""

    async def main(proxy: PgProxy, through: str) -> None:
        listener, _answers, back = await _listening_for_answers(Store(through), ping_interval=0.2)
        attempts = 0
        real_connect = listener._connect

        async def connect() -> Any:
            nonlocal attempts
            attempts += 1
            return await real_connect()

        listener._connect = connect  # type: ignore[method-assign]
        try:
            await asyncio.to_thread(proxy.stop)  # its connection cut, new ones refused
            for _ in range(600):  # three refused retries at least (0.1 + 0.2 + 0.4 s apart)
                if attempts >= 3:
                    break
                await asyncio.sleep(0.1)
            assert attempts >= 3, attempts
            await asyncio.to_thread(proxy.start)
            await asyncio.wait_for(back.wait(), 60)
            assert listener.reconnects == 1
        finally:
            await listener.close()

    with proxied(db_url) as (proxy, through):
        asyncio.run(main(proxy, through))
    label = "the LISTEN connection for answers"
    said = [w for w in warnings if w.startswith(label)]
    assert len(said) == 2 and said[0].endswith("; reconnecting") and said[1] == f"{label} is back", said
