"""Seed 004's flat tool-call reads, mapped to the typed ones: the map names real attributes,
and ``AgentEvent``'s docstring, which points to it, runs."""

from __future__ import annotations

import doctest
import re

from docs_blocks import REPO

from cursor_agent_api.protocol import events
from cursor_agent_api.protocol.tools import ToolCall


def _section() -> str:
    text = (REPO / "docs" / "client.md").read_text(encoding="utf-8")
    start = text.index("## Coming from seed 004")
    return text[start:text.index("\n## ", start + 1)]


def test_the_map_covers_every_flat_read_of_the_seed() -> None:
    seed = next((REPO / "tests" / "data" / "seeds").glob("004_*.txt")).read_text(encoding="utf-8")
    flat = set(re.findall(r'\.get\("(tool_name|result|exit_code|output|error|duration_ms)"', seed))
    section = _section()
    for key in flat - {"error"}:  # error results are not tool calls
        assert f'"{key}"' in section, key


def test_every_typed_name_in_the_map_exists() -> None:
    names = set(re.findall(r"event\.tool_call\.(\w+)", _section()))
    names |= set(re.findall(r"`\.(\w+)`", _section()))
    assert {"kind", "exit_code", "output", "status"} <= names
    missing = sorted(n for n in names if not hasattr(ToolCall, n))
    assert missing == []
    assert hasattr(events.AgentEvent, "call_id") and hasattr(events.AgentEvent, "tool_call")


def test_agent_event_docstring_points_to_the_typed_access_and_runs() -> None:
    doc = events.AgentEvent.__doc__ or ""
    assert "tool_call" in doc and "Coming from seed" in doc and "exit_code" in doc
    finder = doctest.DocTestFinder()
    tests = [t for t in finder.find(events.AgentEvent, "AgentEvent", globs=vars(events))
             if t.name == "AgentEvent"]
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for t in tests:
        runner.run(t)
    assert runner.summarize(verbose=False).attempted >= 5
    assert runner.summarize(verbose=False).failed == 0
