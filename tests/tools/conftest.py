"""Fixtures of the tools tests: a private journal home, a workspace with the user's own
``.cursor`` files, a hash of that directory, two ``@tool`` functions (one raises), and another
program holding a turn's entries in a workspace (:func:`holder`)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_api.config import AgentConfig
from cursor_agent_api.tools import Tool, tool

USER_MCP = b'{\n  "mcpServers": {"mine": {"command": "my-server", "args": ["--port", "1"]}}\n}'
USER_CLI = b'{"permissions": {"allow": ["Read(**)"], "deny": ["Shell(rm)"]}}\n'


def tree_hash(directory: Path) -> str:
    """Every path under ``directory`` (directories too), with each file's bytes and mode."""
    digest = hashlib.sha256()
    if not directory.exists():
        return "absent"
    for root, dirs, files in os.walk(directory):
        dirs.sort()
        for name in sorted(files) + [d + "/" for d in dirs]:
            path = Path(root) / name.rstrip("/")
            digest.update(str(path.relative_to(directory)).encode() + b"\0")
            if not name.endswith("/"):
                digest.update(path.read_bytes() + oct(path.stat().st_mode).encode())
    return digest.hexdigest()


@pytest.fixture(autouse=True)
def journal_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Injection journals in a private directory (the per-user data dir, ``XDG_DATA_HOME``),
    the tool's home in another, and the agent's data dir (where MCP approval entries go) in a
    third, never the user's ``~/.cursor`` (inherited by child processes)."""
    home = tmp_path_factory.mktemp("api-home")
    monkeypatch.setenv("CURSOR_AGENT_API_HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("user-data")))
    monkeypatch.setenv("CURSOR_DATA_DIR", str(tmp_path_factory.mktemp("cursor-data")))
    return home


def _user_files(workspace: Path) -> Path:
    (workspace / ".cursor").mkdir()
    (workspace / ".cursor" / "mcp.json").write_bytes(USER_MCP)
    (workspace / ".cursor" / "cli.json").write_bytes(USER_CLI)
    (workspace / ".cursor" / "cli.json").chmod(0o600)
    return workspace


@pytest.fixture(params=["no-cursor-dir", "user-files"])
def workspace(request: pytest.FixtureRequest, cursor_sim_workspace: Path) -> Path:
    """The simulator's workspace: without ``.cursor``, or with the user's own mcp.json and cli.json."""
    if request.param == "user-files":
        _user_files(cursor_sim_workspace)
    return cursor_sim_workspace


@pytest.fixture
def user_workspace(cursor_sim_workspace: Path) -> Path:
    """The simulator's workspace with the user's own mcp.json and cli.json (the merge case)."""
    return _user_files(cursor_sim_workspace)


@pytest.fixture
def sim(make_cursor_sim_config: Callable[..., AgentConfig]) -> Callable[..., AgentConfig]:
    def make(fault: str | None = None, **fields: Any) -> AgentConfig:
        fields.setdefault("result_grace", 1.0)
        fields.setdefault("kill_grace", 1.0)
        fields.setdefault("timeout", 120.0)
        return make_cursor_sim_config(fault=fault, **fields)

    return make


@tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look up an order by its id."""
    return {"id": order_id, "status": "shipped", "items": 3}


@tool
async def track_parcel(parcel: str) -> str:
    """Where a parcel is."""
    raise LookupError(f"carrier unreachable for {parcel}")


TOOLS: list[Tool] = [lookup_order, track_parcel]
PROMPT = 'Check lookup_order {"order_id": "A1"} and track_parcel {"parcel": "P-9"}'


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


def holder(ws: Path, name: str, home: Path | None = None, *root: str) -> subprocess.Popen[str]:
    """A program holding a turn's entries (servers ``{name: …}``, allowlist ``Mcp(name:ping)``,
    approval entries) in ``ws`` until :func:`leave`; ``home``: its own ``CURSOR_AGENT_API_HOME``,
    ``root``: where its workspace journal is (then no approval entries)."""
    env = {**os.environ, **({"CURSOR_AGENT_API_HOME": str(home)} if home else {})}
    child = subprocess.Popen([sys.executable, "-c", HOLDER, str(ws), name, *root], env=env,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline() == "in\n"
    return child


def leave(child: subprocess.Popen[str]) -> None:
    assert child.stdin is not None
    child.stdin.close()
    assert child.wait() == 0
