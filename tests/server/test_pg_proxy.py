"""The test proxy itself (``pg_proxy.py``): what the tests that use it rely on."""

from __future__ import annotations

import asyncio

import pytest
from pg_proxy import can_vanish, proxied
from sqlalchemy.engine import make_url

from cursor_agent_api.database_urls import libpq_url


def test_vanish_after_a_connection_through_the_proxy_ended(db_url: str) -> None:
    # the proxy kept an ended connection's writers: vanish() asked their closed sockets for
    # their address (OSError EBADF)
    if make_url(db_url).get_backend_name() != "postgresql":
        pytest.skip("a proxy to PostgreSQL")
    if not can_vanish():
        pytest.skip("TCP_REPAIR needs CAP_NET_ADMIN")
    import asyncpg  # type: ignore[import-untyped]

    async def once(url: str) -> None:
        conn = await asyncpg.connect(libpq_url(url))
        await conn.close()

    with proxied(db_url) as (proxy, through):
        asyncio.run(once(through))
        assert len(proxy.goodbyes()) == 1  # (waits until the proxy saw it end)
        proxy.vanish()
        asyncio.run(once(through))  # the proxy still forwards new connections
