"""A burst of tool-call ends in one frame (a reconnect catching up) is said as a count.

The page says one line when a tool call ends (``Shell ls: done``); up to three ending in one
frame are said together, one line; more are said as how many ended and how many did not
(js/timeline.js, ``sayEnded``), not card by card. The Timeline is fed records directly, as
in test_announce.py; what the status region says is read by live_regions.py's recorder."""

from __future__ import annotations

from typing import Any

from live_regions import announced_by_region, record
from playwright.sync_api import expect
from test_announce import DONE, FAILED, _timeline_page


def _ended(n: int, view: dict[str, Any]) -> list[dict[str, Any]]:
    return [{**view, "call_id": f"{view['call_id']}-{n}", "command": f"{view['command']} {n}"}]


def test_more_than_three_ends_in_one_frame_are_said_as_a_count(make_server: Any, browser: Any) -> None:
    page = _timeline_page(make_server, browser)
    record(page)
    views = [v for n in range(4) for v in _ended(n, DONE)] + _ended(4, FAILED)
    page.evaluate("""(views) => window.change(...views.map((view, index) =>
                       ({ kind: 'tool_call_opened', index, view })))""", views)
    expect(page.locator(".card.tool-shell")).to_have_count(5)
    assert announced_by_region(page) == [
        ("announce", "5 tool calls ended: 4 done, 1 did not (failed, rejected or stopped).")
    ], announced_by_region(page)
    # four, all done: the count alone; then three in a frame: each, in one line
    page.evaluate("""(views) => window.change(...views.map((view, n) =>
                       ({ kind: 'tool_call_opened', index: 5 + n, view })))""",
                  [v for n in range(5, 9) for v in _ended(n, DONE)])
    page.evaluate("""(views) => window.change(...views.map((view, n) =>
                       ({ kind: 'tool_call_opened', index: 9 + n, view })))""",
                  [v for n in range(9, 11) for v in _ended(n, DONE)] + _ended(11, FAILED))
    assert announced_by_region(page)[1:] == [
        ("announce", "4 tool calls ended: 4 done."),
        ("announce", "Shell ls 9: done. Shell ls 10: done. Shell false 11: failed (exit 1)"),
    ], announced_by_region(page)
    assert page.errors == []  # type: ignore[attr-defined]
