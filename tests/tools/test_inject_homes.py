"""Two programs running tool turns in one workspace at once, each with its own
``CURSOR_AGENT_API_HOME`` (a service's home and a user's script): the journal lived in each
program's home, so the second took the first's entries for the user's file and put them
"back" when it left — a workspace with no ``.cursor`` kept ``.cursor/mcp.json`` (``{"mcpServers":
{}}``) and ``cli.json`` (an empty allow list). The journal belongs to the workspace now: one
per user, whatever the home."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from cursor_agent_api.tools.inject import InjectionError, WorkspaceInjection

from .conftest import _user_files, holder, leave, tree_hash


@pytest.mark.parametrize("user_files", [False, True])
def test_two_programs_with_their_own_homes_leave_the_workspace_as_it_was(
        tmp_path: Path, user_files: bool) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    if user_files:
        _user_files(ws)
    data = Path(os.environ["CURSOR_DATA_DIR"])  # where the approval entries go
    before = tree_hash(ws), tree_hash(data)
    a = holder(ws, "A", tmp_path / "homeA")
    b = holder(ws, "B", tmp_path / "homeB")
    assert {"A", "B"} <= set((ws / ".cursor" / "mcp.json").read_text().split('"'))
    leave(a)
    leave(b)
    assert (tree_hash(ws), tree_hash(data)) == before, \
        sorted(str(p) for p in [*ws.rglob("*"), *data.rglob("*")])


def test_what_a_crash_left_in_an_earlier_versions_journal_is_still_put_back(tmp_path: Path) -> None:
    """Versions before kept the journal in ``$CURSOR_AGENT_API_HOME/injections``: the next
    injection sweeps it too."""
    ws = tmp_path / "ws"
    ws.mkdir()
    home = Path(os.environ["CURSOR_AGENT_API_HOME"])
    old = holder(ws, "old", home, str(home / "injections"))
    old.send_signal(signal.SIGKILL)
    old.wait()
    assert (ws / ".cursor").exists()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with WorkspaceInjection(elsewhere, {"x": {"url": "http://127.0.0.1:9/mcp"}}, []):
        pass
    assert os.listdir(ws) == []


def test_a_journal_that_cannot_be_made_is_a_clear_error(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "a-file" / "data"))
    ws = tmp_path / "ws"
    ws.mkdir()
    with pytest.raises(InjectionError, match=r"cannot be made .* nothing was changed.*XDG_DATA_HOME"):
        WorkspaceInjection(ws, {"x": {"url": "http://127.0.0.1:9/mcp"}}, []).enter()
    assert os.listdir(ws) == []
