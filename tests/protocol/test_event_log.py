"""The kept events of a turn (``keep_events=True``): compact as they came, equal when read.

A turn that keeps its events keeps each event decoded from its line as that line (bytes: no
object the garbage collector scans) and builds the event again, once, when it is read. These
tests check what a user sees (the same events, in order, equal, stable once read) and that the
kept log no longer holds the parsed JSON of every event.
"""

from __future__ import annotations

import gc
import pickle
from pathlib import Path

import orjson
import pytest

from cursor_agent_api.protocol import AgentEvent, EventReader, EventType, Transcript, parse_event
from cursor_agent_api.protocol.event_log import EventLog


def delta(i: int) -> bytes:
    return orjson.dumps({"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "text", "text": f"t{i} "}]}, "session_id": "s", "timestamp_ms": i}) + b"\n"


INIT = b'{"type":"system","subtype":"init","session_id":"s","model":"m"}\n'
RESULT = b'{"type":"result","subtype":"success","result":"done","session_id":"s"}\n'


def tracked_containers_kept(n: int) -> int:
    """Tracked objects a Transcript keeping ``n`` delta events holds, beyond one that keeps none."""
    data = INIT + b"".join(delta(i) for i in range(n)) + RESULT
    counts = []
    for keep in (False, True):
        gc.collect()
        before = len(gc.get_objects())
        t = Transcript.from_bytes(data, keep_events=keep)
        gc.collect()
        counts.append(len(gc.get_objects()) - before)
        assert t.event_count == n + 2
        del t
    return counts[1] - counts[0]


def test_kept_events_add_no_tracked_object_per_event() -> None:
    # before: each kept delta held its AgentEvent and orjson's dict, message dict and content
    # list (~4 tracked objects each, scanned again at every full collection)
    assert tracked_containers_kept(2000) < 50


def test_the_kept_events_equal_the_events_read_in_order() -> None:
    lines = [INIT, *(delta(i) for i in range(5)), b"not json\n", RESULT]
    t = Transcript.from_lines([line.rstrip(b"\n") for line in lines])
    expected = [parse_event(line.rstrip(b"\n")) for line in lines]
    assert len(t.events) == len(expected) == 8
    assert t.events == expected
    assert list(t.events) == expected
    assert [e.type for e in t.events][-2:] == [EventType.RAW, EventType.RESULT_SUCCESS]
    assert t.events[1].text == "t0 " and t.events[-1].text == "done"
    assert t.events[1].line == delta(0).rstrip(b"\n")
    assert t.events[1:3] == expected[1:3]
    result = t.to_result()
    assert result.events == expected and len(result.events) == 8


def test_an_event_once_read_is_the_same_object_and_keeps_its_changes() -> None:
    t = Transcript.from_lines([INIT, delta(0), RESULT])
    first = t.events[1]
    assert t.events[1] is first and t.events[-2] is first
    first.data["note"] = "mine"
    assert t.events[1].data["note"] == "mine"
    assert next(iter(t.events[1:2])) is first


def test_events_not_decoded_from_their_line_as_is_are_kept_as_objects() -> None:
    reader = EventReader()
    # a JSON object whose string broke across two lines (joined by the reader), a line too
    # deep, and an event the library made: their data is not their line's JSON
    chunk = (b'{"type":"assistant","message":{"content":[{"type":"text","text":"a\n'
             b'b"}]}}\n' + b'{"a":' + b"[" * 300 + b"]" * 300 + b"}\n")
    events = reader.feed(chunk) + reader.close()
    log = EventLog()
    for event in events:
        log.append(event)
    made = AgentEvent(EventType.ERROR, {"type": "error", "message": "m"}, b"{}")
    log.append(made)
    assert [e.type for e in log] == [EventType.ASSISTANT, EventType.RAW, EventType.ERROR]
    assert list(log) == [*events, made]
    assert log[0] is events[0] and log[2] is made
    assert log[1].data["code"] == "too_deep"


def test_a_log_pickles_compares_and_copies() -> None:
    log = EventLog(parse_event(line) for line in (INIT, delta(1)))
    again = pickle.loads(pickle.dumps(log))
    assert again == log and again == list(log) and log != list(log)[:1]
    copy = log.copy()
    copy.append(parse_event(RESULT))
    assert len(log) == 2 and len(copy) == 3
    assert repr(log) == "EventLog(<2 events>)"
    with pytest.raises(IndexError):
        log[2]


def test_reading_from_the_end_while_events_are_appended_keeps_each_in_its_place() -> None:
    # the turn appends on the loop's thread while the user reads events[-1] on theirs: the
    # event read is put back where it was, not where the end is a moment later
    log = EventLog([parse_event(delta(0))])

    class Racing(list):  # appends one more event between the read and the write back
        def __getitem__(self, i):
            item = super().__getitem__(i)
            if len(self) == 1:
                self.append(delta(1).rstrip(b"\n"))
            return item

    log._items = Racing(log._items)
    assert log[-1].text == "t0 "
    assert [e.text for e in log] == ["t0 ", "t1 "]


def test_copies_of_a_log_are_apart_and_a_source_log_stays_unread() -> None:
    import copy

    log = EventLog(parse_event(line) for line in (INIT, delta(1)))
    shallow = copy.copy(log)
    shallow.append(parse_event(RESULT))
    assert len(log) == 2 and len(shallow) == 3
    built = EventLog(log)
    assert all(type(item) is bytes for item in log._items)  # nothing was decoded to copy it
    assert built == log and copy.deepcopy(log) == log


def test_only_events_read_from_bytes_are_kept_as_lines() -> None:
    # a reused buffer or a missing line would make the kept line wrong or unreadable
    buf = bytearray(b'{"type":"user","message":"AAAA"}')
    from_buffer = parse_event(buf)
    no_line = type(from_buffer).from_dict(from_buffer.to_dict())
    log = EventLog([from_buffer, no_line])
    buf[buf.find(b"AAAA"):buf.find(b"AAAA") + 4] = b"BBBB"
    assert log[0] is from_buffer and log[0].data["message"] == "AAAA"
    assert log[1] is no_line and log[1].raw_type == "user"
    with pytest.raises(TypeError):
        log["a"]  # type: ignore[call-overload]


def test_two_readers_of_one_line_get_the_same_object(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading
    import time

    from cursor_agent_api.protocol import event_log

    log = EventLog([parse_event(delta(0))])
    real = orjson.loads

    def slow_loads(data: bytes) -> object:
        time.sleep(0.05)  # both threads decode at once
        return real(data)

    monkeypatch.setattr(event_log.orjson, "loads", slow_loads)
    got: list[AgentEvent] = []
    readers = [threading.Thread(target=lambda: got.append(log[0])) for _ in range(2)]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join()
    assert got[0] is got[1] is log[0]


def test_a_result_without_kept_events_serializes_as_before() -> None:
    import dataclasses
    import json

    result = Transcript.from_lines([INIT, RESULT], keep_events=False).to_result()
    assert result.events == []
    assert json.loads(orjson.dumps(result))["events"] == []
    assert json.dumps(dataclasses.asdict(result))


def test_a_copied_or_pickled_event_reads_its_text() -> None:
    import copy

    for event in (parse_event(delta(3)), parse_event(b'{"type":"user"}')):
        for again in (copy.copy(event), copy.deepcopy(event),
                      pickle.loads(pickle.dumps(event))):
            assert again.text == event.text and again == event
            assert type(again) is type(event)
    told = AgentEvent(EventType.ASSISTANT, {"type": "assistant"}, text="given")
    assert pickle.loads(pickle.dumps(told)).text == "given"


def _recordings() -> list[Path]:
    data = Path(__file__).parent.parent / "data" / "cursor-real"
    return sorted(data.glob("*.ndjson")) + sorted((data / "fragments").glob("*.ndjson"))


@pytest.mark.parametrize("path", _recordings(), ids=lambda p: p.name)
def test_every_real_recording_keeps_the_events_it_read(path: Path) -> None:
    # read in 4 KiB chunks as a pipe delivers them: what the turn kept, read back later,
    # equals what the reader handed on, event by event (type, data, text, line)
    data = path.read_bytes()
    reader, transcript, seen = EventReader(), Transcript(), []
    for i in range(0, len(data), 4096):
        for event in reader.feed(data[i:i + 4096]):
            seen.append(event)
            transcript.add(event)
    for event in reader.close():
        seen.append(event)
        transcript.add(event)
    kept = pickle.loads(pickle.dumps(transcript.to_result())).events
    assert len(seen) > 0 and len(kept) == len(seen)
    for read, again in zip(seen, kept, strict=True):
        assert again == read and again.line == read.line and again.type is read.type
