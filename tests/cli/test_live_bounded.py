"""The live terminal view does work bounded per delta: it refreshes at its rate, not once per
event, and its region renders the visible tail of the open segment, not all of it (a long
streamed line was quadratic: 8,000 deltas of one line took 10.9 s at a terminal, 0.5 s in a
pipe). The answer printed at the end is still whole. No timing here: the clock is frozen, and
what is counted is the work done."""

from __future__ import annotations

import threading
import types
from io import StringIO
from typing import Any

import pytest
from rich.console import Console

from cursor_agent_api.cli import views
from cursor_agent_api.cli.views import LiveView
from cursor_agent_api.protocol import AgentResult, parse_event
from cursor_agent_api.protocol.changes import TextAppended, ThinkingAppended

DELTA = parse_event('{"type":"assistant","message":{"role":"assistant","content":'
                    '[{"type":"text","text":"word "}]},"session_id":"s","timestamp_ms":1}')


@pytest.fixture
def frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    """The view's clock stands still: any refresh left is one per event, not per interval."""
    monkeypatch.setattr(views, "time", types.SimpleNamespace(monotonic=lambda: 1000.0))


def _view(out: StringIO) -> LiveView:
    return LiveView(Console(file=out, width=80, color_system=None, force_terminal=True))


def _count_refreshes(view: LiveView) -> list[int]:
    """Count the view's refreshes asked for by ``handle`` (the caller's thread), not those
    of rich's own refresh thread, which follow the rate."""
    count = [0]
    refresh = view.live.refresh
    me = threading.current_thread()

    def counted(*args: Any, **kwargs: Any) -> None:
        if threading.current_thread() is me:
            count[0] += 1
        refresh(*args, **kwargs)

    view.live.refresh = counted  # type: ignore[method-assign]
    return count


@pytest.mark.parametrize("change", [TextAppended, ThinkingAppended])
def test_deltas_do_not_each_refresh_the_view(frozen: None, change: Any) -> None:
    view = _view(StringIO())
    try:
        count = _count_refreshes(view)
        for _ in range(2000):
            view.handle(DELTA, (change(0, "word "),))
        assert count[0] <= 1, count[0]
    finally:
        view.stop()


def test_the_region_renders_a_bounded_tail_of_a_long_line(frozen: None) -> None:
    out = StringIO()
    view = _view(out)
    n = 5_000
    try:
        for i in range(n):
            view.handle(DELTA, (TextAppended(0, f"w{i} "),))
        region = StringIO()
        Console(file=region, width=80, color_system=None).print(view)
        shown = region.getvalue()
        assert f"w{n - 1}" in shown  # the end of what streamed: where the agent is
        assert len(shown.splitlines()) <= 2 * LiveView.TAIL_LINES + 2, len(shown.splitlines())
        view.finish(AgentResult(True, "", None), continue_hint="")
    finally:
        view.stop()
    printed = "".join(out.getvalue().split())
    assert "".join(f"w{i}" for i in range(n)) in printed  # the answer, whole, at the end


def test_the_region_still_shows_the_last_lines(frozen: None) -> None:
    view = _view(StringIO())
    try:
        for i in range(100):
            view.handle(DELTA, (TextAppended(0, f"line {i}\n"),))
        region = StringIO()
        Console(file=region, width=80, color_system=None).print(view)
        lines = region.getvalue().splitlines()
        assert lines[:LiveView.TAIL_LINES] == [f"line {i}" for i in range(88, 100)]
    finally:
        view.stop()


@pytest.mark.parametrize("piece", ["漢字漢字 ", "😀😀 ", "\tx", "\x1b\x1b\x1b ", "word "],
                         ids=["cjk", "emoji", "tabs", "escapes", "ascii"])
@pytest.mark.parametrize("height", [24, 8])
def test_the_newest_text_stays_in_view_whatever_its_width(frozen: None, piece: str, height: int) -> None:
    """The tail is counted in the terminal's cells, after the escaping of control characters,
    and fits the terminal's height: rich crops a region taller than the terminal from the
    bottom, and the newest text and the spinner were cut (review 46: CJK, emoji, tabs,
    escaped controls at 80x24)."""
    out = StringIO()
    view = LiveView(Console(file=out, width=80, height=height, color_system=None, force_terminal=True))
    try:
        for _ in range(3000):
            view.handle(DELTA, (TextAppended(0, piece),))
        view.handle(DELTA, (TextAppended(0, "END-MARK"),))
        region = StringIO()
        Console(file=region, width=80, color_system=None).print(view)
        rows = region.getvalue().splitlines()
    finally:
        view.stop()
    assert "END-MARK" in rows[-2] and len(rows) <= height - 1, rows  # then the spinner's row


def test_lines_that_fill_the_width_are_shown_whole(frozen: None) -> None:
    """Twelve lines of exactly the width fill twelve rows: none loses its start (review 46:
    the newlines counted as characters cut the first one)."""
    view = _view(StringIO())
    try:
        for i in range(20):
            view.handle(DELTA, (TextAppended(0, f"{i:02d}" + "x" * 78 + "\n"),))
        shown = view._tail().plain.splitlines()
    finally:
        view.stop()
    assert shown == [f"{i:02d}" + "x" * 78 for i in range(8, 20)]
