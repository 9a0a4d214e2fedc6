"""``import cursor_agent_api.server`` without the ``[server]`` extra: an ``ImportError`` naming
the extra and its ``pip install`` (the module that is missing kept in ``name``, which the CLI's
own message shows), not a bare "No module named 'fastapi'"."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
sys.modules["fastapi"] = None  # not installed
try:
    import cursor_agent_api.server
except ImportError as e:
    print(type(e).__name__, e.name, e, sep="|")
"""


def test_the_server_package_without_the_extra_names_it() -> None:
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60,
                         check=True)
    kind, name, message = out.stdout.strip().split("|")
    assert (kind, name) == ("ImportError", "fastapi"), out
    assert message.startswith("cursor_agent_api.server needs the [server] extra: "
                              "pip install 'cursor-agent-api[server]' ("), message
