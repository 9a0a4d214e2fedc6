"""A JSON line with a lone surrogate escape (Node's ``"\\ud83d"``) is an event, not RAW."""

from __future__ import annotations

import orjson
import pytest

from cursor_agent_api.protocol import EventReader, EventType, Transcript, parse_event
from cursor_agent_api.protocol.surrogates import replace_lone_surrogates

RESULT = (b'{"type":"result","subtype":"success","result":"emoji \\ud83d\\ude00 done, cut \\ud83d",'
          b'"session_id":"s1"}')
STREAM = b"\n".join([
    b'{"type":"system","subtype":"init","session_id":"s1"}',
    b'{"type":"assistant","message":{"content":[{"type":"text","text":"cut \\ud83d"}]},'
    b'"session_id":"s1"}',
    RESULT,
]) + b"\n"


def test_the_reader_decodes_a_result_with_a_lone_surrogate() -> None:
    reader = EventReader()
    events = reader.feed(RESULT + b"\n") + reader.close()
    assert [e.type for e in events] == [EventType.RESULT_SUCCESS]
    assert events[0].text == "emoji \U0001f600 done, cut \ufffd"
    assert (reader.object_lines, reader.raw_lines) == (1, 0)
    assert events[0].line == RESULT  # the line is kept as it came
    orjson.dumps(events[0].to_dict())  # and the event serializes


@pytest.mark.parametrize("line", [RESULT, RESULT.decode()])
def test_parse_event_decodes_a_line_with_a_lone_surrogate(line: bytes | str) -> None:
    event = parse_event(line)
    assert event.type is EventType.RESULT_SUCCESS
    assert event.text == "emoji \U0001f600 done, cut \ufffd"


def test_a_turn_whose_result_has_a_lone_surrogate_succeeds() -> None:
    t = Transcript.from_bytes(STREAM)
    result = t.to_result()
    assert result.success
    assert result.result == "emoji \U0001f600 done, cut \ufffd"
    assert t.text == "cut \ufffd"
    # the kept events are read back equal (the repaired one is not re-read from its line)
    assert [e.type for e in result.events] == [EventType.SYSTEM_INIT, EventType.ASSISTANT,
                                               EventType.RESULT_SUCCESS]
    assert result.events[2].text == result.result


def test_a_line_split_by_a_raw_newline_and_holding_a_lone_surrogate_is_repaired() -> None:
    reader = EventReader()
    events = reader.feed(b'{"type":"assistant","text":"a\\ud83d\nb"}\n') + reader.close()
    assert [(e.type, e.text) for e in events] == [(EventType.ASSISTANT, "a\ufffd\nb")]


@pytest.mark.parametrize(("escaped", "expected"), [
    (r"\ud83d", "\ufffd"),                      # a high half alone
    (r"\ude00", "\ufffd"),                      # a low half alone
    (r"\ude00\ud83d", "\ufffd\ufffd"),          # in the wrong order
    (r"\ud83d\ud83d\ude00", "\ufffd\U0001f600"),  # a high half, then a pair
    (r"\ud83d\ude00", "\U0001f600"),            # a pair
    (r"\uD83D\uDE00", "\U0001f600"),            # a pair, upper case
    (r"\\ud83d", "\\ud83d"),                    # an escaped backslash, then text
    (r"\\\ud83d", "\\\ufffd"),                  # an escaped backslash, then a lone half
    (r"\u00e9\ud83d", "\u00e9\ufffd"),
])
def test_only_unpaired_surrogate_escapes_are_replaced(escaped: str, expected: str) -> None:
    line = '{"type":"assistant","text":"' + escaped + '"}'
    assert parse_event(line).text == expected
    assert parse_event(line.encode()).text == expected


def test_not_json_stays_raw() -> None:
    assert parse_event(b'{"type":"user","text":"\\ud83d').type is EventType.RAW
    assert replace_lone_surrogates(b"no escapes") == b"no escapes"


def test_an_acp_message_with_a_lone_surrogate_is_a_message_not_noise() -> None:
    # the response to session/prompt lost as noise would leave the turn waiting for it
    from cursor_agent_api.protocol.acp_codec import RpcNotification, RpcResponse, decode_message

    message = decode_message(b'{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn",'
                             b'"note":"cut \\ud83d"}}')
    assert isinstance(message, RpcResponse)
    assert message.result == {"stopReason": "end_turn", "note": "cut \ufffd"}
    update = decode_message('{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s",'
                            '"update":{"content":{"type":"text","text":"\\ude00"}}}}')
    assert isinstance(update, RpcNotification)
    assert update.params["update"]["content"]["text"] == "\ufffd"
