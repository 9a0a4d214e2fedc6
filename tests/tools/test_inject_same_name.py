"""A turn's ``mcp_servers`` entry (or allowlist entry) named like one in the user's own
``.cursor`` file shadows it for the turn only. When the file is edited during the turn (the
user's editor adds a server), only the turn's entries are taken out of it: the user's entry of
the same name was taken out with them, and lost for good."""

from __future__ import annotations

import json
from pathlib import Path

from cursor_agent_api.tools.inject import WorkspaceInjection

MINE = {"command": "docs-server", "args": ["--mine"]}
FROM_CODE = {"command": "docs-server", "args": ["--from-code"]}


def _edit(path: Path, change: dict[str, object]) -> None:
    """The user's edit during the turn: a change merged into the file's top-level object's
    second level (``mcpServers``, ``permissions``)."""
    doc = json.loads(path.read_text())
    for key, value in change.items():
        if isinstance(value, dict):
            doc[key].update(value)
        else:
            doc[key] = value
    path.write_text(json.dumps(doc, indent=2))


def test_the_users_server_of_the_same_name_survives_an_edit_during_the_turn(tmp_path: Path) -> None:
    path = tmp_path / "ws" / ".cursor" / "mcp.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"mcpServers": {"docs": MINE}}, indent=2))
    with WorkspaceInjection(tmp_path / "ws", {"docs": FROM_CODE}, [], root=tmp_path / "j"):
        assert json.loads(path.read_text())["mcpServers"]["docs"] == FROM_CODE  # shadowed
        _edit(path, {"mcpServers": {"added-by-user": {"url": "http://127.0.0.1:1/mcp"}}})
    assert json.loads(path.read_text())["mcpServers"] == {
        "docs": MINE, "added-by-user": {"url": "http://127.0.0.1:1/mcp"}}


def test_shadowed_while_another_turn_holds_it_and_back_when_it_leaves(tmp_path: Path) -> None:
    path = tmp_path / "ws" / ".cursor" / "mcp.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"mcpServers": {"docs": MINE}}, indent=2))
    first = WorkspaceInjection(tmp_path / "ws", {"docs": FROM_CODE}, [], root=tmp_path / "j")
    second = WorkspaceInjection(tmp_path / "ws", {"docs": FROM_CODE, "other": {"url": "u"}}, [],
                                root=tmp_path / "j")
    first.enter()
    second.enter()
    _edit(path, {"mcpServers": {"added-by-user": {"url": "v"}}})
    first.exit()
    assert json.loads(path.read_text())["mcpServers"] == {
        "docs": FROM_CODE, "added-by-user": {"url": "v"}, "other": {"url": "u"}}
    second.exit()
    assert json.loads(path.read_text())["mcpServers"] == {"docs": MINE, "added-by-user": {"url": "v"}}


def test_the_users_allowlist_entry_of_the_same_name_survives_an_edit_during_the_turn(
        tmp_path: Path) -> None:
    path = tmp_path / "ws" / ".cursor" / "cli.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"permissions": {"allow": ["Mcp(docs:search)", "Read(**)"]}}))
    with WorkspaceInjection(tmp_path / "ws", {}, ["Mcp(docs:search)", "Mcp(docs:fetch)"],
                            root=tmp_path / "j"):
        _edit(path, {"permissions": {"deny": ["Shell(rm)"]}})
    assert json.loads(path.read_text())["permissions"] == {
        "allow": ["Mcp(docs:search)", "Read(**)"], "deny": ["Shell(rm)"]}
