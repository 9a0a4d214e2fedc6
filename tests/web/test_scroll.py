"""The conversation follows a long stream without reading the layout per record (review of
2026-11-24: ``apply()`` read ``scrollHeight`` for every record, a forced layout of the whole
conversation each time; 4,000 thinking deltas took 57 s). It still sticks to the bottom when
the reader is there, and leaves them where they are when they scrolled up. Timings are in
bench/bench_timeline.py."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def page(make_server: Any, browser: Any) -> Any:
    server = make_server()
    page = browser.new_page()
    page.goto(f"{server.url}/?token={server.token}")
    page.wait_for_selector("#welcome-view:not([hidden])")
    return page


SETUP = """async () => {
  const { Timeline } = await import('/js/timeline.js');
  document.getElementById('welcome-view').hidden = true;
  document.getElementById('chat-view').hidden = false;
  const div = document.getElementById('timeline');
  window.reads = 0;
  for (const name of ['scrollHeight', 'clientHeight', 'offsetHeight']) {
    const get = Object.getOwnPropertyDescriptor(Element.prototype, name)
      || Object.getOwnPropertyDescriptor(HTMLElement.prototype, name);
    Object.defineProperty(div, name, { get() { window.reads += 1; return get.get.call(this); } });
  }
  const tl = new Timeline(div, document.getElementById('result-bar'), { onRunChange: () => {} });
  tl.apply({ type: 'run', subtype: 'queued', seq: 1,
            payload: { run: { id: 'r1', status: 'running', prompt: 'hi' } } }, []);
  window.tl = tl;
  window.seq = 2;
  window.frame = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r)));
  window.feed = async (kind, n) => {
    for (let i = 0; i < n; i++) {
      const s = window.seq++;
      const c = kind === 'thinking'
        ? { kind: 'thinking_appended', block: 0, text: `step ${s} considering.. ` }
        : { kind: 'tool_call_opened', index: s, view: { call_id: 'c' + s, kind: 'shell', status: 'succeeded',
            command: 'ls ' + s, stdout: 'a\\nb', exit_code: 0 } };
      tl.apply({ type: 'event', run_id: 'r1', seq: s }, [c]);
    }
    await window.frame();
    await window.frame();
  };
  window.atBottom = () => div.scrollHeight - div.scrollTop - div.clientHeight < 2;
}"""


@pytest.mark.parametrize("kind", ["thinking", "cards"])
def test_a_burst_of_records_reads_the_layout_once_per_frame_not_per_record(page: Any, kind: str) -> None:
    page.evaluate(SETUP)
    page.evaluate("() => { window.reads = 0; }")
    page.evaluate("(kind) => window.feed(kind, 500)", kind)
    reads = page.evaluate("window.reads")
    assert reads < 20, f"{reads} layout reads for 500 records"
    text = page.evaluate("document.querySelector('.thinking-live .thinking-text')?.textContent || ''")
    if kind == "thinking":  # every delta is shown, once the frame has drawn
        assert text.count("considering") == 500
    else:
        assert page.locator(".card.tool-shell").count() == 500


def test_it_sticks_to_the_bottom_unless_the_reader_scrolled_up(page: Any) -> None:
    page.evaluate(SETUP)
    page.evaluate("window.feed('cards', 60)")
    assert page.evaluate("document.getElementById('timeline').scrollTop") > 0
    assert page.evaluate("window.atBottom()")
    page.evaluate("window.feed('thinking', 200)")
    assert page.evaluate("window.atBottom()")  # a growing thinking block is followed too
    # The reader scrolls up: new records leave the view where it is.
    page.evaluate("async () => { document.getElementById('timeline').scrollTop = 100; "
                  "await window.frame(); }")
    page.evaluate("window.feed('cards', 30)")
    assert page.evaluate("document.getElementById('timeline').scrollTop") == 100
    assert not page.evaluate("window.atBottom()")
    # Back at the bottom: it follows again.
    page.evaluate("async () => { const d = document.getElementById('timeline'); "
                  "d.scrollTop = d.scrollHeight; await window.frame(); }")
    page.evaluate("window.feed('cards', 30)")
    assert page.evaluate("window.atBottom()")


def test_records_arriving_between_its_own_scroll_and_that_scroll_event_do_not_stop_following(
    page: Any,
) -> None:
    """The page's own scroll to the end fires a scroll event a frame later; cards that arrive
    in between make the page taller than where it scrolled. That is not the reader scrolling
    up: it goes on following (it stopped, as if the reader had scrolled away)."""
    page.evaluate(SETUP)
    page.evaluate("window.feed('cards', 40)")
    assert page.evaluate("window.atBottom()")
    following = page.evaluate("""async () => {
      const card = (s) => ({ kind: 'tool_call_opened', index: s, view: { call_id: 'c' + s,
        kind: 'shell', status: 'succeeded', command: 'ls ' + s, stdout: 'a\\nb', exit_code: 0 } });
      const s = window.seq++;
      tl.apply({ type: 'event', run_id: 'r1', seq: s }, [card(s)]);  // its frame scrolls to the end
      await new Promise((r) => requestAnimationFrame(() => {  // after that frame's scroll ...
        for (let i = 0; i < 30; i++) {  // ... and before its scroll event, more cards
          const n = window.seq++;
          tl.apply({ type: 'event', run_id: 'r1', seq: n }, [card(n)]);
        }
        r();
      }));
      await window.frame();
      await window.frame();
      return window.atBottom();
    }""")
    assert following


def test_a_reader_back_in_the_middle_of_a_grown_page_stays_there(page: Any) -> None:
    """Once the reader scrolled away, where the page last put the view no longer counts: back
    in the middle of a page that grew meanwhile (below that old end), they stay there."""
    page.evaluate(SETUP)
    page.evaluate("window.feed('cards', 40)")
    assert page.evaluate("window.atBottom()")
    old_end = page.evaluate("document.getElementById('timeline').scrollTop")
    page.evaluate("async () => { document.getElementById('timeline').scrollTop = 50; "
                  "await window.frame(); }")
    page.evaluate("window.feed('cards', 200)")
    assert page.evaluate("document.getElementById('timeline').scrollTop") == 50
    middle = old_end + 400
    page.evaluate("async (m) => { document.getElementById('timeline').scrollTop = m; "
                  "await window.frame(); await window.frame(); }", middle)
    page.evaluate("window.feed('cards', 1)")
    assert page.evaluate("document.getElementById('timeline').scrollTop") == middle


def test_zooming_in_at_the_end_keeps_the_view_at_the_end(page: Any) -> None:
    """Review of 2026-11-25: zooming in (or making the window smaller) while the view was at
    the end left it above the end until the next record came. A viewport half as wide and
    half as tall is what 200% zoom makes of the page's layout."""
    page.evaluate(SETUP)
    page.evaluate("window.feed('cards', 60)")
    assert page.evaluate("window.atBottom()")
    page.set_viewport_size({"width": 550, "height": 400})
    page.evaluate("async () => { await window.frame(); await window.frame(); }")
    assert page.evaluate("window.atBottom()")
    page.set_viewport_size({"width": 1100, "height": 800})  # and back (zooming out)
    page.evaluate("async () => { await window.frame(); await window.frame(); }")
    assert page.evaluate("window.atBottom()")


def test_zooming_in_after_scrolling_up_leaves_the_view_where_it_was(page: Any) -> None:
    page.evaluate(SETUP)
    page.evaluate("window.feed('cards', 60)")
    page.evaluate("async () => { document.getElementById('timeline').scrollTop = 100; "
                  "await window.frame(); }")
    page.set_viewport_size({"width": 550, "height": 400})
    page.evaluate("async () => { await window.frame(); await window.frame(); }")
    assert not page.evaluate("window.atBottom()")
    page.evaluate("window.feed('cards', 1)")  # still the reader's: a record does not move it
    assert not page.evaluate("window.atBottom()")
