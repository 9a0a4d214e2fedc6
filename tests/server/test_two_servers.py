"""Two in-process-dispatch servers on one database (docs/server.md, "Several servers, one
database"): a run belongs to the server process that runs it. The other server does not
relay to it; its answers say so, and where to go, instead of an unexplained 409."""

from __future__ import annotations

from collections.abc import Callable

from server_helpers import Server, new_chat, poll, wait_run

SLOW = {"CURSOR_AGENT_SIM_FAULT": "slow", "CURSOR_AGENT_SIM_DELAY": "0.2"}
TOKEN = "a-token-shared-by-two-servers"


def test_a_cancel_through_the_other_server_names_the_server_that_runs_it(
    make_server: Callable[..., Server],
) -> None:
    first = make_server(token=TOKEN, sim_env=SLOW)
    second = make_server(token=TOKEN, sim_env=SLOW)
    with first.client() as a, second.client() as b:
        chat = new_chat(a)
        r = a.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "count"})
        assert r.status_code == 202, r.text
        run = r.json()
        poll(lambda: b.get(f"/api/runs/{run['id']}").json()["status"] == "running")
        owner = b.get(f"/api/runs/{run['id']}").json()
        refused = b.post(f"/api/runs/{run['id']}/cancel")
        assert refused.status_code == 409, refused.text
        detail = refused.json()["detail"]
        assert "another server process" in detail and "--dispatch queue" in detail, detail
        assert a.post(f"/api/runs/{run['id']}/cancel").status_code == 200
        assert wait_run(a, run["id"])["status"] == "cancelled"
    assert "Traceback" not in first.log_text() + second.log_text(), owner
