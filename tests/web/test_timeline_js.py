"""The page's timeline (js/timeline.js) in the browser, fed records directly."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def page(make_server: Any, browser: Any) -> Any:
    server = make_server()
    page = browser.new_page()
    page.goto(f"{server.url}/?token={server.token}")
    return page


TWICE = """async () => {
  const { Timeline } = await import('/js/timeline.js');
  const div = document.createElement('div');
  const bar = document.createElement('div');
  const timeline = new Timeline(div, bar, { onRunChange: () => {} });
  const run = (status) => ({ type: 'run', subtype: status, seq: 1,
                             payload: { run: { id: 'r1', status, prompt: 'hi' } } });
  timeline.apply(run('queued'), []);
  timeline.apply(run('cancelled'), []);
  timeline.apply(run('cancelled'), []);  // the end reported again (e.g. a late record)
  return div.querySelectorAll('.notice.cancelled').length;
}"""


def test_a_runs_end_reported_twice_shows_one_notice(page: Any) -> None:
    """The page's timeline (js/timeline.js): a "Stopped" notice once per run, however often
    its end is reported."""
    assert page.evaluate(TWICE) == 1
