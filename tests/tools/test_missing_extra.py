"""Tools given to a client without the ``[tools]`` extra: the ``ImportError`` names the extra and
its ``pip install``, as ``from cursor_agent_api.tools import tool`` does — not a bare
"No module named 'httpx2'" from deep in the tool server."""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """
import sys
sys.modules[{module!r}] = None  # not installed
from cursor_agent_api import CursorAgentClient
def lookup_order(order_id: str) -> str:
    return order_id
try:
    CursorAgentClient(trust=True, tools=[lookup_order])
except ImportError as e:
    print(type(e).__name__, e.name, e, sep="|")
"""


@pytest.mark.parametrize("module", ["httpx2", "mcp"])
def test_tools_without_the_extra_name_it(module: str) -> None:
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(module=module)], capture_output=True,
                         text=True, timeout=60, check=True)
    kind, name, message = out.stdout.strip().split("|")
    assert (kind, name) == ("ImportError", module), out
    assert message.startswith("cursor_agent_api.tools needs the [tools] extra: "
                              "pip install 'cursor-agent-api[tools]' ("), message
