"""The dead-owner look (``dispatch/dead_owners.py``) while the database is away: a failure is
logged once for the whole outage, not every ``interval`` (review of 2026-11-25, "self2"), and
once when the looks work again."""

from __future__ import annotations

import asyncio
import logging

import pytest
from sqlalchemy.exc import OperationalError

from cursor_agent_api.server.dispatch.dead_owners import DeadOwnerWatch


def test_an_outage_is_logged_once_and_its_end_once(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        looks = 0
        done = asyncio.Event()

        async def check() -> list[str]:
            nonlocal looks
            looks += 1
            if looks == 8:
                done.set()
            if looks <= 5:  # five looks fail: the database is away
                raise OperationalError("SELECT", {}, Exception("database is locked"))
            return []

        watch = DeadOwnerWatch(check, interval=0.001)
        watch.start()
        await asyncio.wait_for(done.wait(), 60)
        await watch.stop()

    with caplog.at_level(logging.INFO, logger="cursor_agent_api.server"):
        asyncio.run(main())
    said = [r.getMessage() for r in caplog.records if "dead server process" in r.getMessage()]
    assert len(said) == 2, said
    assert "failed (" in said[0] and "said once" in said[0]
    assert said[1].endswith("works again")
