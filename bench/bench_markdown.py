"""The web page's Markdown renderer (``web/js/markdown.js``) on hostile and ordinary text,
beside the code before, in headless Chromium (``/usr/bin/chromium``: V8, as the page).

Both versions of ``web/js`` (``after``: this checkout's; ``before``: ``--baseline``'s, read
with ``git show``) are served to the browser from memory (Playwright routes, a made-up
origin; nothing reaches the network, no server runs).

* **hostile**: each input (one pattern repeated, as the review's and the suite's) rendered
  in a Web Worker with a DOM stand-in (workers have no document; the regular expressions'
  time, which is the point, is the same), stopped after ``--cap`` seconds (reported as
  "> cap"); the median of ``--repeats`` renders, for each size;
* **stream**: an ordinary answer (headings, paragraphs with inline markup, lists, code
  blocks, quotes) rendered on the page into a live element (the real DOM, then layout), at a
  few lengths: one render of the whole; and the answer streamed in ``--steps`` equal parts,
  one render per part as ``timeline.js`` does once per frame (before: the whole text again;
  after: ``GrowingMarkdown``), the sum over the stream and the last part's. Medians of
  ``--repeats``.

Usage::

    .venv/bin/python bench/bench_markdown.py --baseline 0567e45
    .venv/bin/python bench/bench_markdown.py --baseline 0567e45 --only italic,bold --sizes 60000
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
JS = "src/cursor_agent_api/web/js"
ORIGIN = "http://markdown.bench.invalid"

# name: (head, unit repeated to the size, tail)
HOSTILE: dict[str, tuple[str, str, str]] = {
    "italic": ("", "*a ", ""),
    "bold": ("", "**a ", ""),
    "underscore": ("", " _a", ""),
    "__bold__": ("", "__a ", ""),
    "strike": ("", "~~a ", ""),
    "code": ("", "``a ", ""),
    "link text": ("", "[", ""),
    "link url": ("", "[a](b", ""),
    "heading": ("# a", " ", "x"),
    "list item": ("-", " ", "a\u2028"),
    "indented code": ("    a\n", "\n", "    b"),
    "quotes": ("", "> ", ""),
    "hr": ("", "- ", "x"),
    "mixed": ("", "*a **b ~~c _d `e [f](g ", ""),
}

WORKER = """
class Node {
  constructor() { this.children = []; this.dataset = {}; }
  append(...c) { this.children.push(...c); }
  appendChild(c) { this.children.push(c); return c; }
  setAttribute() {}
  addEventListener() {}
}
globalThis.Node = Node;
globalThis.document = {
  createDocumentFragment: () => new Node(),
  createElement: () => new Node(),
  createTextNode: (t) => Object.assign(new Node(), { text: t }),
};
const { renderMarkdown } = await import("./js/markdown.js");
onmessage = (e) => {
  const t0 = performance.now();
  let error = null;
  try { renderMarkdown(e.data); } catch (err) { error = String(err); }
  postMessage({ ms: performance.now() - t0, error });
};
postMessage("ready");
"""

PAGE = "<!doctype html><title>bench</title><div id=out></div>"

RENDER_IN_WORKER = """async ([url, head, unit, tail, size, cap]) => {
  const n = Math.max(1, Math.ceil((size - head.length - tail.length) / unit.length));
  const text = head + unit.repeat(n) + tail;
  const worker = new Worker(url, { type: 'module' });
  try {
    return await new Promise((resolve) => {
      const timer = setTimeout(() => resolve({ ms: null, error: null }), cap);
      worker.onerror = (e) => { clearTimeout(timer); resolve({ ms: null, error: e.message || 'error' }); };
      worker.onmessage = (e) => {
        if (e.data === 'ready') { worker.postMessage(text); return; }
        clearTimeout(timer);
        resolve(e.data);
      };
    });
  } finally { worker.terminate(); }
}"""

# An ordinary answer: what an agent writes, about 1 KB a section.
SECTION = """## Step {n}: reading `src/module_{n}.py`

The function **`parse_{n}`** reads the *whole* file, then calls `split()` on each line; see
[the docs](https://example.com/docs/{n}) and ~~the old helper~~ the new one. It is
_quadratic_ only when the input is, which **it is not** here.

- first, check the `config_{n}` value
- then run the tests (`pytest -q tests/test_{n}.py`)
- finally, **commit** with a message

```python
def parse_{n}(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line]
```

> Note: the *cache* is cleared on each run.

"""

RENDER_ON_PAGE = """async ([base, size, repeats, steps]) => {
  const md = await import(base + '/js/markdown.js');
  const { replace } = await import(base + '/js/dom.js');
  let text = '', n = 0;
  while (text.length < size) text += window.SECTION.replaceAll('{n}', String(n++));
  text = text.slice(0, size);
  const el = document.getElementById('out');
  const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const once = [];
  for (let r = 0; r < repeats; r++) {
    const t0 = performance.now();
    replace(el, md.renderMarkdown(text));
    el.offsetHeight;  // layout, as the page's scroll-to-end does
    once.push(performance.now() - t0);
  }
  // The stream: the text in `steps` equal parts, one render per part, as timeline.js does
  // once per frame (the code before: everything again; after: GrowingMarkdown).
  const streams = [], lasts = [];
  for (let r = 0; r < repeats; r++) {
    replace(el);
    const grow = md.GrowingMarkdown ? new md.GrowingMarkdown(el) : null;
    let total = 0, last = 0;
    for (let k = 1; k <= steps; k++) {
      const part = text.slice(0, Math.round(text.length * k / steps));
      const t0 = performance.now();
      if (grow) grow.show(part); else replace(el, md.renderMarkdown(part));
      el.offsetHeight;
      last = performance.now() - t0;
      total += last;
    }
    streams.push(total);
    lasts.push(last);
  }
  return { once: median(once), stream: median(streams), last: median(lasts) };
}"""


def git_js(rev: str) -> dict[str, str]:
    """``web/js``'s files at ``rev``."""
    names = subprocess.run(
        ["git", "ls-tree", "--name-only", f"{rev}:{JS}"], cwd=REPO, check=True,
        capture_output=True, text=True,
    ).stdout.split()
    return {
        name: subprocess.run(["git", "show", f"{rev}:{JS}/{name}"], cwd=REPO, check=True,
                             capture_output=True, text=True).stdout
        for name in names
    }


def tree_js() -> dict[str, str]:
    """This checkout's ``web/js``."""
    return {p.name: p.read_text() for p in (REPO / JS).glob("*.js")}


def serve(page: Any, sides: dict[str, dict[str, str]]) -> None:
    """Serve ``/<side>/js/<name>`` and ``/<side>/worker.js`` from memory."""

    def handle(route: Any) -> None:
        path = route.request.url[len(ORIGIN):].split("?")[0]
        parts = path.strip("/").split("/")
        if path == "/":
            route.fulfill(status=200, content_type="text/html", body=PAGE)
        elif len(parts) == 2 and parts[0] in sides and parts[1] == "worker.js":
            route.fulfill(status=200, content_type="text/javascript", body=WORKER)
        elif len(parts) == 3 and parts[0] in sides and parts[1] == "js" and parts[2] in sides[parts[0]]:
            route.fulfill(status=200, content_type="text/javascript", body=sides[parts[0]][parts[2]])
        else:
            route.fulfill(status=404, body="")

    page.route(f"{ORIGIN}/**", handle)


def fmt(ms: float | None, cap_s: float) -> str:
    if ms is None:
        return f"> {cap_s:g} s"
    return f"{ms / 1000:.2f} s" if ms >= 1000 else f"{ms:.1f} ms"


def hostile_row(page: Any, name: str, size: int, cap: float, repeats: int) -> None:
    """One input, one size, both sides: a row of the table."""
    head, unit, tail = HOSTILE[name]
    row: dict[str, float | None] = {}
    for side in ("before", "after"):
        times: list[float] = []
        for _ in range(repeats):
            out = page.evaluate(RENDER_IN_WORKER,
                                [f"{ORIGIN}/{side}/worker.js", head, unit, tail, size, cap * 1000])
            if out["error"]:
                print(f"  ({side} {name} {size}: {out['error']})")
            if out["ms"] is None:
                break  # capped: once is enough
            times.append(out["ms"])
        row[side] = statistics.median(times) if len(times) == repeats else None
    b, a = row["before"], row["after"]
    ratio = ""
    if a:
        ratio = f"{b / a:,.{1 if b < 10 * a else 0}f}×" if b is not None else f"> {cap * 1000 / a:,.0f}×"
    print(f"| {name} | {size:,} | {fmt(b, cap)} | {fmt(a, cap)} | {ratio} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", default="0567e45", help="the code before (a git revision)")
    ap.add_argument("--sizes", default="4000,60000,250000", help="hostile input sizes, characters")
    ap.add_argument("--stream-sizes", default="10000,50000,100000,250000")
    ap.add_argument("--only", default="", help="hostile inputs to run (comma-separated names)")
    ap.add_argument("--cap", type=float, default=30.0, help="seconds before a render is stopped")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=100, help="parts a streamed answer arrives in")
    ap.add_argument("--no-hostile", action="store_true", help="the ordinary answer only")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    args = ap.parse_args()

    from playwright.sync_api import sync_playwright

    sides = {"before": git_js(args.baseline), "after": tree_js()}
    names = [n for n in args.only.split(",") if n] or list(HOSTILE)
    sizes = [int(s) for s in args.sizes.split(",")]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=args.chromium, headless=True,
                                     args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page()
            serve(page, sides)
            page.goto(f"{ORIGIN}/")
            print(f"hostile inputs, one render in a worker, median of {args.repeats} "
                  f"(before: {args.baseline}; cap {args.cap:g} s)")
            print("| input | characters | before | after | before / after |")
            print("|---|---:|---:|---:|---:|")
            for name in ([] if args.no_hostile else names):
                for size in sizes:
                    hostile_row(page, name, size, args.cap, args.repeats)
            print()
            print(f"an ordinary answer on the page (real DOM and layout), median of {args.repeats}: one "
                  f"render of the whole; the answer streamed in {args.steps} parts, one render each "
                  "(the sum, and the last part's)")
            print("| characters | whole, before | whole, after | stream, before | stream, after "
                  "| last part, before | last part, after |")
            print("|---:|---:|---:|---:|---:|---:|---:|")
            page.evaluate("(s) => { window.SECTION = s; }", SECTION)
            for side in ("before", "after"):  # warm-up: modules loaded, functions compiled
                page.evaluate(RENDER_ON_PAGE, [f"{ORIGIN}/{side}", 20_000, 3, 20])
            for size in [int(s) for s in args.stream_sizes.split(",")]:
                got = {side: page.evaluate(RENDER_ON_PAGE,
                                           [f"{ORIGIN}/{side}", size, args.repeats, args.steps])
                       for side in ("before", "after")}
                cells = [fmt(got[side][key], args.cap) for key in ("once", "stream", "last")
                         for side in ("before", "after")]
                print(f"| {size:,} | " + " | ".join(cells) + " |", flush=True)
        finally:
            browser.close()


if __name__ == "__main__":
    main()
