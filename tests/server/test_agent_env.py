"""Issue 11.5: nothing of the server's reaches the agent's environment."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .server_helpers import MARKER_ENV, Server, all_events, new_chat, wait_run

LIBPQ_CANARIES = {
    "PGPASSWORD": None,  # the database password, set below: the URL names none
    "PGAPPNAME": "libpq-canary-app",
    "PGPASSFILE": "/tmp/libpq-canary-passfile",
    "PGSERVICEFILE": "/tmp/libpq-canary-servicefile",
    "PGSSLKEY": "/tmp/libpq-canary-sslkey",
    "PGTZ": "UTC",
}
"""libpq's variables a server on PostgreSQL may be given (its database settings): none may
reach the agent."""


def run_env(server: Server) -> str:
    """The output of ``run `env``` in a new chat of ``server``: the agent's environment."""
    with server.client() as client:
        chat = new_chat(client, force=True)
        r = client.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "run `env`"})
        assert r.status_code in (201, 202), r.text
        run = wait_run(client, r.json()["id"])
        assert run["status"] == "succeeded", run
        return json.dumps(all_events(client, chat["id"]))


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


def test_agent_env_has_no_libpq_variable_on_postgresql(make_server: Callable[..., Server],
                                                       db_url: str) -> None:
    """Audit 15: ``serve`` on PostgreSQL given its password as PGPASSWORD (its URL has none)
    passed it, and every other libpq variable, on to its agents: ``run `env``` showed it."""
    from sqlalchemy.engine import make_url

    url = make_url(db_url)
    if url.get_backend_name() != "postgresql":
        pytest.skip("serve on SQLite: libpq's variables are not its settings (kept)")
    password = url.password
    assert password, "the test database's URL names its password"
    env = dict(LIBPQ_CANARIES, PGPASSWORD=str(password),
               PGSSLMODE="disable", PGCHANNELBINDING="disable")  # (read by this server's libpq)
    server = make_server(
        database_url=url.set(password=None).render_as_string(hide_password=False),
        server_env=env,
        args=["--pass-env", "PGTZ", "--agent-env", "PGDATABASE=the-agents-own"],
    )
    text = run_env(server)
    assert "CURSOR_CONFIG_DIR=" in text  # the command ran and its output was stored
    names = set(re.findall(r"(?<![A-Z_])(PG[A-Z_]+)=", text))  # (after "\\n" in JSON)
    # only the two named explicitly (a user's agent that needs its own)
    assert names == {"PGTZ", "PGDATABASE"}, names
    assert "PGDATABASE=the-agents-own" in text
    assert str(password) not in text


def test_agent_env_keeps_libpq_variables_on_sqlite(make_server: Callable[..., Server],
                                                   tmp_path: Path) -> None:
    """On SQLite, libpq's variables are not the server's: the agent inherits them (its own)."""
    server = make_server(database_url=f"sqlite+aiosqlite:///{tmp_path / 'own.sqlite3'}",
                         server_env={"PGAPPNAME": "the-users-own"})
    assert "PGAPPNAME=the-users-own" in run_env(server)


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
