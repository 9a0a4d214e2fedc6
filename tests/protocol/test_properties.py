"""Properties: arbitrary input never raises; chunking never changes the events."""

from __future__ import annotations

import itertools
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from cursor_agent_api import Transcript, parse_event
from cursor_agent_api.protocol import EventReader

RECORDINGS = sorted((Path(__file__).parent.parent / "data" / "cursor-real").glob("*.ndjson"))
ALL = b"".join(p.read_bytes() for p in RECORDINGS)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=200), max_size=30), st.integers(min_value=1, max_value=64))
def test_arbitrary_bytes_in_arbitrary_chunks_never_raise(chunks: list[bytes], limit: int) -> None:
    reader = EventReader(max_line_bytes=limit)
    t = Transcript()
    for chunk in chunks:
        for event in reader.feed(chunk):
            t.add(event)
    for event in reader.close():
        t.add(event)
    t.to_result()


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_parse_event_never_raises_on_text(text: str) -> None:
    parse_event(text)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=20,
)
keys = st.sampled_from(["type", "subtype", "message", "content", "text", "tool_call", "call_id",
                        "result", "payload", "toolCall", "readToolCall", "shellToolCall",
                        "args", "success", "rejected", "query", "query_type", "usage",
                        "timestamp_ms", "model_call_id", "session_id", "tool_name"])
types = st.sampled_from(["assistant", "tool_call", "result", "thinking", "user", "system",
                         "interaction_query", "tool-call-started", "tool-call-completed",
                         "error", "raw"])


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(types, st.dictionaries(keys, json_values, max_size=6)), max_size=8))
def test_wrongly_shaped_objects_never_raise(objs: list[tuple[str, dict[str, object]]]) -> None:
    t = Transcript()
    for etype, obj in objs:
        event = parse_event({**obj, "type": etype})
        t.add(event)
        _ = (event.tool_call, event.usage, event.text, event.to_dict())
        tool = event.tool_call
        if tool is not None:
            _ = (tool.output, tool.summary(), tool.duration_ms, tool.to_dict())
    r = t.to_result()
    for call in r.tool_calls:
        _ = (call.output, call.summary(), call.to_dict())


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(ALL)), max_size=40))
def test_chunking_never_changes_events(cuts: list[int]) -> None:
    whole = EventReader()
    expected = whole.feed(ALL) + whole.close()
    reader = EventReader()
    got = []
    bounds = [0, *sorted(cuts), len(ALL)]
    for start, end in itertools.pairwise(bounds):
        got.extend(reader.feed(ALL[start:end]))
    got.extend(reader.close())
    assert got == expected
