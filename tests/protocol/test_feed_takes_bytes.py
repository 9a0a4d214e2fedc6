"""``feed`` takes bytes (the agent's stdout, as read from its pipe): a ``str`` is a
``TypeError`` that says so and what to do (``.encode()``), not Python's own "must be str or
None, not bytes" from deep inside the splitter. The check is made once per ``feed`` call, not
per line (the per-line path is benchmarked), and a refused chunk changes nothing: what was
buffered is still read."""

from __future__ import annotations

import pytest

from cursor_agent_api.protocol import EventReader, EventType, LineFramer, LineTooLong

LINE = '{"type":"assistant","text":"x"}\n'


@pytest.mark.parametrize("chunk", [LINE, "", "half"])
def test_event_reader_feed_of_a_str_says_it_takes_bytes(chunk: str) -> None:
    reader = EventReader()
    with pytest.raises(TypeError) as caught:
        reader.feed(chunk)
    message = str(caught.value)
    assert "feed() takes bytes" in message and "got str" in message
    assert ".encode()" in message


def test_a_refused_str_changes_nothing() -> None:
    reader = EventReader()
    assert reader.feed(b'{"type":"assistant",') == []
    with pytest.raises(TypeError, match="takes bytes"):
        reader.feed('"text":"y"}\n')
    events = reader.feed(b'"text":"x"}\n')
    assert [(e.type, e.text) for e in events] == [(EventType.ASSISTANT, "x")]


def test_the_framer_refuses_it_too_even_while_dropping_a_long_line() -> None:
    framer = LineFramer(max_line_bytes=4)
    assert framer.feed(b"abcdefgh") == []  # dropping: the path that searches for a newline
    with pytest.raises(TypeError, match=r"takes bytes.*\.encode\(\)"):
        framer.feed("ij\n")
    assert framer.feed(b"ij\nok\n") == [LineTooLong(10, 4), b"ok"]

