"""The stderr classifier on a hostile tail: the rules before and after the wave-8 fix.

Run: ``.venv/bin/python bench/bench_stderr_classify.py [--repeats N]``

The input is one line of ``model model …`` (what a broken agent, or one echoing a prompt,
may print on stderr); ``classify_failure`` runs on the event loop as a failed turn ends.
Baseline: the rules as they were (``model .* not available`` over the whole tail, quadratic);
new: :func:`cursor_agent_api.runtime.stderr.classify_failure` (bounded, line-local patterns
over the last ``CLASSIFIED_CHARS`` of the tail). Both run in this process, interleaved;
medians of the repeats. Never run as a test: figures depend on the machine.
"""

from __future__ import annotations

import argparse
import re
import statistics
import time

from cursor_agent_api.protocol import strip_ansi
from cursor_agent_api.runtime.stderr import classify_failure

_BEFORE = [re.compile(p, re.I) for p in (
    r"authentication required|not logged in|agent login|cursor-agent login"
    r"|api key is invalid|invalid api key|unauthori[sz]ed",
    r"workspace trust required|trust this workspace|pass --trust",
    r"cannot use this model|unknown model|invalid model|model .* not available",
    r"failed to claim persistent session|chat id must be a uuid|may still be running"
    r"|cannot resume|could not resume|session not found|chat not found",
    r"usage limit|hit your .{0,40}limit",
)]


def before(stderr: str) -> bool:
    """The old rules' searches over the whole (stripped) tail."""
    text = strip_ansi(stderr)
    return any(p.search(text) for p in _BEFORE)


def timed(fn: object, arg: str) -> float:
    t0 = time.perf_counter()
    fn(arg)  # type: ignore[operator]
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print("| tail | before (median) | after (median) | ratio |")
    print("|---:|---:|---:|---:|")
    for kib in (16, 32, 64):
        line = ("model " * (kib * 1024 // 6 + 1))[: kib * 1024 - 1] + "\n"
        old, new = [], []
        for _ in range(args.repeats):
            old.append(timed(before, line))
            new.append(timed(lambda s: classify_failure(1, s), line))
        o, n = statistics.median(old), statistics.median(new)
        print(f"| {kib} KiB | {o * 1000:,.1f} ms | {n * 1000:,.2f} ms | {o / n:,.0f}x |")


if __name__ == "__main__":
    main()
