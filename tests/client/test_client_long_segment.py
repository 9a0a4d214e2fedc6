"""A turn streaming one endless segment: with keep_events=False the transcript holds the
text's own size, not a list slot and a str object per delta (the compaction of deltas)."""

from __future__ import annotations

import tracemalloc

from cursor_agent_api import Transcript, parse_event


def delta(text: str):
    return parse_event({"type": "assistant", "timestamp_ms": 1,
                        "message": {"content": [{"type": "text", "text": text}]}})


def test_long_segment_text_is_exact_across_compactions():
    t = Transcript(keep_events=False)
    parts = [f"{i}," for i in range(20_000)]  # several 4096-delta chunks
    for p in parts:
        t.add(delta(p))
    assert t.text == "".join(parts)
    t.add(parse_event({"type": "assistant",
                       "message": {"content": [{"type": "text", "text": "RECAP"}]}}))
    assert t.text == "RECAP"  # the recap still replaces every delta of its segment
    more = [f"m{i}" for i in range(9_000)]
    for p in more:
        t.add(delta(p))
    t.add(parse_event({"type": "tool_call", "subtype": "started", "call_id": "c1",
                       "tool_call": {"lsToolCall": {"args": {"path": "."}}}}))
    assert t.text == "RECAP" + "".join(more)


def test_long_segment_memory_is_about_the_text():
    t = Transcript(keep_events=False)
    events = [delta(f"t{i % 10}") for i in range(10)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(200_000):
            t.add(events[i % 10])
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(t.text) == 400_000
    assert used < 200_000 * 8  # well under a list slot (8 bytes) per delta, let alone a str
