"""Fan-out of committed records to live subscribers, with bounded queues.

The :class:`Hub` keeps, per chat, the set of :class:`Subscriber` s (one per
WebSocket). :meth:`Hub.publish` is called only *after* the records were
committed. Each subscriber has a queue bounded by count and by bytes: when it is full the
subscriber is marked ``overflowed`` and dropped from the hub — the server
never buffers without bound for a slow client; the WebSocket then tells the
client to resync from its last seq (see ``docs/websocket.md``). When the chat is deleted,
:meth:`Hub.chat_deleted` sets each subscriber's ``deleted`` event and drops them: the
WebSocket tells its client and closes.

Nothing here touches the database or a socket.

Example:
    >>> hub = Hub(queue_size=2)
    >>> sub = hub.subscribe("chat")
    >>> hub.publish("chat", [(1, "a"), (2, "b"), (3, "c")])
    >>> sub.overflowed, sub.queue.qsize()
    (True, 2)
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

Message = tuple[int, str]
"""A committed record as it goes out: its seq and its serialized WebSocket message."""


class Subscriber:
    """One live listener of one chat.

    Example:
        >>> s = Subscriber("c", 10)
        >>> s.offer((1, "x")), s.queue.get_nowait()
        (True, (1, 'x'))
    """

    __slots__ = ("chat_id", "deleted", "max_bytes", "overflowed", "queue", "queued_bytes")

    def __init__(self, chat_id: str, queue_size: int, max_bytes: int = 32 * 1024 * 1024,
                 deleted: asyncio.Event | None = None) -> None:
        self.chat_id = chat_id
        self.queue: asyncio.Queue[Message] = asyncio.Queue(maxsize=queue_size)
        self.overflowed = False
        self.max_bytes = max_bytes
        self.queued_bytes = 0
        # set once the chat is deleted (Hub.chat_deleted); a socket's later subscribers share it
        self.deleted = deleted if deleted is not None else asyncio.Event()

    def offer(self, message: Message) -> bool:
        """Queue a message; on a full queue (count or bytes) mark the subscriber overflowed
        and return False."""
        if self.overflowed:
            return False
        size = len(message[1])
        if self.queued_bytes and self.queued_bytes + size > self.max_bytes:
            self.overflowed = True
            return False
        try:
            self.queue.put_nowait(message)
        except asyncio.QueueFull:
            self.overflowed = True
            return False
        self.queued_bytes += size
        return True

    async def get(self) -> Message:
        """The next queued message (and its bytes are no longer counted)."""
        message = await self.queue.get()
        self.queued_bytes -= len(message[1])
        return message


class Hub:
    """Per-chat subscriber sets.

    Example:
        >>> hub = Hub()
        >>> s = hub.subscribe("c"); hub.unsubscribe(s); hub.subscriber_count("c")
        0
    """

    def __init__(self, queue_size: int = 2000, queue_bytes: int = 32 * 1024 * 1024) -> None:
        self.queue_size = queue_size
        self.queue_bytes = queue_bytes
        self._subs: dict[str, set[Subscriber]] = {}

    def subscribe(self, chat_id: str, deleted: asyncio.Event | None = None) -> Subscriber:
        """A new subscriber that receives everything published for the chat from now on
        (``deleted``: the event :meth:`chat_deleted` sets, an earlier subscriber's).

        Example:
            >>> hub = Hub(); first = hub.subscribe("c"); hub.unsubscribe(first)
            >>> later = hub.subscribe("c", first.deleted); hub.chat_deleted("c")
            >>> first.deleted.is_set(), later.deleted is first.deleted
            (True, True)
        """
        sub = Subscriber(chat_id, self.queue_size, self.queue_bytes, deleted)
        self._subs.setdefault(chat_id, set()).add(sub)
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        """Stop delivering to ``sub`` (idempotent)."""
        subs = self._subs.get(sub.chat_id)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self._subs[sub.chat_id]

    def chats(self) -> list[str]:
        """The chats that have subscribers now.

        Example:
            >>> hub = Hub(); _ = hub.subscribe("c"); hub.chats()
            ['c']
        """
        return list(self._subs)

    def subscriber_count(self, chat_id: str) -> int:
        """How many subscribers the chat has now."""
        return len(self._subs.get(chat_id, ()))

    def chat_deleted(self, chat_id: str) -> None:
        """The chat was deleted: each subscriber's ``deleted`` is set and it is dropped.

        Example:
            >>> hub = Hub(); s = hub.subscribe("c"); hub.chat_deleted("c")
            >>> s.deleted.is_set(), hub.subscriber_count("c")
            (True, 0)
        """
        for sub in self._subs.pop(chat_id, ()):
            sub.deleted.set()

    def publish(self, chat_id: str, messages: Sequence[Message]) -> None:
        """Deliver committed messages, in seq order, to every subscriber of the chat."""
        subs = self._subs.get(chat_id)
        if not subs:
            return
        dropped: list[Subscriber] = []
        for sub in subs:
            for m in messages:
                if not sub.offer(m):
                    dropped.append(sub)
                    break
        for sub in dropped:
            self.unsubscribe(sub)
