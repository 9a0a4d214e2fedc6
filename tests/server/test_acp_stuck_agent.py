"""A run's Stop while ``agent acp`` never answers ``initialize``: the run ends cancelled at
once (its broken process stopped), not ``ACP_REQUEST_TIMEOUT`` later as an error."""

from __future__ import annotations

from typing import Any

from server_helpers import new_chat, poll, wait_run

STUCK = {"CURSOR_AGENT_SIM_FAULT": "slow-start", "CURSOR_AGENT_SIM_DELAY": "600"}


def test_stop_while_the_agent_does_not_answer_initialize(make_server: Any) -> None:
    server = make_server(sim_env=STUCK)
    with server.client() as c:
        chat = new_chat(c, transport="acp")
        r = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "say hello"})
        assert r.status_code == 202, r.text
        run_id = r.json()["id"]
        poll(lambda: c.get(f"/api/runs/{run_id}").json()["pid"])  # the agent was started
        assert c.post(f"/api/runs/{run_id}/cancel").status_code == 200
        run = c.get(f"/api/runs/{run_id}").json()  # Stop returns once the run is marked
        assert run["status"] == "cancelled", run
        assert wait_run(c, run_id)["status"] == "cancelled"
