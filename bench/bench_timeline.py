"""The page's conversation (``web/js/timeline.js``) fed a burst of records, beside the code
before, in headless Chromium (``/usr/bin/chromium``).

Both versions of ``web/js`` (``after``: this checkout's; ``before``: ``--baseline``'s, read
with ``git show``) are served to the browser from memory (Playwright routes, a made-up
origin; nothing reaches the network, no server runs), with this checkout's ``app.css`` and a
conversation box of the page's size, so the layout costs what it costs on the page.

Each case applies ``n`` records in one go, as the WebSocket delivers them when the page
catches up (a long thinking block: one ``thinking_appended`` of 40 characters per record;
many tool calls: one shell card per record; a streaming answer: one ``text_appended`` per
record), then waits for the next frame to be drawn: the time from the first record to the
drawn frame, median of ``--repeats``, and how many times the box's height was read (each
read after a change forces a layout of the whole conversation).

Usage::

    .venv/bin/python bench/bench_timeline.py --baseline 17ee62e
    .venv/bin/python bench/bench_timeline.py --baseline 17ee62e --sizes 4000 --repeats 1
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path
from typing import Any

from bench_markdown import git_js, tree_js

REPO = Path(__file__).resolve().parents[1]
ORIGIN = "http://timeline.bench.invalid"
CSS = (REPO / "src/cursor_agent_api/web/app.css").read_text()
PAGE = (
    '<!doctype html><title>bench</title><link rel="stylesheet" href="/app.css">'
    '<section class="chat" style="height: 700px; display: flex; flex-direction: column">'
    '<div id="timeline" class="timeline" style="flex: 1; overflow: auto"></div>'
    '<div id="bar"></div></section><p id="announce"></p>'
)

FEED = """async ([base, kind, n]) => {
  const { Timeline } = await import(base + '/js/timeline.js');
  const div = document.getElementById('timeline');
  div.replaceChildren();
  const get = Object.getOwnPropertyDescriptor(Element.prototype, 'scrollHeight');
  let reads = 0;
  Object.defineProperty(div, 'scrollHeight', { configurable: true,
    get() { reads += 1; return get.get.call(this); } });
  const tl = new Timeline(div, document.getElementById('bar'), { onRunChange: () => {} });
  tl.apply({ type: 'run', subtype: 'queued', seq: 1,
            payload: { run: { id: 'r1', status: 'running', prompt: 'hi' } } }, []);
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    let c;
    if (kind === 'thinking') {
      c = { kind: 'thinking_appended', block: 0, text: `step ${i} considering options.. ` };
    }
    else if (kind === 'text') c = { kind: 'text_appended', segment: 0, text: `word ${i} and *more* words. ` };
    else c = { kind: 'tool_call_opened', index: i, view: { call_id: 'c' + i, kind: 'shell',
      status: 'succeeded', command: 'ls ' + i, stdout: 'a\\nb', exit_code: 0 } };
    tl.apply({ type: 'event', run_id: 'r1', seq: i + 2 }, [c]);
  }
  await new Promise((r) => requestAnimationFrame(() => setTimeout(r)));
  const ms = performance.now() - t0;
  delete div.scrollHeight;
  return { ms, reads };
}"""


def serve(page: Any, sides: dict[str, dict[str, str]]) -> None:
    """Serve the page, ``/app.css`` and ``/<side>/js/<name>`` from memory."""

    def handle(route: Any) -> None:
        path = route.request.url[len(ORIGIN):].split("?")[0]
        parts = path.strip("/").split("/")
        if path == "/":
            route.fulfill(status=200, content_type="text/html", body=PAGE)
        elif path == "/app.css":
            route.fulfill(status=200, content_type="text/css", body=CSS)
        elif len(parts) == 3 and parts[0] in sides and parts[1] == "js" and parts[2] in sides[parts[0]]:
            route.fulfill(status=200, content_type="text/javascript", body=sides[parts[0]][parts[2]])
        else:
            route.fulfill(status=404, body="")

    page.route(f"{ORIGIN}/**", handle)


def fmt(ms: float) -> str:
    return f"{ms / 1000:.2f} s" if ms >= 1000 else f"{ms:.0f} ms"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", default="17ee62e", help="the code before (a git revision)")
    ap.add_argument("--sizes", default="250,1000,2000", help="records in a burst")
    ap.add_argument("--kinds", default="thinking,cards,text")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    args = ap.parse_args()

    from playwright.sync_api import sync_playwright

    sides = {"before": git_js(args.baseline), "after": tree_js()}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=args.chromium, headless=True,
                                     args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 800})
            serve(page, sides)
            page.goto(f"{ORIGIN}/")
            for side in ("before", "after"):  # warm-up: modules loaded, functions compiled
                page.evaluate(FEED, [f"{ORIGIN}/{side}", "cards", 50])
            print(f"a burst of n records, then the next frame; median of {args.repeats} "
                  f"(before: {args.baseline}); height reads in brackets")
            print("| records | n | before | after | before / after |")
            print("|---|---:|---:|---:|---:|")
            for kind in args.kinds.split(","):
                for n in [int(s) for s in args.sizes.split(",")]:
                    got: dict[str, tuple[float, int]] = {}
                    for side in ("before", "after"):
                        runs = [page.evaluate(FEED, [f"{ORIGIN}/{side}", kind, n])
                                for _ in range(args.repeats)]
                        got[side] = (statistics.median(r["ms"] for r in runs), runs[0]["reads"])
                    (b, br), (a, ar) = got["before"], got["after"]
                    print(f"| {kind} | {n:,} | {fmt(b)} ({br:,}) | {fmt(a)} ({ar:,}) | {b / a:,.1f}× |",
                          flush=True)
        finally:
            browser.close()


if __name__ == "__main__":
    main()
