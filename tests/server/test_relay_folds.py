"""The relay's kept folds (review of 2026-11-24, wave 10): one is reused only for the very
next records, dropped when records pass with nobody watching, and forgotten when a chat's
last subscriber leaves (they grew forever). End to end on PostgreSQL:
tests/distributed/test_relay_changes.py."""

from __future__ import annotations

import asyncio
from pathlib import Path

from cursor_agent_api.server.hub import Hub
from cursor_agent_api.server.notify import Relay
from cursor_agent_api.server.settings import ServerSettings
from cursor_agent_api.server.store import Store
from cursor_agent_api.server.turns import Refolder


def _relay(tmp_path: Path) -> tuple[Relay, Hub, Refolder]:
    url = f"sqlite+aiosqlite:///{tmp_path}/db.sqlite3"  # never opened
    store, hub = Store(url), Hub()
    relay = Relay(store, hub, ServerSettings(token="t" * 16, database_url=url))
    return relay, hub, Refolder(store, "c", 1024)


def test_a_kept_fold_serves_only_the_records_right_after_it(tmp_path: Path) -> None:
    async def main() -> None:
        relay, hub, kept = _relay(tmp_path)
        hub.subscribe("c")
        relay._refolded["c"] = (kept, 10)
        assert relay._refolder("c", 11) is kept
        assert relay._refolder("c", 12) is not kept, "a gap: records it never folded"
        assert relay._refolder("c", 10) is not kept, "a read again: records it folded already"

    asyncio.run(main())


def test_records_passing_unwatched_drop_the_kept_fold(tmp_path: Path) -> None:
    async def main() -> None:
        relay, _hub, kept = _relay(tmp_path)
        relay.published["c"] = 10
        relay._refolded["c"] = (kept, 10)
        relay._skip_to("c", 14)
        assert relay.published["c"] == 14
        assert "c" not in relay._refolded
        assert relay._refolder("c", 15) is not kept

    asyncio.run(main())


def test_the_folds_of_chats_nobody_watches_are_forgotten(tmp_path: Path) -> None:
    async def main() -> None:
        relay, hub, kept = _relay(tmp_path)
        sub = hub.subscribe("a")
        hub.subscribe("b")
        relay._refolded.update({"a": (kept, 1), "b": (kept, 1), "c": (kept, 1)})
        relay._forget_unwatched()
        assert sorted(relay._refolded) == ["a", "b"]
        hub.unsubscribe(sub)
        relay._forget_unwatched()
        assert sorted(relay._refolded) == ["b"]

    asyncio.run(main())
