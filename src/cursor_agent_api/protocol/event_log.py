"""The events a turn keeps (``keep_events=True``): as compact as they came, equal when read.

:class:`EventLog` is the sequence behind :attr:`Transcript.events
<cursor_agent_api.protocol.transcript.Transcript.events>`, ``StreamingResponse.events`` and
:attr:`AgentResult.events <cursor_agent_api.protocol.result.AgentResult.events>`. An event the
reader decoded from its line as is (a :class:`~.events.LineEvent` read from ``bytes``: nearly
all of them) is kept as that line alone; the event is built again from it the first time it
is read, and that object is then kept in its place: reading ``log[i]`` twice gives the same
object, and changes made to it stay. Any other event (a line joined to the next, one too
deep, one the library made) is kept as the object itself.

Why: a kept event's parsed JSON is three or four objects the garbage collector scans again at
every full collection, which made keeping the events cost as much as the whole rest of the
stream (BENCHMARKS.md, "Kept events as their lines"). A line is one ``bytes`` object, which
the collector does not track, and about a sixth of the memory (197 bytes for a delta event,
against 1,214). The cost moves to reading: the first read of a kept event decodes its line
again and keeps the object, which the collector then scans as before.

What users see is the same events, equal (``==``) and in order; what differs: the events a
stream yields, its ``events``, the transcript's and the result's are equal but not the same
objects (each log builds its own when read), so a change made to one event's ``data`` is not
seen in the others.

Example:
    >>> from .events import parse_event
    >>> log = EventLog([parse_event(b'{"type":"result","subtype":"success","result":"4"}')])
    >>> len(log), log[0].text, log[0] is log[0], log == [parse_event('{"type":"result",'
    ...     '"subtype":"success","result":"4"}')]
    (1, '4', True, True)
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator, Sequence
from typing import overload

import orjson

from .events import AgentEvent, LineEvent, classify

__all__ = ["EventLog"]


class EventLog(Sequence[AgentEvent]):
    """A turn's kept events: each :class:`~.events.LineEvent` as its line until it is read.

    ``append``/``extend`` add events; indexing, slicing, ``len``, iteration and ``==`` (with
    any sequence of events) read them as a list would. ``copy()`` is a new log of the same
    events: those already read are shared, the others are built apart when read.

    Example:
        >>> from .events import parse_event
        >>> log = EventLog()
        >>> log.extend([parse_event('{"type":"user"}'), parse_event("banner")])
        >>> [e.raw_type for e in log], log[1:] == [parse_event("banner")]
        (['user', 'raw'], True)
    """

    __slots__ = ("_items",)

    def __init__(self, events: Iterable[AgentEvent] = ()) -> None:
        self._items: list[bytes | AgentEvent] = []
        self.extend(events)

    def append(self, event: AgentEvent) -> None:
        """Keep one more event (a line event as its line)."""
        line = event.line
        self._items.append(line if event.__class__ is LineEvent and line.__class__ is bytes
                           else event)

    def extend(self, events: Iterable[AgentEvent]) -> None:
        """Keep these events, in order (another log's as they are kept there, unread)."""
        if isinstance(events, EventLog):
            self._items.extend(events._items)
            return
        self._items.extend([e.line if e.__class__ is LineEvent and e.line.__class__ is bytes
                            else e for e in events])

    def truncate(self, length: int) -> None:
        """Keep only the first ``length`` events (a hand-off that a Ctrl-C cut short is
        written again from there).

        Example:
            >>> from .events import parse_event
            >>> log = EventLog([parse_event("a"), parse_event("b")])
            >>> log.truncate(1); len(log)
            1
        """
        del self._items[length:]

    def copy(self) -> EventLog:
        """A new log of the same events (what a result keeps of its turn)."""
        return EventLog(self)

    __copy__ = copy

    def _event(self, i: int) -> AgentEvent:
        items = self._items
        if i < 0:  # from the end as it is now: another thread may append meanwhile
            i += len(items)
            if i < 0:
                raise IndexError("EventLog index out of range")
        item = items[i]
        if isinstance(item, AgentEvent):
            return item
        data = orjson.loads(item)
        event = LineEvent(classify(data), data, item)
        # read once: this object from now on. Two threads reading the same line at once keep
        # the first object put back (no thread switch between the test and the store: no call
        # and no backward jump between them in CPython's bytecode)
        if items[i] is item:
            items[i] = event
        return items[i]  # type: ignore[return-value]

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> AgentEvent: ...

    @overload
    def __getitem__(self, index: slice) -> list[AgentEvent]: ...

    def __getitem__(self, index: int | slice) -> AgentEvent | list[AgentEvent]:
        if isinstance(index, slice):
            return [self._event(i) for i in range(*index.indices(len(self._items)))]
        return self._event(operator.index(index))

    def __iter__(self) -> Iterator[AgentEvent]:
        i = 0
        while i < len(self._items):
            yield self._event(i)
            i += 1

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (EventLog, list, tuple)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=False))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"EventLog(<{len(self._items)} events>)"

    def __getstate__(self) -> tuple[list[bytes | AgentEvent]]:
        return (self._items,)  # never empty: pickle skips __setstate__ for a false state

    def __setstate__(self, state: tuple[list[bytes | AgentEvent]]) -> None:
        (self._items,) = state
