"""The API as a contract: every answer a walk through the API gets (successes and errors)
fits the schema ``/openapi.json`` gives for its route and status, and the document says how
to authenticate."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import jsonschema
import orjson
from inproc import InProcServer
from server_helpers import new_chat, wait_run

from cursor_agent_api.server.errors import CODES

FORMAT_CHECKER = jsonschema.Draft202012Validator.FORMAT_CHECKER


class Contract:
    """Checks answers against the server's own document."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.checked: list[tuple[str, str, int]] = []

    def check(self, r: httpx.Response, path: str) -> httpx.Response:
        method = r.request.method.lower()
        op = self.spec["paths"][path][method]
        status = str(r.status_code)
        assert status in op["responses"], (
            f"{method.upper()} {path} answered {status}, not in its OpenAPI responses "
            f"{sorted(op['responses'])}: {r.text[:200]}"
        )
        content = op["responses"][status].get("content", {})
        if r.status_code == 204:
            assert not r.content
        elif "application/json" in content and r.headers["content-type"].startswith("application/json"):
            assert "schema" in content["application/json"], f"{method.upper()} {path} {status}: no schema"
            schema = content["application/json"]["schema"]
            jsonschema.validate(
                r.json(), {"components": self.spec["components"], **schema}, format_checker=FORMAT_CHECKER
            )
        else:
            kind = r.headers["content-type"].split(";")[0]
            assert kind in content, f"{method.upper()} {path} {status}: {kind} not documented"
        if r.status_code >= 400:
            assert r.json()["code"] in CODES, r.text
        self.checked.append((method, path, r.status_code))
        return r


def test_every_answer_of_a_walk_fits_the_openapi_document(make_inproc: Any) -> None:
    server: InProcServer = make_inproc()
    with server.client() as c:
        api = Contract(c.get("/openapi.json").json())
        chat = api.check(
            c.post("/api/chats", json={"workspace": "project", "options": {"trust": True}}), "/api/chats"
        ).json()
        cid = chat["id"]
        fresh = api.check(c.get(f"/api/chats/{cid}"), "/api/chats/{chat_id}").json()  # no run yet
        assert fresh["latest_run"] is None and fresh["status"] == "idle"
        run = api.check(
            c.post(f"/api/chats/{cid}/runs", json={"prompt": "list the files and read notes.txt"}),
            "/api/chats/{chat_id}/runs",
        ).json()
        api.check(c.post(f"/api/chats/{cid}/runs", json={"prompt": "again"}), "/api/chats/{chat_id}/runs")
        wait_run(c, run["id"])
        rid = run["id"]
        api.check(c.get("/api/health"), "/api/health")
        api.check(c.get("/api/config"), "/api/config")
        api.check(c.get("/api/chats"), "/api/chats")
        api.check(c.get(f"/api/chats/{cid}"), "/api/chats/{chat_id}")
        api.check(
            c.patch(f"/api/chats/{cid}", json={"title": "t", "options": {"force": True}}),
            "/api/chats/{chat_id}",
        )
        api.check(c.get(f"/api/chats/{cid}/runs"), "/api/chats/{chat_id}/runs")
        api.check(c.get(f"/api/runs/{rid}"), "/api/runs/{run_id}")
        events = api.check(
            c.get(f"/api/chats/{cid}/events", params={"include_raw": True}), "/api/chats/{chat_id}/events"
        ).json()
        api.check(
            c.get(
                f"/api/chats/{cid}/events/{events['events'][0]['seq']}/value", params={"field": "/payload"}
            ),
            "/api/chats/{chat_id}/events/{seq}/value",
        )
        api.check(c.get(f"/api/chats/{cid}/turns"), "/api/chats/{chat_id}/turns")
        calls = api.check(c.get(f"/api/chats/{cid}/tool-calls"), "/api/chats/{chat_id}/tool-calls").json()
        assert calls["tool_calls"], "the walk has tool calls to check"
        api.check(c.get(f"/api/runs/{rid}/tool-calls"), "/api/runs/{run_id}/tool-calls")
        api.check(
            c.get(f"/api/runs/{rid}/tool-calls/0/output"), "/api/runs/{run_id}/tool-calls/{index}/output"
        )
        api.check(c.post(f"/api/runs/{rid}/cancel"), "/api/runs/{run_id}/cancel")  # 409: over
        api.check(c.post("/api/auth/codes"), "/api/auth/codes")
        # errors
        api.check(c.get("/api/chats/nope"), "/api/chats/{chat_id}")
        api.check(c.get("/api/runs/nope"), "/api/runs/{run_id}")
        api.check(c.get(f"/api/chats/{cid}/events", params={"run_id": "nope"}), "/api/chats/{chat_id}/events")
        api.check(
            c.get(f"/api/runs/{rid}/tool-calls/99/output"), "/api/runs/{run_id}/tool-calls/{index}/output"
        )
        api.check(c.get("/api/chats", params={"limit": 0}), "/api/chats")
        api.check(c.post("/api/chats", json={"model": "-x"}), "/api/chats")
        api.check(c.post("/api/chats", json={"workspace": "/"}), "/api/chats")
        api.check(
            c.post("/api/chats", content=b"{", headers={"content-type": "application/json"}), "/api/chats"
        )
        api.check(c.patch(f"/api/chats/{cid}", json={"options": {}}), "/api/chats/{chat_id}")
        api.check(c.patch(f"/api/chats/{cid}", json={}), "/api/chats/{chat_id}")
        api.check(
            c.post(f"/api/chats/{cid}/runs", json={"prompt": "x" * (server.settings.max_prompt_bytes + 1)}),
            "/api/chats/{chat_id}/runs",
        )
        api.check(
            c.post(f"/api/runs/{rid}/requests/nope", json={"decision": "reject"}),
            "/api/runs/{run_id}/requests/{request_id}",
        )
        api.check(httpx.get(server.url + "/api/chats"), "/api/chats")  # 401
        api.check(c.post("/api/chats", json={}, headers={"Origin": "http://evil.example"}), "/api/chats")
        api.check(c.delete(f"/api/chats/{cid}"), "/api/chats/{chat_id}")
        api.check(c.post("/api/auth/logout"), "/api/auth/logout")
    statuses = {s for _, _, s in api.checked}
    assert {200, 201, 202, 204, 400, 401, 403, 404, 409, 413, 422} <= statuses, statuses


def test_the_answers_about_a_running_run_fit_the_document(make_inproc: Any) -> None:
    server: InProcServer = make_inproc(sim_env={"CURSOR_AGENT_SIM_FAULT": "silence"})  # runs hold
    with server.client() as c:
        api = Contract(c.get("/openapi.json").json())
        chat = new_chat(c)
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hi"}).json()
        busy = api.check(
            c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "again"}), "/api/chats/{chat_id}/runs"
        )
        locked = api.check(
            c.patch(f"/api/chats/{chat['id']}", json={"options": {"force": True}}), "/api/chats/{chat_id}"
        )
        kept = api.check(c.delete(f"/api/chats/{chat['id']}"), "/api/chats/{chat_id}")
        assert [r.json()["code"] for r in (busy, locked, kept)] == [
            "chat_busy",
            "options_locked",
            "delete_refused",
        ]
        api.check(c.post(f"/api/runs/{run['id']}/cancel"), "/api/runs/{run_id}/cancel")
        wait_run(c, run["id"])
        api.check(c.delete(f"/api/chats/{chat['id']}"), "/api/chats/{chat_id}")


def test_the_document_describes_errors_and_authentication(make_inproc: Any) -> None:
    server: InProcServer = make_inproc()
    with server.client() as c:
        spec = c.get("/openapi.json").json()
    schemes = spec["components"]["securitySchemes"]
    assert schemes["token"] == {**schemes["token"], "type": "apiKey", "in": "header", "name": "Authorization"}
    assert {"token": []} in spec["security"]
    assert spec["paths"]["/api/auth/login"]["post"]["security"] == []
    schemas = spec["components"]["schemas"]
    assert "HTTPValidationError" not in schemas
    assert set(schemas["ValidationErrorBody"]["required"]) == {"detail", "code", "errors"}
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            for status in ("401", "422", "503"):
                ref = op["responses"][status]["content"]["application/json"]["schema"]["$ref"]
                assert ref.endswith("/ValidationErrorBody" if status == "422" else "/ErrorBody"), (
                    method,
                    path,
                    status,
                )
    force = spec["components"]["schemas"]["ChatOptionsUpdate"]["properties"]["force"]
    assert force == {**force, "type": "boolean"} and "anyOf" not in force, "not nullable"


def test_the_503s_of_a_prompt_say_which_case_by_code(make_inproc: Any) -> None:
    server: InProcServer = make_inproc(store_retry_max_delay=0.2)
    with server.client() as c:
        chat = new_chat(c)
        server.store.faults.fail_writes(1)
        refused = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hi"})
        assert refused.status_code == 503
        assert refused.json()["code"] == "database_unavailable"
        server.store.faults.clear()
        server.store.faults.fail_after_commit("run_create")
        uncertain = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hi"})
        server.store.faults.clear()
        assert uncertain.status_code == 503
        body = uncertain.json()
        assert body["code"] == "submit_uncertain"
        assert body["run_id"] in body["detail"], "the run it may be stored as, as a field"
        wait_run(c, body["run_id"])


def test_a_websocket_refusal_names_its_case(make_inproc: Any) -> None:
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    server: InProcServer = make_inproc()
    with server.client() as c:
        chat = new_chat(c)

    async def refusal(after_seq: str, chat_id: str = chat["id"]) -> tuple[dict[str, Any], int | None]:
        url = f"{server.url.replace('http://', 'ws://')}/api/chats/{chat_id}/stream?after_seq={after_seq}"
        async with connect(url, additional_headers={"Authorization": f"token {server.token}"}) as ws:
            msg = orjson.loads(await asyncio.wait_for(ws.recv(), 30))
            try:
                await asyncio.wait_for(ws.recv(), 30)
            except ConnectionClosed:
                return msg, ws.close_code
        raise AssertionError("the socket stayed open")

    bad, code = asyncio.run(refusal("x"))
    assert (bad["code"], code) == ("invalid_after_seq", 4400)
    beyond, code = asyncio.run(refusal("500"))
    assert (beyond["code"], beyond["last_seq"], code) == ("after_seq_beyond_last", 0, 4400)
    missing, code = asyncio.run(refusal("0", "nope"))
    assert (missing["code"], code) == ("chat_not_found", 4404)


def test_the_session_scheme_names_the_cookie_the_browser_gets(make_inproc: Any) -> None:
    # the document named the cookie after the server's --port (0 here, as for `serve --port
    # 0`; a port forward's or a proxy's port differs too); the sign-in names it after the
    # port in the browser's address (the Host header's)
    server: InProcServer = make_inproc()
    with server.client() as c:
        code = c.post("/api/auth/codes").json()["code"]
        for host in (server.url.removeprefix("http://"), "127.0.0.1:19765"):
            spec = c.get("/openapi.json", headers={"Host": host}).json()
            named = spec["components"]["securitySchemes"]["session"]["name"]
            if host.endswith(":19765"):
                signed_in = c.get("/", params={"code": code}, headers={"Host": host},
                                  follow_redirects=False)
                assert signed_in.status_code == 303, signed_in.text
                assert signed_in.headers["set-cookie"].startswith(f"{named}="), (named, signed_in.headers)
            assert named == f"cursor_agent_api_session_{host.rpartition(':')[2]}"


def test_head_of_the_document_answers_as_its_get(make_inproc: Any) -> None:
    # the document served per request (its cookie named from Host) answered GET only: HEAD,
    # 200 from FastAPI's own route before, became 404
    server: InProcServer = make_inproc()
    with server.client() as c:
        got, head = c.get("/openapi.json"), c.head("/openapi.json")
    assert got.status_code == head.status_code == 200, head.text
    assert head.headers["content-type"] == got.headers["content-type"] == "application/json"
    assert head.content == b""
