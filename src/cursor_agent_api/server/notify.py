"""The relay: records committed by any process reach this server's WebSockets.

In distributed mode, workers write a chat's records straight into the shared database.
Every commit of records makes PostgreSQL notify ``cursor_agent_api_events`` with
``"<chat> <first seq> <last seq>"`` (a trigger, migration ``0005``; ids only). The relay
LISTENs on a connection of its own; for each notification about a chat this server has
subscribers for, it reads the chat's new records from the store and publishes them to
the :class:`~.hub.Hub`, in seq order — so the WebSocket's replay/live merge
(:mod:`.websocket`) delivers each record exactly once, as for local runs.

* **What was published** is kept per chat (``published``): the next read starts after it.
  It starts, at connection, at each chat's ``last_seq`` (nobody is subscribed yet), and
  a chat created later starts at 0.
* **A notification may name records a socket replayed already** (committed just before
  it subscribed): the relay reads from ``min(published, first - 1)``, and the socket
  drops what it sent (``seq <= last``).
* **The changes** each record made to its run's turn (the page applies them) come from the
  chat's fold of what was published (a :class:`~.turns.Refolder`), kept while the
  records it publishes follow on from it with no gap; it is rebuilt from the store
  otherwise (records that came while nobody watched were never folded), and forgotten
  once the chat has no subscriber. ``published`` itself (one number per chat, as the
  baseline holds for every chat) stays: it is where a new subscriber's live records start.
* **A lost LISTEN connection** is opened again (backoff up to 5 s; :mod:`.pg_listen`); then
  every chat with subscribers is caught up from what was published.
* **A deleted chat** (``"<chat> deleted"``, sent by the delete's commit) has its sockets
  closed (:meth:`~.hub.Hub.chat_deleted`) and is forgotten; so has a subscribed chat the
  catch-up no longer finds (a notification missed).
* **A slow poll** (``notify_poll_interval`` without a notification) compares the
  subscribed chats' ``last_seq`` with what was published and catches up: a missed
  notification costs a few seconds, never a record. The LISTEN connection is pinged first
  (one that does not answer within as long is opened again).

Example:
    >>> parse_payload("0b7c 4 9")
    ('0b7c', 4, 9)
    >>> parse_payload("nonsense") is None
    True
    >>> deleted_chat("0b7c deleted"), deleted_chat("0b7c 4 9")
    ('0b7c', None)
"""

from __future__ import annotations

import logging

from .hub import Hub
from .log import record_message
from .pg_listen import PgListener
from .settings import ServerSettings
from .store import Store, cut_record
from .store.queue_schema import CHAT_DELETED, EVENTS_CHANNEL
from .turns import Refolder

logger = logging.getLogger("cursor_agent_api.server")

LISTEN_APPLICATION_NAME = "cursor-agent-api-listen"
"""The LISTEN connection's ``application_name`` (shown in ``pg_stat_activity``)."""

_PAGE = 500


def parse_payload(payload: str) -> tuple[str, int, int] | None:
    """``(chat id, first seq, last seq)`` of a notification, or ``None`` if malformed."""
    parts = payload.split(" ")
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
        return None
    return parts[0], int(parts[1]), int(parts[2])


def deleted_chat(payload: str) -> str | None:
    """The chat id of a notification that the chat was deleted, else ``None``."""
    chat_id, _, what = payload.partition(" ")
    return chat_id if what == CHAT_DELETED and chat_id else None


class Relay(PgListener):
    """LISTEN, read, publish (see the module doc)."""

    def __init__(self, store: Store, hub: Hub, settings: ServerSettings) -> None:
        super().__init__(store, EVENTS_CHANNEL, label="the LISTEN connection",
                         application_name=LISTEN_APPLICATION_NAME,
                         ping_interval=settings.notify_poll_interval)
        self.hub = hub
        self.settings = settings
        self.published: dict[str, int] = {}
        self._refolded: dict[str, tuple[Refolder, int]] = {}

    async def start(self) -> None:
        """Connect and take the baseline (before any socket subscribes), then run."""
        await self.open("notify-relay")

    async def opened(self) -> None:
        await self._baseline()

    async def reconnected(self) -> None:
        await self._catch_up(baseline=True)  # what came while the connection was lost

    async def _baseline(self) -> None:
        rows = await self.store.chat_last_seqs()
        subscribed = set(self.hub.chats())
        for chat_id, last_seq in rows:
            if chat_id not in subscribed:  # subscribed ones keep theirs: they are caught up from it
                self._skip_to(chat_id, int(last_seq))

    async def idle(self) -> None:
        await self._catch_up()  # a notification missed costs a poll interval, never a record
        self._forget_unwatched()

    async def received(self, payloads: list[str]) -> None:
        wanted: dict[str, tuple[int, int]] = {}
        for payload in payloads:
            gone = deleted_chat(payload)
            if gone is not None:
                wanted.pop(gone, None)
                self._forget(gone)
                continue
            parsed = parse_payload(payload)
            if parsed is None:
                continue
            chat_id, lo, hi = parsed
            prev = wanted.get(chat_id)
            wanted[chat_id] = (min(lo, prev[0]), max(hi, prev[1])) if prev else (lo, hi)
        for chat_id, (lo, hi) in wanted.items():
            if self.hub.subscriber_count(chat_id):
                await self._publish_after(chat_id, min(self.published.get(chat_id, 0), lo - 1))
            else:
                self._skip_to(chat_id, hi)
        self._forget_unwatched()

    # ---- reading and publishing ------------------------------------------------------

    async def _catch_up(self, *, baseline: bool = False) -> None:
        """Publish what each subscribed chat has beyond what was published."""
        subscribed = self.hub.chats()
        if baseline:
            await self._baseline()
        if not subscribed:
            return
        rows = await self.store.chat_last_seqs(subscribed)
        for chat_id in set(subscribed) - {chat_id for chat_id, _ in rows}:
            self._forget(chat_id)  # deleted
        for chat_id, last_seq in rows:
            after = self.published.get(chat_id, 0)
            if int(last_seq) > after:
                await self._publish_after(chat_id, after)

    def _forget(self, chat_id: str) -> None:
        """The chat was deleted: its sockets closed, what was kept of it dropped."""
        self.hub.chat_deleted(chat_id)
        self.published.pop(chat_id, None)
        self._refolded.pop(chat_id, None)

    def _skip_to(self, chat_id: str, seq: int) -> None:
        """Nobody watches the chat: what was published moves to ``seq`` without a read; the
        kept fold, which did not see those records, is dropped."""
        if seq > self.published.get(chat_id, 0):
            self.published[chat_id] = seq
            self._refolded.pop(chat_id, None)

    def _forget_unwatched(self) -> None:
        """Drop the kept folds of the chats whose last subscriber left."""
        for chat_id in [c for c in self._refolded if not self.hub.subscriber_count(c)]:
            del self._refolded[chat_id]

    def _refolder(self, chat_id: str, first_seq: int) -> Refolder:
        """The chat's fold of what was published, to attach each record's changes (the page
        applies them): kept while each read follows on from the last one read (no gap, no
        record read twice), rebuilt from the store otherwise."""
        kept = self._refolded.get(chat_id)
        if kept is not None and first_seq == kept[1] + 1:
            return kept[0]
        return Refolder(self.store, chat_id, self.settings.max_field_bytes)

    async def _publish_after(self, chat_id: str, after: int) -> None:
        # One query per page (new records are few and fresh); cut as the local log cuts them.
        limit = self.settings.max_field_bytes
        while True:
            recs = await self.store.events_after(chat_id, after, _PAGE)
            if recs:
                refold = self._refolder(chat_id, recs[0].seq)
                messages = [(r.seq, record_message(cut_record(r, limit), await refold.changes(r)))
                            for r in recs]
                self._refolded[chat_id] = (refold, recs[-1].seq)
                self.hub.publish(chat_id, messages)
                after = recs[-1].seq
                self.published[chat_id] = max(self.published.get(chat_id, 0), after)
            if len(recs) < _PAGE:
                return
