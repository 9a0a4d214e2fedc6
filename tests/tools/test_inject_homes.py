"""Two programs running tool turns in one workspace at once, each with its own
``CURSOR_AGENT_API_HOME`` (a service's home and a user's script): the journal lived in each
program's home, so the second took the first's entries for the user's file and put them
"back" when it left — a workspace with no ``.cursor`` kept ``.cursor/mcp.json`` (``{"mcpServers":
{}}``) and ``cli.json`` (an empty allow list). The journal belongs to the workspace now: one
per user, whatever the home."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cursor_agent_api.tools.inject import InjectionError, WorkspaceInjection

from .conftest import _user_files, tree_hash

HOLDER = textwrap.dedent("""
    import contextlib, os, sys
    from pathlib import Path
    from cursor_agent_api.tools.approvals import ApprovalInjection, approvals_file, turn_approval_keys
    from cursor_agent_api.tools.inject import WorkspaceInjection
    ws, name, root = sys.argv[1], sys.argv[2], (sys.argv[3] if len(sys.argv) > 3 else None)
    servers = {name: {"url": "http://127.0.0.1:9/mcp"}}
    with contextlib.ExitStack() as turn:
        turn.enter_context(WorkspaceInjection(ws, servers, [f"Mcp({name}:ping)"],
                                              root=Path(root) if root else None))
        if root is None:  # as a turn does: the approval entries too
            turn.enter_context(ApprovalInjection(approvals_file(os.environ, ws),
                                                 turn_approval_keys(ws, servers, {})))
        print("in", flush=True)
        sys.stdin.readline()  # until told to leave
""")


def _holder(ws: Path, name: str, home: Path, *root: str) -> subprocess.Popen[str]:
    """A program (its own ``CURSOR_AGENT_API_HOME``) holding a turn's entries in ``ws``."""
    child = subprocess.Popen([sys.executable, "-c", HOLDER, str(ws), name, *root],
                             env={**os.environ, "CURSOR_AGENT_API_HOME": str(home)},
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline() == "in\n"
    return child


def _leave(child: subprocess.Popen[str]) -> None:
    assert child.stdin is not None
    child.stdin.close()
    assert child.wait() == 0


@pytest.mark.parametrize("user_files", [False, True])
def test_two_programs_with_their_own_homes_leave_the_workspace_as_it_was(
        tmp_path: Path, user_files: bool) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    if user_files:
        _user_files(ws)
    data = Path(os.environ["CURSOR_DATA_DIR"])  # where the approval entries go
    before = tree_hash(ws), tree_hash(data)
    a = _holder(ws, "A", tmp_path / "homeA")
    b = _holder(ws, "B", tmp_path / "homeB")
    assert {"A", "B"} <= set((ws / ".cursor" / "mcp.json").read_text().split('"'))
    _leave(a)
    _leave(b)
    assert (tree_hash(ws), tree_hash(data)) == before, \
        sorted(str(p) for p in [*ws.rglob("*"), *data.rglob("*")])


def test_what_a_crash_left_in_an_earlier_versions_journal_is_still_put_back(tmp_path: Path) -> None:
    """Versions before kept the journal in ``$CURSOR_AGENT_API_HOME/injections``: the next
    injection sweeps it too."""
    ws = tmp_path / "ws"
    ws.mkdir()
    home = Path(os.environ["CURSOR_AGENT_API_HOME"])
    old = _holder(ws, "old", home, str(home / "injections"))
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
