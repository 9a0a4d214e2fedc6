"""``serve`` whose agent cannot be started (no ``agent`` on PATH, a wrong ``--agent-binary``):
the run fails with the whole error and the server's remedy (its flags, not ``AgentConfig``),
and the log says it in one line, without a traceback — an expected condition."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from server_helpers import Server, new_chat, wait_run


def test_the_run_error_is_whole_with_the_servers_remedy(make_server: Callable[..., Server],
                                                         tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir" / "agent"
    server = make_server(args=["--agent-binary", str(missing)])
    with server.client() as client:
        chat = new_chat(client)
        r = client.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hi"})
        assert r.status_code in (200, 201, 202), r.text
        run = wait_run(client, r.json()["id"])
    assert run["status"] == "failed" and run["error_type"] == "AgentNotFoundError"
    error = run["error"]
    assert str(missing) in error
    assert "AgentConfig" not in error  # the Python API's remedy, not the server's
    assert "pass its path with --agent-binary" in error
    assert error.endswith("use the bundled simulator (--simulate)")  # whole, not cut at 200
    server.stop()
    log = server.log_text()
    assert "Traceback" not in log
    (line,) = [ln for ln in log.splitlines() if run["id"] in ln]
    assert "failed" in line and "AgentNotFoundError" in line and str(missing) in line


def test_serve_warns_at_start_up_when_the_agent_is_missing(make_server: Callable[..., Server],
                                                          tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir" / "agent"
    server = make_server(args=["--agent-binary", str(missing)])
    assert f"warning: the agent {missing} cannot be found: every run will fail" in server.log_text()
    assert "--simulate" in server.log_text()


def test_no_warning_when_the_agent_is_there(server: Server) -> None:
    assert "cannot be found" not in server.log_text()


def test_a_chats_deleted_workspace_fails_its_run_with_advice_for_the_servers_users(
        server: Server) -> None:
    """The workspace removed after the chat was made: the run fails naming it, with what a
    web or API user can do (serve and worker have no --workspace, which the command line's
    remedy named)."""
    import shutil

    (server.root / "gone").mkdir()
    with server.client() as client:
        chat = new_chat(client, workspace="gone")
        shutil.rmtree(server.root / "gone")
        posted = client.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hi"})
        run = wait_run(client, posted.json()["id"])
    assert run["status"] == "failed" and run["error_type"] == "WorkspaceNotFoundError", run
    assert "gone" in run["error"] and "does not exist" in run["error"]
    assert "--workspace" not in run["error"] and "AgentConfig" not in run["error"]
    assert "create it again, or start a new chat" in run["error"]
