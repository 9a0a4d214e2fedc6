"""Two turns in one workspace, one of them in a program killed (SIGKILL) meanwhile: when the
other turn ends, the dead one's entries go too, and the workspace is as it was. Its exit kept
the dead holder, so the files stayed changed until some later injection swept it; and a sweep
left a dead turn's entries in a file the user had edited meanwhile."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from cursor_agent_api.tools.inject import WorkspaceInjection

from .conftest import _user_files, holder, tree_hash

SERVERS = {"mine": {"url": "http://127.0.0.1:9/mcp"}}


def _killed(child: subprocess.Popen[str]) -> None:
    child.send_signal(signal.SIGKILL)
    child.wait()


@pytest.mark.parametrize("user_files", [False, True])
def test_the_last_live_turn_out_drops_a_killed_ones_entries(tmp_path: Path, user_files: bool) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    if user_files:
        _user_files(ws)
    before = tree_hash(ws)
    peer = holder(ws, "peer")
    with WorkspaceInjection(ws, SERVERS, ["Mcp(mine:ping)"]):
        _killed(peer)
    assert tree_hash(ws) == before, (ws / ".cursor" / "mcp.json").read_text()


def _edited(ws: Path) -> dict[str, object]:
    """The user's edit during the turns: a server added to mcp.json."""
    path = ws / ".cursor" / "mcp.json"
    doc = json.loads(path.read_text())
    doc["mcpServers"]["added-by-user"] = {"url": "http://127.0.0.1:1/mcp"}
    path.write_text(json.dumps(doc))
    return {"mine": {"command": "my-server", "args": ["--port", "1"]},
            "added-by-user": {"url": "http://127.0.0.1:1/mcp"}}


def test_a_killed_turns_entries_leave_a_file_edited_meanwhile_when_the_other_ends(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    ws = _user_files(tmp_path / "ws")
    peer = holder(ws, "peer")
    with WorkspaceInjection(ws, {"turn": {"url": "http://127.0.0.1:9/mcp"}}, []):
        _killed(peer)
        expected = _edited(ws)
    assert json.loads((ws / ".cursor" / "mcp.json").read_text())["mcpServers"] == expected


def test_a_killed_turns_entries_leave_a_file_edited_meanwhile_at_the_sweep(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    ws = _user_files(tmp_path / "ws")
    _killed(holder(ws, "peer"))
    expected = _edited(ws)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with WorkspaceInjection(elsewhere, SERVERS, []):  # any injection sweeps
        pass
    assert json.loads((ws / ".cursor" / "mcp.json").read_text())["mcpServers"] == expected
    assert os.listdir(elsewhere) == []


def test_the_last_live_turn_out_drops_a_killed_ones_approval_entries(tmp_path: Path) -> None:
    from cursor_agent_api.tools.approvals import ApprovalInjection, approvals_file, turn_approval_keys

    ws = tmp_path / "ws"
    ws.mkdir()
    data = Path(os.environ["CURSOR_DATA_DIR"])
    before = tree_hash(data)
    peer = holder(ws, "peer")  # its approval entries in the data dir too
    with ApprovalInjection(approvals_file(os.environ, ws), turn_approval_keys(ws, SERVERS, {})):
        _killed(peer)
    assert tree_hash(data) == before, [str(p) for p in data.rglob("*")]
