"""One nesting limit (protocol.limits.MAX_JSON_DEPTH) for the parser and what stores its events."""

from __future__ import annotations

import orjson
import pytest

from cursor_agent_api.protocol import MAX_JSON_DEPTH, EventReader, EventType, parse_event


def _nested(depth: int) -> bytes:
    """A valid assistant event whose object nests ``depth`` levels in all."""
    inner = "[" * (depth - 1) + "]" * (depth - 1)
    return b'{"type":"assistant","extra":' + inner.encode() + b',"message":{"role":"assistant","content":[]}}'


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 255, 300, 1000])
def test_an_event_deeper_than_the_limit_is_a_raw_line_with_a_marker(depth: int) -> None:
    line = _nested(depth)
    for event in (parse_event(line), *EventReader().feed(line + b"\n")):
        assert event.type is EventType.RAW
        assert event.data["code"] == "too_deep" and event.data["limit"] == MAX_JSON_DEPTH
        assert event.raw == line.decode()
        orjson.dumps({"event": {"payload": event.to_dict()}})  # serializable again


def test_an_event_at_the_limit_is_parsed_and_survives_the_servers_wrappings() -> None:
    line = _nested(MAX_JSON_DEPTH)
    event = parse_event(line)
    assert event.type is EventType.ASSISTANT
    (read,) = EventReader().feed(line + b"\n")
    assert read.type is EventType.ASSISTANT
    # a stored payload inside a WebSocket message inside a list: still under orjson's limit
    orjson.dumps([{"op": "event", "event": {"payload": event.to_dict()}}])
