"""The ``--acp`` terminal prompt shows what the agent asks for as data: an escape sequence in
the command, path or diff is shown, never obeyed by the person's terminal."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from cursor_agent_api.cli.steer import TerminalSteering
from cursor_agent_api.permissions import PermissionRequest
from cursor_agent_api.protocol.acp_mapper import acp_tool_call


def _shown(tool_call: dict[str, object]) -> str:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system=None, width=120)
    steer = TerminalSteering(console, reader=lambda: "r")  # the person rejects
    steer.can_use_tool(PermissionRequest("s", acp_tool_call(tool_call)))
    return out.getvalue()


@pytest.mark.parametrize("command", [
    "\x1b7rm -rf ~/work\x1b8ls -la       ",  # the cursor saved, then restored: ls drawn over rm
    "rm -rf ~ \x1bc",  # a full reset clears the screen
    "rm -rf ~\rls -la  ",  # a carriage return: ls drawn over rm
])
def test_the_agents_command_is_shown_with_its_escapes_visible(command: str) -> None:
    shown = _shown({"toolCallId": "c", "kind": "execute", "title": f"`{command}`",
                    "rawInput": {"command": command}})
    assert "\x1b" not in shown and "\r" not in shown
    assert "rm -rf ~" in shown  # what would run is what the person reads


def test_an_edits_path_and_diff_are_shown_with_their_escapes_visible() -> None:
    path = "src/a.py\x1b[2K\x1b[1Gsrc/harmless.py"
    shown = _shown({"toolCallId": "c", "kind": "edit", "title": "Edit File",
                    "rawInput": {"path": path},
                    "content": [{"type": "diff", "path": path, "oldText": "x = 1\n",
                                 "newText": "x = 2\x1b7\n"}]})
    assert "\x1b" not in shown
    assert "src/a.py" in shown
