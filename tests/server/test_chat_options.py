"""PATCH /api/chats/{id} changes a chat's options (issue 12, point 9): validated, only the
options given change, 409 while a run is queued or running, and the next run uses them."""

from __future__ import annotations

from collections.abc import Callable

from server_helpers import Server, new_chat, wait_run

SLOW = {"CURSOR_AGENT_SIM_FAULT": "slow", "CURSOR_AGENT_SIM_DELAY": "0.4"}


def test_options_change_only_what_is_given_and_apply_to_the_next_run(server: Server) -> None:
    with server.client() as c:
        chat = new_chat(c, stream_partial_output=True)
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "run `echo hi`"}).json()
        calls = c.get(f"/api/runs/{wait_run(c, run['id'])['id']}/tool-calls").json()["tool_calls"]
        assert [tc["status"] for tc in calls] == ["rejected"]

        r = c.patch(f"/api/chats/{chat['id']}", json={"options": {"force": True}})
        assert r.status_code == 200, r.text
        assert r.json()["options"] == {"force": True, "approve_mcps": False, "trust": True,
                                       "stream_partial_output": True, "transport": "print",
                                       "mode": "agent"}
        assert c.get(f"/api/chats/{chat['id']}").json()["options"]["force"] is True

        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "run `echo hi`"}).json()
        calls = c.get(f"/api/runs/{wait_run(c, run['id'])['id']}/tool-calls").json()["tool_calls"]
        assert [tc["status"] for tc in calls] == ["succeeded"]

        # Title and options together; a title alone still renames.
        r = c.patch(f"/api/chats/{chat['id']}",
                    json={"title": "T", "options": {"stream_partial_output": False}})
        assert r.status_code == 200
        assert (r.json()["title"], r.json()["options"]["stream_partial_output"]) == ("T", False)
        assert c.patch(f"/api/chats/{chat['id']}", json={"title": "U"}).json()["options"] == (
            r.json()["options"])


def test_bad_options_are_refused_and_change_nothing(server: Server) -> None:
    with server.client() as c:
        chat = new_chat(c)
        url = f"/api/chats/{chat['id']}"
        for body in ({"options": {"force": "yes"}}, {"options": {"yolo": True}},
                     {"options": {"force": None}}, {"options": []}, {}, {"workspace": "/"},
                     {"options": {}}):
            r = c.patch(url, json=body)
            assert r.status_code == 422, (body, r.text)
            assert isinstance(r.json()["detail"], (str, list))
        assert c.get(url).json()["options"] == chat["options"]
        assert c.patch("/api/chats/nope", json={"options": {"force": True}}).status_code == 404


def test_options_cannot_change_while_a_run_is_active(make_server: Callable[..., Server]) -> None:
    server = make_server(sim_env=SLOW)
    with server.client() as c:
        chat = new_chat(c)
        run = c.post(f"/api/chats/{chat['id']}/runs",
                     json={"prompt": "list the files and read notes.txt"}).json()
        r = c.patch(f"/api/chats/{chat['id']}", json={"options": {"force": True}})
        assert r.status_code == 409
        assert "run" in r.json()["detail"]
        # Renaming is harmless during a run.
        assert c.patch(f"/api/chats/{chat['id']}", json={"title": "x"}).status_code == 200
        # Ended (cancelled, not waited out: the slow run takes seconds), options change again.
        assert c.post(f"/api/runs/{run['id']}/cancel").status_code == 200
        assert wait_run(c, run["id"])["status"] == "cancelled"
        assert c.get(f"/api/chats/{chat['id']}").json()["options"]["force"] is False
        r = c.patch(f"/api/chats/{chat['id']}", json={"options": {"force": True}})
        assert r.status_code == 200
