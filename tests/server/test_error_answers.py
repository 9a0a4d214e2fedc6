"""What an error answer holds: a ``code`` beside ``detail`` whoever answers (a route, the
validation, a security check, an unknown path), ``errors`` on every 422, and a body sent
without its JSON Content-Type told so."""

from __future__ import annotations

from typing import Any

import httpx
from inproc import InProcServer
from server_helpers import new_chat


def test_a_json_body_sent_as_a_form_is_told_its_content_type(make_inproc: Any) -> None:
    server: InProcServer = make_inproc()
    with server.client() as c:
        chat = new_chat(c)
        r = c.post(
            f"/api/chats/{chat['id']}/runs",
            content=b'{"prompt": "hi"}',
            headers={"content-type": "application/x-www-form-urlencoded"},
        )  # curl -d's
        assert r.status_code == 422
        body = r.json()
        assert body["code"] == "body_not_json"
        assert "Content-Type: application/json" in body["detail"]
        assert body["errors"], "a 422 lists its problems"
        # the same body as JSON is taken
        assert c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hi"}).status_code == 202


def test_every_422_has_errors_and_a_code(make_inproc: Any) -> None:
    server: InProcServer = make_inproc()
    with server.client() as c:
        chat = new_chat(c)
        empty = c.patch(f"/api/chats/{chat['id']}", json={"options": {}}).json()
        assert empty["code"] == "invalid_options"
        assert [e["loc"] for e in empty["errors"]] == [["body", "options"]]
        nothing = c.patch(f"/api/chats/{chat['id']}", json={}).json()
        assert (nothing["code"], len(nothing["errors"])) == ("nothing_to_change", 1)
        null = c.patch(f"/api/chats/{chat['id']}", json={"options": {"force": None}})
        assert null.status_code == 422
        assert [e["loc"] for e in null.json()["errors"]] == [["body", "options", "force"]]
        invalid = c.get("/api/chats", params={"limit": 0}).json()
        assert invalid["code"] == "invalid_request" and invalid["errors"][0]["loc"] == ["query", "limit"]
        acp = c.post("/api/chats", json={"workspace": "project", "options": {"mode": "plan"}}).json()
        assert acp["code"] == "mode_needs_acp" and acp["errors"]


def test_every_error_answer_has_a_code(make_inproc: Any) -> None:
    server: InProcServer = make_inproc()
    with server.client() as c:
        codes = {
            "unknown path": c.get("/api/nope").json()["code"],
            "method": c.put("/api/chats").json()["code"],
            "chat": c.get("/api/chats/nope").json()["code"],
            "run": c.get("/api/runs/nope").json()["code"],
            "workspace": c.post("/api/chats", json={"workspace": "/"}).json()["code"],
            "not json": c.post(
                "/api/chats", content=b"{", headers={"content-type": "application/json"}
            ).json()["code"],
            "host": c.get("/api/chats", headers={"host": "evil.example"}).json()["code"],
            "origin": c.post("/api/chats", json={}, headers={"origin": "http://evil.example"}).json()["code"],
        }
    codes["token"] = httpx.get(server.url + "/api/chats").json()["code"]
    assert codes == {
        "unknown path": "not_found",
        "method": "method_not_allowed",
        "chat": "chat_not_found",
        "run": "run_not_found",
        "workspace": "workspace_not_allowed",
        "not json": "invalid_json",
        "host": "host_not_allowed",
        "origin": "origin_not_allowed",
        "token": "unauthorized",
    }


def test_an_empty_prompt_is_empty_prompt_as_a_blank_one(make_inproc: Any) -> None:
    # {"prompt": ""} was refused by the model's min_length (422 invalid_request) before the
    # route's check, which gives a whitespace-only prompt the documented code empty_prompt
    server: InProcServer = make_inproc()
    with server.client() as c:
        chat = new_chat(c)
        for prompt in ("", "  \n"):
            r = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": prompt})
            assert r.status_code == 422, (prompt, r.text)
            assert r.json()["code"] == "empty_prompt", (prompt, r.json())
            assert r.json()["errors"], "a 422 lists its problems"


def test_an_origin_that_does_not_parse_is_refused_as_a_foreign_one(make_inproc: Any) -> None:
    # "http://[x" makes urlsplit raise ValueError: the check answered 500, not 403
    server: InProcServer = make_inproc()
    with server.client() as c:
        for origin in ("http://[x", "http://[docs.example.com]"):
            r = c.post("/api/chats", json={}, headers={"origin": origin})
            assert (r.status_code, r.json()["code"]) == (403, "origin_not_allowed"), r.text
            signed = c.get("/api/chats", params={"token": "x"}, headers={"origin": origin})
            assert signed.status_code == 403, signed.text
