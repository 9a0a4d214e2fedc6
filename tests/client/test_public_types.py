"""The public types hold under a user's ``mypy --strict`` (review of a bot, F2).

What the docs show type-checks: ``AgentConfig(output_format="json")`` (a documented string,
refused before as not an ``OutputFormat``); ``event.exception.exit_code`` (``exception`` was
typed ``Exception``, though it is the result's ``CursorAgentError``); and a ``@tool``
function keeps its signature (``Tool`` was ``(*Any) -> Any``: a wrong call passed), so a
wrong call to it is an error, as it would be for the plain function.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import cursor_agent_api

SRC = Path(cursor_agent_api.__file__).parent.parent  # this checkout's, not an installed one's

RIGHT = '''
from __future__ import annotations
from cursor_agent_api import AgentConfig, AgentEvent, EventType
from cursor_agent_api.tools import Tool, tool

config = AgentConfig(trust=True, output_format="json")

def report(event: AgentEvent) -> str:
    if event.type is EventType.RESULT_ERROR and event.exception is not None:
        return f"{event.exception.exit_code} {event.exception.cli_message()}"
    return ""

@tool
def lookup_order(order_id: str) -> dict[str, str]:
    """Look up an order by its id."""
    return {"id": order_id}

@tool(name="add", description="Add two numbers.")
async def add(a: int, b: int) -> int:
    return a + b

order: dict[str, str] = lookup_order("A-1")
tools: list[Tool] = [lookup_order, add]  # a bare Tool is any tool
'''

WRONG = '''
from __future__ import annotations
from cursor_agent_api import AgentConfig
from cursor_agent_api.tools import tool

@tool
def lookup_order(order_id: str) -> dict[str, str]:
    return {"id": order_id}

wrong: int = lookup_order(42)
config = AgentConfig(output_format="xml")
'''


def _mypy(tmp_path: Path, code: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "example.py").write_text(code)
    env = {**os.environ, "MYPYPATH": str(SRC)}
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir",
                           str(tmp_path / "cache"), "example.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_documented_uses_pass_mypy_strict(tmp_path: Path) -> None:
    run = _mypy(tmp_path, RIGHT)
    assert run.returncode == 0, run.stdout + run.stderr


def test_a_wrong_call_to_a_tool_and_a_wrong_format_are_errors(tmp_path: Path) -> None:
    run = _mypy(tmp_path, WRONG)
    out = run.stdout
    assert 'Argument 1 to "__call__" of "Tool" has incompatible type "int"; expected "str"' in out
    assert 'has type "dict[str, str]", variable has type "int"' in out
    assert 'Argument "output_format" to "AgentConfig" has incompatible type "Literal[\'xml\']"' \
        in out, out
