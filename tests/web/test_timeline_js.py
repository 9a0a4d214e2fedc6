"""The page's timeline (js/timeline.js) in the browser, fed records directly."""

from __future__ import annotations

from typing import Any

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


STREAM = """async (parts) => {
  const { Timeline } = await import('/js/timeline.js');
  const { renderMarkdown } = await import('/js/markdown.js');
  const { addCodeCopyButtons } = await import('/js/copy.js');
  const div = document.createElement('div');
  document.body.append(div);
  const timeline = new Timeline(div, document.createElement('div'), { onRunChange: () => {} });
  timeline.apply({ type: 'run', subtype: 'queued', seq: 1,
                   payload: { run: { id: 'r1', status: 'queued', prompt: 'hi' } } }, []);
  const frame = () => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve)));
  let text = '', heading = null;
  const steps = [];
  for (const [n, part] of parts.entries()) {
    text += part;
    timeline.apply({ type: 'event', run_id: 'r1', seq: n + 2 },
                   [{ kind: 'text_appended', segment: 0, text: part }]);
    await frame();
    const msg = div.querySelector('.msg.assistant');
    const whole = document.createElement('div');
    whole.append(renderMarkdown(text));
    addCodeCopyButtons(whole);
    if (n === 1) heading = msg.querySelector('h3');
    steps.push({ same: msg.innerHTML === whole.innerHTML, headingKept: msg.querySelector('h3') === heading });
  }
  div.remove();
  return steps;
}"""


def test_a_streaming_answer_renders_again_only_its_last_blocks(page: Any) -> None:
    """The page's timeline (js/timeline.js): while a segment streams, each frame renders again
    only the blocks that may still change (markdown.js's GrowingMarkdown), not the whole answer
    (quadratic over a long answer's stream: ~120 ms a frame by 100,000 characters), and shows
    at every step what rendering the whole text gives, copy buttons included."""
    parts = ["# Title\n\nSome *text*", " more\n\n```py\nprint(1)", "\n```\n\n- a\n", "- b\n\n> q",
             "uote\n\n1. x\n\n2. y", " and `code`\n\nend"]
    steps = page.evaluate(STREAM, parts)
    assert all(step["same"] for step in steps), steps
    # The heading settled once a line after its blank one arrived: the same node from then on.
    assert all(step["headingKept"] for step in steps[1:]), steps
