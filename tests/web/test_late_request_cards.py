"""A request record the server sent without its payload (over the WebSocket bound:
``truncated`` is ``/payload``) is fetched whole, then drawn in its place (pagefix). Review 49:
drawn late, above records that came meanwhile, its card folded the live thinking that began
after it (the next delta then opened a second block) and was announced "at the end of the
conversation"; a failed fetch offers Try again; an answer that comes first is kept."""

from __future__ import annotations

import json
from typing import Any

VALUE = "**/events/3/value*"
"""The whole payload of the request record (seq 3): what the page fetches."""

SETUP = """async () => {
  const { Timeline } = await import('/js/timeline.js');
  const div = document.createElement('div');
  div.id = 'tl';
  document.body.append(div);
  const tl = new Timeline(div, document.createElement('div'), { onRunChange: () => {} });
  tl.chatId = 'c1';
  tl.onAnswer = async () => ({ request_id: 'q1', decision: 'accepted' });
  window.tl = tl;
  const run = (seq, status) => tl.apply({ type: 'run', subtype: status, seq,
    payload: { run: { id: 'r1', status, prompt: 'hi' } } }, []);
  run(1, 'queued');
  run(2, 'running');
}"""

ASKED = """window.tl.apply({ type: 'request', subtype: 'asked', run_id: 'r1', seq: 3, payload: {},
  truncated: [{ field: '/payload', bytes: 999999 }] }, []);"""

PLAN = {"request_id": "q1", "kind": "plan", "title": "T", "plan": "p",
        "todos": [{"id": "t1", "content": "step one"}]}


def _plan(route: Any) -> None:
    route.fulfill(status=200, content_type="application/json", body=json.dumps(PLAN))


def _route(page: Any, bodies: list[Any]) -> list[Any]:
    """Answer the fetches with ``bodies`` in turn (``None``: a 500); the URLs fetched."""
    hits: list[Any] = []

    def handle(route: Any) -> None:
        hits.append(route.request.url)
        body = bodies.pop(0) if bodies else None
        if body is None:
            route.fulfill(status=500, content_type="application/json",
                          body=json.dumps({"error": {"code": "x", "message": "boom"}}))
        else:
            route.fulfill(status=200, content_type="application/json", body=json.dumps(body))

    page.route(VALUE, handle)
    return hits


def test_a_failed_fetch_offers_try_again_and_draws_one_card(page: Any) -> None:
    hits = _route(page, [None, PLAN])
    page.evaluate(SETUP)
    page.evaluate(f"() => {{ {ASKED} }}")
    page.get_by_role("button", name="Try again").click()
    page.wait_for_selector("#tl .card.request-plan")
    assert page.locator("#tl .card.request-plan").count() == 1
    assert len(hits) == 2


def test_an_answer_that_comes_before_the_card_is_shown_on_it(page: Any) -> None:
    page.route(VALUE, _plan)
    page.evaluate(SETUP)
    page.evaluate(f"""() => {{ {ASKED}
      window.tl.apply({{ type: 'request', subtype: 'answered', run_id: 'r1', seq: 4,
        payload: {{ request_id: 'q1', decision: 'accepted', by: 'timeout' }} }}, []); }}""")
    page.wait_for_selector("#tl .card.request-plan")
    state = page.eval_on_selector("#tl .card.request-plan", "c => c.dataset.state")
    assert state != "pending", state


def test_a_card_drawn_above_later_records_says_where_it_is(page: Any) -> None:
    page.route(VALUE, _plan)
    page.evaluate(SETUP)
    page.evaluate(f"""() => {{ {ASKED}
      window.tl.apply({{ type: 'event', run_id: 'r1', seq: 4 }},
        [{{ kind: 'text_appended', segment: 0, text: 'LATER TEXT' }}]); }}""")
    page.wait_for_selector("#tl .card.request-plan")
    order = page.evaluate("() => [...document.querySelectorAll('#tl > *')].map(e => e.className)")
    said = page.evaluate("() => document.getElementById('announce')?.textContent")
    assert "request" not in order[-1] and "in its place" in (said or ""), (order, said)


def test_a_card_drawn_late_leaves_the_live_thinking_after_it_alone(page: Any) -> None:
    # a reconnect replays: the request (sent without its payload), its answer, then the agent
    # thinks on; the request's payload arrives after that thinking began
    held: list[Any] = []
    page.route(VALUE, lambda route: held.append(route))
    page.evaluate(SETUP)
    page.evaluate(f"""() => {{ {ASKED}
      window.tl.apply({{ type: 'request', subtype: 'answered', run_id: 'r1', seq: 4,
        payload: {{ request_id: 'q1', decision: 'accepted' }} }}, []);
      window.tl.apply({{ type: 'event', run_id: 'r1', seq: 5 }},
        [{{ kind: 'thinking_appended', block: 0, text: 'first half ' }}]); }}""")
    page.wait_for_function("() => document.querySelector('#tl .thinking') !== null")
    while not held:  # (the page's fetch, held here until the thinking has begun)
        page.wait_for_timeout(50)
    _plan(held[0])
    page.wait_for_selector("#tl .card.request-plan")
    page.evaluate("""() => window.tl.apply({ type: 'event', run_id: 'r1', seq: 6 },
      [{ kind: 'thinking_appended', block: 0, text: 'second half' }])""")
    # (drawn at the next frame)
    page.wait_for_function("() => document.querySelector('#tl').textContent.includes('second half')")
    blocks = page.evaluate("""() => [...document.querySelectorAll('#tl .thinking')].map(
      e => e.className + ': ' + e.querySelector('.thinking-text').textContent)""")
    assert blocks == ["thinking thinking-live: first half second half"], blocks
