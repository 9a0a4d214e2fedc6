"""Cost of the owner guard (issue 11.6): start-up and whole-turn time, guard on vs off.

Run: ``.venv/bin/python bench/bench_guard.py [--rounds N]``

The stand-in agent is a tiny Python script that reads its stdin to EOF and writes one
``result`` line. Each round runs, interleaved, the async client with
``runtime.process.OWNER_GUARD`` off (the baseline: the agent started directly) and on (the
guard's interpreter starts, forks the watcher, then execs the agent in place). Measured:
from ``query_stream`` to the first event (start-up), and a whole ``query`` (start to the
agent reaped and its group gone). Medians of the rounds, and the ratio.
Never run as a test: figures depend on the machine; BENCHMARKS.md records them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time

from cursor_agent_api import AgentConfig, AsyncCursorAgentClient
from cursor_agent_api.runtime import process

STAND_IN = """#!{python}
import sys
sys.stdin.buffer.read()
sys.stdout.write('{{"type":"result","subtype":"success","result":"ok","session_id":"b"}}\\n')
"""


async def one(config: AgentConfig) -> tuple[float, float]:
    client = AsyncCursorAgentClient(config)
    t0 = time.perf_counter()
    stream = client.query_stream("hi")
    first = None
    async for _ in stream:
        if first is None:
            first = time.perf_counter() - t0
    await stream.wait()
    total = time.perf_counter() - t0
    assert first is not None and stream.result is not None and stream.result.success
    return first, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        agent = os.path.join(tmp, "agent")
        with open(agent, "w") as f:
            f.write(STAND_IN.format(python=sys.executable))
        os.chmod(agent, 0o755)
        config = AgentConfig(agent_binary=agent, result_grace=5.0)
        figures: dict[bool, tuple[list[float], list[float]]] = {False: ([], []), True: ([], [])}
        for _ in range(args.rounds):
            for guard in (False, True):
                process.OWNER_GUARD = guard
                first, total = asyncio.run(one(config))
                figures[guard][0].append(first * 1000)
                figures[guard][1].append(total * 1000)
    base_first = statistics.median(figures[False][0])
    base_total = statistics.median(figures[False][1])
    print(f"rounds: {args.rounds} (interleaved); medians in ms")
    print("| flavour | start-up to first event | vs off | whole turn | vs off |")
    print("|---|---:|---:|---:|---:|")
    for guard in (False, True):
        first = statistics.median(figures[guard][0])
        total = statistics.median(figures[guard][1])
        name = "guard on (default on Linux)" if guard else "guard off (baseline)"
        print(f"| {name} | {first:.2f} | {first / base_first:.2f}x | {total:.2f} | "
              f"{total / base_total:.2f}x |")


if __name__ == "__main__":
    main()
