"""Issue 11.5: nothing of the server's reaches the agent's environment."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .server_helpers import MARKER_ENV, Server, all_events, new_chat, wait_run


def test_agent_env_has_no_server_variable(make_server: Callable[..., Server], db_url: str) -> None:
    canary = "canary-7f3e9b1c"
    server = make_server(
        server_env={
            "CURSOR_AGENT_API_TOKEN": "x" * 32,
            "CURSOR_AGENT_API_DATABASE_URL": db_url,
            "CURSOR_AGENT_API_HOME": f"/tmp/{canary}-home",
            "cursor_agent_api_lowercase": canary,
            "CAA_PASSED_ON": "passed-on-value",
            "CAA_INHERITED": "inherited-value",
        },
        args=["--pass-env", "CAA_PASSED_ON", "--agent-env", "CAA_EXPLICIT=explicit-value"],
    )
    with server.client() as client:
        chat = new_chat(client, force=True)
        r = client.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "run `env`"})
        assert r.status_code in (201, 202), r.text
        run = wait_run(client, r.json()["id"])
        assert run["status"] == "succeeded", run
        events: list[dict[str, Any]] = all_events(client, chat["id"])
    text = json.dumps(events)
    assert "CURSOR_CONFIG_DIR=" in text  # the command ran and its output was stored
    assert "CAA_EXPLICIT=explicit-value" in text and "CAA_PASSED_ON=passed-on-value" in text
    assert "CAA_INHERITED=inherited-value" in text  # the user's own environment stays
    # only the variable the test harness names with --agent-env itself (explicit wins)
    names = set(re.findall(r"(?i)(cursor_agent_api_\w+)=", text))
    assert names == {MARKER_ENV}, names
    assert canary not in text and server.token not in text and db_url not in text


def test_agent_reported_session_id_never_becomes_an_option(
    make_server: Callable[..., Server], stand_in_agent: Callable[..., Path]
) -> None:
    # a stand-in agent that reports the session id "--force" (a hostile or broken agent)
    agent = stand_in_agent(
        "echo '{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"--force\"}'\n"
        "echo '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,"
        "\"result\":\"ok\",\"session_id\":\"--force\"}'")
    server = make_server(args=["--agent-binary", str(agent)])  # the last --agent-binary wins
    with server.client() as client:
        chat = new_chat(client)  # without force
        first = client.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hi"}).json()
        assert wait_run(client, first["id"])["status"] == "succeeded"
        second = client.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "again"}).json()
        run = wait_run(client, second["id"])
    # refused before any agent starts: never `--resume --force`
    assert run["status"] == "failed" and "must be a UUID" in run["error"], run
    assert run.get("pid") is None
