"""Framing: chunks -> lines, with bounded memory."""

from __future__ import annotations

from cursor_agent_api.protocol import EventReader, EventType, LineFramer, LineTooLong, Tail


def test_split_on_newline_only_and_crlf() -> None:
    f = LineFramer()
    assert f.feed(b"a\rb\nc\r\n\n  \nd") == [b"a\rb", b"c"]
    assert f.close() == [Tail(b"d")]


def test_utf8_character_split_across_chunks() -> None:
    data = '{"type":"assistant","text":"héllo → 世界 🎉","timestamp_ms":1}\n'.encode()
    reader = EventReader()
    events = []
    for i in range(len(data)):
        events += reader.feed(data[i : i + 1])
    assert [e.text for e in events] == ["héllo → 世界 🎉"]


def test_line_over_limit_becomes_error_and_stream_goes_on() -> None:
    reader = EventReader(max_line_bytes=100)
    events = reader.feed(b'{"type":"user"}\n' + b"x" * 60)
    events += reader.feed(b"y" * 60)  # past the limit now: dropped as it arrives
    assert reader._framer.buffered == 0
    events += reader.feed(b"z" * 1000 + b'\n{"type":"result","subtype":"success"}\n')
    assert [e.type for e in events] == [EventType.USER, EventType.ERROR, EventType.RESULT_SUCCESS]
    err = events[1]
    assert err.data["code"] == "line_too_long" and err.data["size"] == 1120
    assert "max_line_bytes" in (err.text or "")
    assert reader.oversize_lines == 1


def test_whole_line_over_limit_in_one_chunk() -> None:
    f = LineFramer(max_line_bytes=3)
    assert f.feed(b"abcd\nab\n") == [LineTooLong(4, 3), b"ab"]


def test_over_limit_tail_at_close() -> None:
    f = LineFramer(max_line_bytes=3)
    assert f.feed(b"abcdef") == []
    assert f.close() == [LineTooLong(6, 3)]


def test_truncated_last_line_is_raw() -> None:
    reader = EventReader()
    assert reader.feed(b'{"type":"user"}\n{"type":"resu') != []
    (tail,) = reader.close()
    assert tail.type is EventType.RAW
    assert tail.raw == '{"type":"resu'
    assert reader.raw_lines == 1


def test_complete_json_without_final_newline_is_an_event() -> None:
    reader = EventReader()
    reader.feed(b'{"type":"result","subtype":"success","result":"x"}')
    (event,) = reader.close()
    assert event.type is EventType.RESULT_SUCCESS


def test_twenty_megabyte_line() -> None:
    content = "0123456789abcdef" * (20 * 1024 * 1024 // 16)
    line = (
        b'{"type":"tool_call","subtype":"completed","call_id":"c","tool_call":{"readToolCall":'
        b'{"args":{"path":"big"},"result":{"success":{"content":"' + content.encode()
        + b'"}}}}}\n'
    )
    assert len(line) > 20 * 1024 * 1024
    reader = EventReader()
    events = []
    for i in range(0, len(line), 65536):
        events += reader.feed(line[i : i + 65536])
    (event,) = events
    tc = event.tool_call
    assert tc is not None and tc.content is not None and len(tc.content) == len(content)


def _tool_line(stdout: str) -> bytes:
    import orjson

    return orjson.dumps({"type": "tool_call", "subtype": "completed", "call_id": "c1",
                         "tool_call": {"shellToolCall": {"args": {"command": "ls"}, "result": {
                             "success": {"exitCode": 0, "stdout": stdout, "stderr": ""}}}}})


def test_raw_newline_inside_a_json_string_is_repaired() -> None:
    # What one report shows: a newline written raw inside a string splits the line.
    line = _tool_line("a\nb\nc").replace(b"\\n", b"\n")
    assert line.count(b"\n") == 2
    reader = EventReader()
    events = reader.feed(b'{"type":"user"}\n' + line + b'\n{"type":"result","subtype":"success"}\n')
    assert [e.type for e in events] == [EventType.USER, EventType.TOOL_CALL_COMPLETED,
                                        EventType.RESULT_SUCCESS]
    tc = events[1].tool_call
    assert tc is not None and tc.stdout == "a\nb\nc"
    assert events[1].raw == line.decode()  # the original bytes, as received
    assert (reader.object_lines, reader.raw_lines) == (3, 0)


def test_repair_across_chunks_and_at_close() -> None:
    line = _tool_line("x\ny").replace(b"\\n", b"\n")
    reader = EventReader()
    events = []
    for i in range(len(line)):
        events += reader.feed(line[i : i + 1])
    events += reader.close()  # no final newline: the tail completes the object
    assert [e.type for e in events] == [EventType.TOOL_CALL_COMPLETED]


def test_a_malformed_object_line_stays_raw_and_keeps_its_place() -> None:
    reader = EventReader()
    events = reader.feed(b'{"type": "tool_call", "payload": {"x": 1}\n{"type":"user"}\n')
    assert [e.type for e in events] == [EventType.RAW, EventType.USER]
    assert events[0].raw == '{"type": "tool_call", "payload": {"x": 1}'
    events = reader.feed(b'{"broken"\n')
    assert events == []  # held: the next line may complete it
    (last,) = reader.close()
    assert last.type is EventType.RAW and last.raw == '{"broken"'
    assert (reader.object_lines, reader.raw_lines) == (1, 2)


def test_lines_that_never_make_an_object_come_out_raw_one_by_one() -> None:
    reader = EventReader()
    lines = [b"{ not json " + str(i).encode() for i in range(20)]
    events = reader.feed(b"\n".join(lines) + b"\n") + reader.close()
    assert [e.raw for e in events] == [line.decode() for line in lines]
    assert all(e.type is EventType.RAW for e in events)
    assert reader.raw_lines == 20
