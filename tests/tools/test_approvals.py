"""The CLI's MCP approval entries for a turn's servers (MCP.md §4, §7): written where the agent
looks, merged with the user's own, taken back exactly, never through a symbolic link; and the
warning when the agent never listed the tool server."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_api import CursorAgentClient
from cursor_agent_api.config import AgentConfig
from cursor_agent_api.protocol import ToolKind
from cursor_agent_api.tools import tool
from cursor_agent_api.tools.approvals import ApprovalInjection, approvals_file, turn_approval_keys
from cursor_agent_api.tools.host import ToolHost, prepare_turn
from cursor_agent_api.tools.inject import InjectionError

from .conftest import TOOLS, tree_hash

SERVERS = {"app": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${env:T}"}},
           "rg": {"command": "rg-mcp", "args": ["--root", "${env:ROOT}"]}}


def js_key(name: str, definition: dict[str, Any], workspace: str) -> str:
    """MCP.md §4, written apart from the code under test."""
    text = json.dumps({"path": workspace, "server": definition}, separators=(",", ":"))
    return f"{name}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def test_the_keys_cover_every_form_a_build_may_hash(tmp_path: Path) -> None:
    ws = str(tmp_path.resolve())
    keys = turn_approval_keys(ws, SERVERS, {"T": "secret", "ROOT": "/r"})
    assert keys == [
        js_key("app", SERVERS["app"], ws),                     # as written in mcp.json
        js_key("app", {"url": "http://127.0.0.1:9/mcp"}, ws),  # ACP http: {url} alone
        js_key("rg", SERVERS["rg"], ws),
        js_key("rg", {"command": "rg-mcp", "args": ["--root", "/r"], "env": {}}, ws),  # ACP stdio
    ]


def test_the_file_is_where_the_agent_looks() -> None:
    assert approvals_file({"CURSOR_DATA_DIR": "/d", "CURSOR_CONFIG_DIR": "/c", "HOME": "/h"}, "/w/a b") == \
        Path("/d/projects/w-a-b/mcp-approvals.json")
    assert approvals_file({"CURSOR_CONFIG_DIR": "/c", "HOME": "/h"}, "/w") == \
        Path("/c/projects/w/mcp-approvals.json")
    assert approvals_file({"HOME": "/h"}, "/w") == Path("/h/.cursor/projects/w/mcp-approvals.json")


def test_merged_with_the_users_entries_and_taken_back_exactly(tmp_path: Path) -> None:
    path = tmp_path / "data" / "projects" / "ws" / "mcp-approvals.json"
    path.parent.mkdir(parents=True)
    path.write_text('["mine-0123456789abcdef", "app-shared"]')
    path.chmod(0o640)
    before = path.read_bytes()
    first = ApprovalInjection(path, ["app-shared", "app-1", "app-2"], root=tmp_path / "j")
    second = ApprovalInjection(path, ["app-2", "app-3"], root=tmp_path / "j")
    first.enter()
    second.enter()
    assert json.loads(path.read_bytes()) == ["mine-0123456789abcdef", "app-shared", "app-1", "app-2", "app-3"]
    assert path.stat().st_mode & 0o777 == 0o640
    first.exit()  # app-2 is still needed by the second turn; the user's app-shared stays
    assert json.loads(path.read_bytes()) == ["mine-0123456789abcdef", "app-shared", "app-2", "app-3"]
    path.write_text(json.dumps([*json.loads(path.read_bytes()), "user-added-meanwhile"]))
    second.exit()
    assert json.loads(path.read_bytes()) == ["mine-0123456789abcdef", "app-shared", "user-added-meanwhile"]
    path.write_bytes(before)


def test_a_file_and_directories_it_created_are_removed(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    path = data / "projects" / "ws" / "mcp-approvals.json"
    with ApprovalInjection(path, ["app-1"], root=tmp_path / "j"):
        assert json.loads(path.read_bytes()) == ["app-1"]
        assert path.stat().st_mode & 0o777 == 0o600
    assert list(data.iterdir()) == []


@pytest.mark.parametrize("linked", ["file", "dir"])
def test_never_written_through_a_symbolic_link(tmp_path: Path, linked: str) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "mcp-approvals.json").write_text('["x-1"]')
    slug = tmp_path / "data" / "projects" / "ws"
    if linked == "dir":
        slug.parent.mkdir(parents=True)
        slug.symlink_to(elsewhere)
    else:
        slug.mkdir(parents=True)
        (slug / "mcp-approvals.json").symlink_to(elsewhere / "mcp-approvals.json")
    before = tree_hash(elsewhere)
    with pytest.raises(InjectionError, match="symbolic link"):
        ApprovalInjection(slug / "mcp-approvals.json", ["app-1"], root=tmp_path / "j").enter()
    assert tree_hash(elsewhere) == before


def test_a_file_that_is_not_an_array_is_left_alone(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "projects" / "ws" / "mcp-approvals.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"not": "a list"}')
    with caplog.at_level(logging.WARNING, logger="cursor_agent_api.tools"), \
            ApprovalInjection(path, ["app-1"], root=tmp_path / "j") as inj:
        assert not inj.written
    assert path.read_text() == '{"not": "a list"}'
    assert "not a JSON array" in caplog.text


def _enter_and_die(path: Path, root: Path) -> None:
    """A process that writes the key ``dead-1`` into ``path``, then is killed (SIGKILL)."""
    code = ("import os, signal, sys; from pathlib import Path\n"
            "from cursor_agent_api.tools.approvals import ApprovalInjection\n"
            "ApprovalInjection(Path(sys.argv[1]), ['dead-1'], root=Path(sys.argv[2])).enter()\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(path), str(root)], timeout=60)
    assert proc.returncode == -9


def test_the_entries_of_a_killed_process_are_taken_out_by_the_next_turn(tmp_path: Path) -> None:
    path = tmp_path / "data" / "projects" / "ws" / "mcp-approvals.json"
    path.parent.mkdir(parents=True)
    path.write_text('["mine-1"]')
    _enter_and_die(path, tmp_path / "j")
    assert json.loads(path.read_bytes()) == ["mine-1", "dead-1"]
    with ApprovalInjection(path, ["app-1"], root=tmp_path / "j"):
        assert json.loads(path.read_bytes()) == ["mine-1", "app-1"]
    assert json.loads(path.read_bytes()) == ["mine-1"]


USERS_OWN = ["mine-1", {"note": "the user's own object"}, ["a", "list"], 7, None]


def test_an_entry_that_is_not_a_string_is_the_users_and_stays(tmp_path: Path) -> None:
    """An object or a list in the array (unhashable) is the user's: kept as it is, and the
    turn's keys still come out (a ``TypeError`` here once left them in the file)."""
    path = tmp_path / "data" / "projects" / "ws" / "mcp-approvals.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(USERS_OWN))
    first = ApprovalInjection(path, ["app-1", "app-2"], root=tmp_path / "j")
    second = ApprovalInjection(path, ["app-2"], root=tmp_path / "j")
    first.enter()
    second.enter()
    assert json.loads(path.read_bytes()) == [*USERS_OWN, "app-1", "app-2"]
    first.exit()
    assert json.loads(path.read_bytes()) == [*USERS_OWN, "app-2"]
    second.exit()
    assert json.loads(path.read_bytes()) == USERS_OWN


def test_a_dead_turns_entries_are_taken_out_beside_an_entry_that_is_not_a_string(tmp_path: Path) -> None:
    """The sweep of a later turn meets the user's object too: it must not stop that turn."""
    path = tmp_path / "data" / "projects" / "ws" / "mcp-approvals.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(USERS_OWN))
    _enter_and_die(path, tmp_path / "j")
    with ApprovalInjection(path, ["app-1"], root=tmp_path / "j") as inj:
        assert inj.written
        assert json.loads(path.read_bytes()) == [*USERS_OWN, "app-1"]
    assert json.loads(path.read_bytes()) == USERS_OWN


def test_a_journal_of_the_wrong_shape_does_not_stop_a_turn(tmp_path: Path,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "data" / "projects" / "ws" / "mcp-approvals.json"
    root = tmp_path / "j"
    journal = ApprovalInjection(path, ["app-0"], root=root).journal.directory  # the path's journal
    journal.mkdir(parents=True)
    (journal / "state.json").write_text(json.dumps(
        {"path": str(path), "holders": {"turn-x": {"pid": 1, "keys": [{"a": 1}], "added": [[1]]}}}))
    with caplog.at_level(logging.WARNING, logger="cursor_agent_api.tools"), \
            ApprovalInjection(path, ["app-1"], root=root):
        assert json.loads(path.read_bytes()) == ["app-1"]
    assert not path.exists()
    assert "approval journal" in caplog.text and (journal / "state.bad.json").exists()


def test_an_unexpected_error_in_exit_or_sweep_is_one_line_and_the_turn_ends(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """Whatever goes wrong taking the entries out, the turn's own teardown runs (the tool host
    learns the turn ended) and a later turn can start; the log says what happened, once."""
    import cursor_agent_api.tools.approvals as approvals_module

    host = ToolHost(TOOLS)
    _, scope = prepare_turn(host, AgentConfig(workspace=str(tmp_path)))

    def broken(*args: Any) -> None:
        raise RuntimeError("something unforeseen")

    async def main() -> None:
        await scope.enter()
        assert host.active == 1
        monkeypatch.setattr(approvals_module, "_take_out", broken)
        monkeypatch.setattr(approvals_module, "_release_dead", broken)
        scope.exit()
        assert host.active == 0  # turn_ended ran
        _, later = prepare_turn(host, AgentConfig(workspace=str(tmp_path)))
        await later.enter()  # its sweep meets the same error
        later.exit()
        await host.aclose()

    with caplog.at_level(logging.WARNING, logger="cursor_agent_api.tools"):
        asyncio.run(main())
    lines = [r for r in caplog.records if "something unforeseen" in r.getMessage()]
    assert lines and all(r.exc_info is None and "RuntimeError" in r.getMessage() for r in lines)
    assert any("could not take the turn's MCP approval entries out" in r.getMessage() for r in lines)
    assert any("could not clean the approval journal" in r.getMessage() for r in lines)


def test_a_failure_restoring_the_workspace_still_takes_the_entries_out_and_ends_the_turn(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``mcp.json`` cannot be restored (a link planted meanwhile): that error is the turn's, but
    the approval entries still come out and the tool host still learns the turn ended."""
    from cursor_agent_api.tools.inject import WorkspaceInjection

    host = ToolHost(TOOLS)
    _, scope = prepare_turn(host, AgentConfig(workspace=str(tmp_path)))

    def refused(self: WorkspaceInjection) -> None:
        raise InjectionError("a symbolic link was planted")

    async def main() -> None:
        await scope.enter()
        assert scope.approvals is not None and scope.approvals.path.exists()
        monkeypatch.setattr(WorkspaceInjection, "exit", refused)
        with pytest.raises(InjectionError, match="planted"):
            scope.exit()
        assert host.active == 0
        await host.aclose()

    asyncio.run(main())
    assert scope.approvals is not None and not scope.approvals.path.exists()


def test_a_print_mode_turn_writes_the_entries_and_takes_them_back(
        make_cursor_sim_config: Callable[..., Any], cursor_sim_workspace: Path, tmp_path: Path) -> None:
    data = tmp_path / "agent-data"
    seen: list[Any] = []
    mcp_json = cursor_sim_workspace / ".cursor" / "mcp.json"

    @tool
    def lookup_order(order_id: str) -> str:
        """Look up an order."""
        seen.extend(json.loads(p.read_bytes()) for p in data.rglob("mcp-approvals.json"))
        seen.append(json.loads(mcp_json.read_bytes())["mcpServers"])
        return order_id

    config = make_cursor_sim_config(env={"CURSOR_DATA_DIR": str(data)}, timeout=120.0)
    with CursorAgentClient(config, tools=[lookup_order]) as client:
        result = client.query('lookup_order {"order_id": "A1"}')
    assert result.success, result.error
    (call,) = [c for c in result.tool_calls if c.kind is ToolKind.MCP]
    keys, servers = seen
    entry = servers[call.mcp_server]
    ws = str(cursor_sim_workspace.resolve())
    assert keys == [js_key(call.mcp_server, entry, ws), js_key(call.mcp_server, {"url": entry["url"]}, ws)]
    assert not data.exists()  # taken back: the file and the directories it made


def test_an_acp_turn_warns_when_the_agent_never_listed_the_tools(
        make_cursor_sim_config: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """The entries go somewhere the agent does not look (a build with another format behaves
    the same): the server is not loaded, the turn ends, and one warning says why."""
    import cursor_agent_api.tools.host as host_module

    monkeypatch.setattr(host_module, "approvals_file",
                        lambda env, ws: tmp_path / "nowhere" / "projects" / "x" / "mcp-approvals.json")

    @tool
    def lookup_order(order_id: str) -> str:
        """Look up an order."""
        return order_id

    config = make_cursor_sim_config(transport="acp", timeout=120.0, kill_grace=5.0)
    with caplog.at_level(logging.WARNING, logger="cursor_agent_api.tools"), \
            CursorAgentClient(config, tools=[lookup_order]) as client:
        result = client.query('lookup_order {"order_id": "A1"}')
    assert result.success, result.error
    assert not [c for c in result.tool_calls if c.mcp_tool == "lookup_order"]
    (warning,) = [r for r in caplog.records if "never listed" in r.getMessage()]
    assert "approval entry" in warning.getMessage() and "nowhere" in warning.getMessage()


def test_a_journal_without_its_existed_flag_keeps_the_users_file(tmp_path: Path,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    """A journal of an older shape (no ``existed``) whose holder died: the sweep takes the
    holder's key out and keeps the file (it failed on every later turn with a KeyError)."""
    from cursor_agent_api.tools.approvals import sweep

    path = tmp_path / "data" / "projects" / "ws" / "mcp-approvals.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(["app-dead"]))
    root = tmp_path / "j"
    journal = ApprovalInjection(path, ["app-0"], root=root).journal.directory
    journal.mkdir(parents=True)
    dead = {"pid": 2**22 + 12345, "start": 1, "keys": ["app-dead"], "added": ["app-dead"]}
    (journal / "state.json").write_text(json.dumps({"path": str(path), "holders": {"turn-x": dead}}))
    with caplog.at_level(logging.WARNING, logger="cursor_agent_api.tools"):
        sweep(root)
    assert json.loads(path.read_bytes()) == []  # whether it existed is unknown: it stays
    assert "could not clean" not in caplog.text


@pytest.mark.parametrize("env", [
    {"HOME": "/h"},
    {"HOME": "/h", "CURSOR_CONFIG_DIR": "/c"},
    {"HOME": "/h", "CURSOR_CONFIG_DIR": "~/cfg"},
    {"HOME": "/h", "CURSOR_DATA_DIR": "~/data", "CURSOR_CONFIG_DIR": "/c"},
    {"HOME": "/h", "CURSOR_DATA_DIR": "/d"},
])
def test_the_simulator_reads_the_approvals_where_the_library_writes_them(
    env: dict[str, str], tmp_path: Path
) -> None:
    """One answer for one environment: a ``~`` in ``CURSOR_CONFIG_DIR`` or ``CURSOR_DATA_DIR``
    is a folder named ``~`` to both (Node does not expand it), not the home to one of them
    (review of the change, finding 2)."""
    from cursor_agent_api.sim.mcp_config import approval_root, workspace_slug

    ws = str(tmp_path)
    read = approval_root(env) / "projects" / workspace_slug(os.path.realpath(ws)) / "mcp-approvals.json"
    assert approvals_file(env, ws) == read
