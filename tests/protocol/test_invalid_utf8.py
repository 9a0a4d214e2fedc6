"""A JSON line holding bytes that are not UTF-8 is still its event, with U+FFFD for the bytes.

``orjson`` refuses such a line, and the fallback only repaired lone surrogate escapes: one
bad byte in an assistant's text (a Latin-1 ``é``) made the whole line a RAW event, its text
missing from the transcript and the result, with no error. The fallback
(:func:`~cursor_agent_api.protocol.surrogates.loads_repaired`) now decodes the line with
"replace" first, as a UTF-8 decoder shows such bytes; the line is kept as it came.
"""

from __future__ import annotations

import orjson
import pytest

from cursor_agent_api.protocol import EventReader, EventType, Transcript, parse_event
from cursor_agent_api.protocol.acp_codec import RpcNotification, decode_message

ASSISTANT = (b'{"type":"assistant","message":{"role":"assistant","content":'
             b'[{"type":"text","text":"caf\xe9 ok"}]},"session_id":"s1"}')
RESULT = b'{"type":"result","subtype":"success","result":"caf\xe9 \xff\xfe done \\ud83d","session_id":"s1"}'
STREAM = b"\n".join([b'{"type":"system","subtype":"init","session_id":"s1"}', ASSISTANT,
                     RESULT]) + b"\n"


def test_the_reader_keeps_an_event_with_a_byte_that_is_not_utf8() -> None:
    reader = EventReader()
    events = reader.feed(ASSISTANT + b"\n") + reader.close()
    assert [(e.type, e.text) for e in events] == [(EventType.ASSISTANT, "caf\ufffd ok")]
    assert (reader.object_lines, reader.raw_lines) == (1, 0)
    assert events[0].line == ASSISTANT  # the line is kept as it came
    orjson.dumps(events[0].to_dict())  # and the event serializes


def test_parse_event_keeps_it_too() -> None:
    assert parse_event(ASSISTANT).type is EventType.ASSISTANT
    assert parse_event(RESULT).text == "caf\ufffd \ufffd\ufffd done \ufffd"  # and a lone half


def test_a_turn_with_such_bytes_keeps_its_text_and_result() -> None:
    t = Transcript.from_bytes(STREAM)
    result = t.to_result()
    assert result.success and result.result == "caf\ufffd \ufffd\ufffd done \ufffd"
    assert t.text == "caf\ufffd ok"


def test_a_line_split_by_a_raw_newline_with_such_bytes_is_repaired() -> None:
    reader = EventReader()
    events = reader.feed(b'{"type":"assistant","text":"a\xe9\nb"}\n') + reader.close()
    assert [(e.type, e.text) for e in events] == [(EventType.ASSISTANT, "a\ufffd\nb")]


@pytest.mark.parametrize("line", [b'{"type":"user","text":"\xe9', b"\xe9\xff not json",
                                  b'["\xe9"]'])
def test_what_is_not_a_json_object_stays_raw(line: bytes) -> None:
    event = parse_event(line)
    assert event.type is EventType.RAW and event.line == line


def test_an_acp_message_with_such_bytes_is_a_message_not_noise() -> None:
    msg = decode_message(b'{"jsonrpc":"2.0","method":"session/update","params":'
                         b'{"sessionId":"s","update":{"text":"caf\xe9"}}}')
    assert isinstance(msg, RpcNotification)
    assert msg.params["update"]["text"] == "caf\ufffd"


def test_text_read_with_surrogateescape_is_repaired_as_its_bytes() -> None:
    """A line read as text with ``errors="surrogateescape"`` (a file opened so) holds its bad
    bytes as surrogates: it was RAW while the same line as bytes was its event (review 47)."""
    from cursor_agent_api.protocol import EventType, parse_event

    line = b'{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"caf\xe9"}]}}'
    as_text = parse_event(line.decode("utf-8", "surrogateescape"))
    as_bytes = parse_event(line)
    assert as_text.type is EventType.ASSISTANT and as_text.text == as_bytes.text == "caf\ufffd"
