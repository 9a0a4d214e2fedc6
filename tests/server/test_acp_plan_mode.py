"""Plan mode in ACP chats (chat option ``mode``): the session is switched with
``session/set_mode``; the agent's edits become a plan, a ``plan`` request record answered by
``{"accept": …}``; print-mode chats refuse the option."""

from __future__ import annotations

from typing import Any

import httpx
from server_helpers import all_events, new_chat, poll, wait_run


def _pending_plan(c: httpx.Client, chat_id: str) -> dict[str, Any] | None:
    recs = [e for e in all_events(c, chat_id) if e["type"] == "request"]
    answered = {e["payload"]["request_id"] for e in recs if e["subtype"] == "answered"}
    return next((e for e in recs if e["subtype"] == "plan"
                 and e["payload"]["request_id"] not in answered), None)


def _plan_run(c: httpx.Client, chat_id: str, prompt: str, accept: bool) -> dict[str, Any]:
    r = c.post(f"/api/chats/{chat_id}/runs", json={"prompt": prompt})
    assert r.status_code == 202, r.text
    run_id = r.json()["id"]
    req = poll(lambda: _pending_plan(c, chat_id))
    assert req["run_id"] == run_id
    r = c.post(f"/api/runs/{run_id}/requests/{req['payload']['request_id']}", json={"accept": accept})
    assert r.status_code == 200, r.text
    assert r.json()["decision"] == ("accepted" if accept else "rejected")
    return {"run": wait_run(c, run_id), "request": req["payload"]}


def test_plan_mode_asks_to_accept_each_plan(server: Any) -> None:
    with server.client() as c:
        chat = new_chat(c, transport="acp", mode="plan")
        assert chat["options"]["mode"] == "plan"
        first = _plan_run(c, chat["id"], "create alpha.txt with hello", accept=True)
        assert first["run"]["status"] == "succeeded", first["run"]
        assert first["request"]["plan"] and first["request"]["todos"]
        second = _plan_run(c, chat["id"], "create beta.txt with bye", accept=False)
        assert second["run"]["status"] == "succeeded", second["run"]
        # plan mode edits nothing: the files were planned, not written
        workspace = server.root / "project"
        assert not (workspace / "alpha.txt").exists() and not (workspace / "beta.txt").exists()
        agent_lines = " ".join(str(e["payload"]) for e in all_events(c, chat["id"])
                               if e["source"] == "agent")
        assert "accepted" in agent_lines and "rejected" in agent_lines

        # back to agent mode: the same prompt edits, no plan is asked
        r = c.patch(f"/api/chats/{chat['id']}", json={"options": {"mode": "agent"}})
        assert r.status_code == 200 and r.json()["options"]["mode"] == "agent"
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "create alpha.txt with hello"})
        assert wait_run(c, run.json()["id"])["status"] == "succeeded"
        assert _pending_plan(c, chat["id"]) is None
        assert (workspace / "alpha.txt").exists()


def test_plan_mode_needs_an_acp_chat(server: Any) -> None:
    with server.client() as c:
        r = c.post("/api/chats", json={"workspace": "project", "options": {"mode": "plan"}})
        assert r.status_code == 422 and "needs transport 'acp'" in r.text
        chat = new_chat(c)
        assert chat["options"]["mode"] == "agent"
        r = c.patch(f"/api/chats/{chat['id']}", json={"options": {"mode": "plan"}})
        assert r.status_code == 422
        r = c.patch(f"/api/chats/{chat['id']}", json={"options": {"mode": "plan", "transport": "acp"}})
        assert r.status_code == 200 and r.json()["options"]["mode"] == "plan"
        r = c.patch(f"/api/chats/{chat['id']}", json={"options": {"mode": "dream"}})
        assert r.status_code == 422
