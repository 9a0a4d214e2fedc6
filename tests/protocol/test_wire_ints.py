"""Numbers from the agent past 64 bits (orjson reads them as floats: ``1e23``), bools and
non-finite numbers never become the ints the protocol derives: ``to_dict()`` of events,
changes and results always serializes with orjson, and the event's data keeps what came."""

from __future__ import annotations

import orjson
import pytest

from cursor_agent_api.protocol import Transcript, Usage, parse_event
from cursor_agent_api.protocol.limits import INT64_MAX, INT64_MIN

HUGE = ["1e20", "1e23", "-1e20", "18446744073709551615", "9223372036854775808",
        '"99999999999999999999"', '"123456789012345678901234567890"']


def _turn(n: str) -> list[str]:
    return [
        '{"type":"system","subtype":"init","session_id":"s","model":"m"}',
        '{"type":"assistant","message":{"content":[{"type":"text","text":"hi"}]},'
        f'"session_id":"s","timestamp_ms":{n}}}',
        '{"type":"tool_call","subtype":"started","call_id":"c1","session_id":"s",'
        f'"tool_call":{{"shellToolCall":{{"args":{{"command":"ls"}}}},"startedAtMs":{n}}}}}',
        '{"type":"tool_call","subtype":"completed","call_id":"c1","session_id":"s",'
        f'"timestamp_ms":{n},"tool_call":{{"shellToolCall":{{"args":{{"command":"ls"}},'
        f'"result":{{"success":{{"exitCode":{n},"stdout":"","executionTime":{n}}}}}}},'
        f'"completedAtMs":{n}}}}}',
        '{"type":"tool_call","subtype":"completed","call_id":"c2","session_id":"s",'
        f'"tool_call":{{"readToolCall":{{"args":{{"path":"a"}},"result":{{"success":'
        f'{{"content":"x","readRange":{{"startLine":{n},"endLine":{n}}}}}}}}}}}}}',
        '{"type":"tool-call-completed","tool_call_id":"c3","tool_name":"Shell","session_id":"s",'
        f'"duration_ms":{n},"result":{{"exit_code":{n}}}}}',
        '{"type":"result","subtype":"success","result":"hi","session_id":"s",'
        f'"duration_ms":{n},"duration_api_ms":{n},"usage":{{"inputTokens":{n},'
        f'"outputTokens":5,"cacheReadTokens":{n}}}}}',
    ]


@pytest.mark.parametrize("n", HUGE)
def test_every_dict_of_a_turn_with_huge_numbers_serializes(n: str) -> None:
    t = Transcript()
    for line in _turn(n):
        event = parse_event(line)
        orjson.dumps(event.to_dict())
        for change in t.add(event):
            orjson.dumps(change.to_dict())
        if event.tool_call is not None:
            orjson.dumps(event.tool_call.to_dict())
    result = t.to_result()
    orjson.dumps(result.to_dict())
    assert result.duration_ms is None and result.duration_api_ms is None
    assert result.usage == Usage(0, 5, 0, 0)
    for call in result.tool_calls:
        assert call.started_at_ms is None and call.duration_ms is None
        assert call.exit_code is None and call.read_range is None
    assert parse_event(_turn(n)[1]).timestamp_ms is None


def test_the_event_data_keeps_the_number_as_it_came() -> None:
    event = parse_event('{"type":"result","subtype":"success","duration_ms":1e23,'
                        '"usage":{"inputTokens":1e23}}')
    assert event.data["duration_ms"] == 1e23
    assert event.data["usage"] == {"inputTokens": 1e23}
    assert event.usage == Usage(0, 0, 0, 0)


@pytest.mark.parametrize("value", ["true", "false", '"1_000"', '" 17"', '"\\u00b2"', '"1.5"',
                                   '"-"', '""', "[1]", '"-3"'])
def test_a_bool_or_a_string_that_is_not_digits_is_no_duration(value: str) -> None:
    t = Transcript.from_lines(['{"type":"result","subtype":"success","result":"x",'
                               f'"duration_ms":{value},"usage":{{"inputTokens":{value}}}}}'])
    result = t.to_result()
    assert result.duration_ms is None
    assert result.usage == Usage(0, 0, 0, 0)


@pytest.mark.parametrize(("value", "expected"), [
    ("17", 17), ("17.9", 17), ('"17"', 17), ("-3", -3), (str(INT64_MAX), INT64_MAX),
    (str(INT64_MIN), INT64_MIN), (f'"{INT64_MAX}"', INT64_MAX), ('"0"', 0),
])
def test_numbers_in_range_are_kept(value: str, expected: int) -> None:
    t = Transcript.from_lines(['{"type":"result","subtype":"success","result":"x",'
                               f'"duration_ms":{value},"usage":{{"inputTokens":{value}}}}}'])
    result = t.to_result()
    assert result.duration_ms == expected
    assert result.usage is not None and result.usage.input_tokens == expected


def test_a_duration_from_clocks_far_apart_is_none_rather_than_past_64_bits() -> None:
    event = parse_event(
        '{"type":"tool_call","subtype":"completed","call_id":"c","tool_call":{"lsToolCall":'
        f'{{"result":{{"success":{{}}}}}},"startedAtMs":{INT64_MIN},"completedAtMs":{INT64_MAX}}}}}')
    assert event.tool_call is not None
    assert event.tool_call.duration_ms is None
    orjson.dumps(event.tool_call.to_dict())
