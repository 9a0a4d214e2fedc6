"""Bad input: a clear 4xx, and nothing half-written."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from server_helpers import Server, new_chat, wait_run, ws_collect
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosedError


def _nothing_written(c: Any, chat_id: str) -> None:
    assert c.get(f"/api/chats/{chat_id}/runs").json()["runs"] == []
    assert c.get(f"/api/chats/{chat_id}").json()["last_seq"] == 0
    assert c.get(f"/api/chats/{chat_id}/events").json()["events"] == []


def test_malformed_json_and_invalid_fields(server: Server) -> None:
    with server.client() as c:
        chat = new_chat(c)
        headers = {"content-type": "application/json"}
        r = c.post(f"/api/chats/{chat['id']}/runs", content=b'{"prompt": "hi"', headers=headers)
        assert r.status_code == 400 and r.json()["detail"] == "request body is not valid JSON"
        r = c.post("/api/chats", content=b"\xff\xfe", headers=headers)
        assert r.status_code == 400
        cases: list[tuple[str, dict[str, Any], str]] = [
            ("/api/chats", {"workspace": "project", "options": {"force": "yes"}}, "force"),
            ("/api/chats", {"workspace": "project", "options": {"yolo": True}}, "yolo"),
            ("/api/chats", {"workspace": "project", "api_key": "k"}, "api_key"),
            ("/api/chats", {"workspace": "project", "model": "bad model!;rm"}, "model"),
            ("/api/chats", {"workspace": 7}, "workspace"),
            (f"/api/chats/{chat['id']}/runs", {"prompt": ""}, "prompt"),
            (f"/api/chats/{chat['id']}/runs", {"prompt": "  \n\t "}, "prompt is empty"),
            (f"/api/chats/{chat['id']}/runs", {"prompt": 12}, "prompt"),
            (f"/api/chats/{chat['id']}/runs", {}, "prompt"),
            (f"/api/chats/{chat['id']}/runs", {"prompt": "x", "model": "m"}, "model"),
        ]
        for path, body, field in cases:
            r = c.post(path, json=body)
            assert r.status_code == 422, (body, r.text)
            assert field in r.json()["detail"], (body, r.json())
        r = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "a\x00b"})
        assert r.status_code == 400 and "NUL" in r.json()["detail"]
        r = c.get(f"/api/chats/{chat['id']}/events", params={"after_seq": -1})
        assert r.status_code == 422
        r = c.get(f"/api/chats/{chat['id']}/events", params={"limit": "many"})
        assert r.status_code == 422
        _nothing_written(c, chat["id"])
        assert len(c.get("/api/chats").json()["chats"]) == 1


def test_unknown_ids_are_404(server: Server) -> None:
    missing = "00000000-0000-4000-8000-000000000000"
    with server.client() as c:
        for method, path in [
            ("GET", f"/api/chats/{missing}"),
            ("GET", f"/api/chats/{missing}/runs"),
            ("GET", f"/api/chats/{missing}/events"),
            ("GET", f"/api/chats/{missing}/tool-calls"),
            ("POST", f"/api/chats/{missing}/runs"),
            ("GET", f"/api/runs/{missing}"),
            ("POST", f"/api/runs/{missing}/cancel"),
            ("GET", f"/api/runs/{missing}/tool-calls"),
            ("PATCH", f"/api/chats/{missing}"),
        ]:
            body = {"prompt": "hi"} if method == "POST" else {"title": "t"}
            r = c.request(method, path, json=body if method != "GET" else None)
            assert r.status_code == 404, (method, path, r.status_code)
            assert missing in r.json()["detail"]
        assert c.get("/api/nope").status_code == 404
        for path in ("/api/chats/" + "x" * 5000, "/api/runs/" + "y" * 5000):  # was: echoed whole
            r = c.get(path)
            assert r.status_code == 404 and "(5000 characters)" in r.json()["detail"], r.text[:200]
            assert len(r.json()["detail"]) < 200

    async def ws() -> tuple[list[dict[str, Any]], int | None]:
        import orjson

        msgs = []
        async with connect(server.ws_url(missing)) as sock:
            with contextlib.suppress(ConnectionClosedError):
                async for text in sock:
                    msgs.append(orjson.loads(text))
        return msgs, sock.close_code

    msgs, code = asyncio.run(ws())
    assert code == 4404 and msgs[0]["op"] == "error" and missing in msgs[0]["detail"]


def test_a_nul_in_any_path_parameter_is_a_documented_404(server: Server) -> None:
    """A NUL in ``{seq}`` or ``{index}`` answered codes the API does not have
    (``seq_not_found``, ``index_not_found``): each parameter's 404 is its documented code."""
    from cursor_agent_api.server.errors import CODES

    with server.client() as c:
        chat = new_chat(c)
        for path, code in (
            (f"/api/chats/{chat['id']}/events/1%00/value", "record_not_found"),
            ("/api/runs/r/tool-calls/1%00/output", "tool_call_not_found"),
            ("/api/chats/a%00b", "chat_not_found"),
            ("/api/runs/r/requests/a%00b", "request_not_found"),
        ):
            r = c.post(path, json={"decision": "allow"}) if "requests" in path else c.get(path)
            assert r.status_code == 404, (path, r.text)
            assert r.json()["code"] == code and code in CODES, (path, r.json())


def test_a_run_id_query_naming_no_run_of_the_chat_is_404(server: Server) -> None:
    """``?run_id=`` names a run of the chat: an unknown one, or another chat's, is a 404 (as
    docs/server.md says), not an empty page that looks like a run with no records."""
    missing = "00000000-0000-4000-8000-000000000000"
    with server.client() as c:
        chat, other = new_chat(c), new_chat(c)
        run = c.post(f"/api/chats/{other['id']}/runs", json={"prompt": "hi"}).json()
        wait_run(c, run["id"])
        for run_id in (missing, run["id"]):
            for path in ("events", "tool-calls"):
                r = c.get(f"/api/chats/{chat['id']}/{path}", params={"run_id": run_id})
                assert r.status_code == 404, (path, run_id, r.text)
                assert run_id in r.json()["detail"]
        own = c.get(f"/api/chats/{other['id']}/events", params={"run_id": run["id"]})
        assert own.status_code == 200 and own.json()["events"]


def test_a_422_names_fields_but_never_echoes_a_value(server: Server) -> None:
    """What docs/server.md promises: the fields are named (an unknown one too, cut), the
    values sent never appear."""
    secret = "sk SECRET value 0123456789"  # not a model id (a space)
    with server.client() as c:
        chat = new_chat(c)
        for body in ({"workspace": "project", "model": secret},
                     {"workspace": "project", "options": {"force": secret}},
                     {"workspace": "project", "unknown_" + "k" * 200: secret}):
            r = c.post("/api/chats", json=body)
            assert r.status_code == 422, r.text
            assert secret not in r.text
        assert "unknown_kkk" in r.json()["detail"] and "k" * 100 not in r.text
        r = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": 7, "model": secret})
        assert r.status_code == 422 and secret not in r.text
    docs = (Path(__file__).parents[2] / "docs" / "server.md").read_text()
    assert "never echo a value that was sent" in docs and "never echo what was sent" not in docs


def test_bad_after_seq_on_websocket(server: Server) -> None:
    with server.client() as c:
        chat = new_chat(c)
    url = server.ws_url(chat["id"]).replace("after_seq=0", "after_seq=-3")
    msgs = asyncio.run(ws_collect(url, lambda m: m["op"] == "error"))
    assert "after_seq" in msgs[0]["detail"]
    ahead = asyncio.run(ws_collect(server.ws_url(chat["id"], 5), lambda m: m["op"] == "error"))
    assert "beyond the chat's last seq 0" in ahead[0]["detail"]


def test_oversize_prompt_and_body(make_server: Any) -> None:
    server = make_server(args=["--max-prompt-bytes", "1000", "--max-body-bytes", "4096"])
    with server.client() as c:
        chat = new_chat(c)
        r = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "é" * 501})
        assert r.status_code == 413 and "limit is 1000" in r.json()["detail"]
        r = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "x" * 5000})
        assert r.status_code == 413 and "larger than 4096" in r.json()["detail"]

        def chunks() -> Any:  # no Content-Length: counted while read
            for _ in range(10):
                yield b" " * 1000
            yield b'{"prompt": "hi"}'

        r = c.post(
            f"/api/chats/{chat['id']}/runs", content=chunks(), headers={"content-type": "application/json"}
        )
        assert r.status_code == 413
        _nothing_written(c, chat["id"])
        assert c.get("/api/config").json()["max_prompt_bytes"] == 1000
        r = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "x" * 1000})
        assert r.status_code == 202


def test_rename_chat(server: Server) -> None:
    with server.client() as c:
        chat = new_chat(c)
        r = c.patch(f"/api/chats/{chat['id']}", json={"title": "My chat"})
        assert r.status_code == 200 and r.json()["title"] == "My chat"
        assert c.patch(f"/api/chats/{chat['id']}", json={"title": ""}).status_code == 422
        assert c.get(f"/api/chats/{chat['id']}").json()["title"] == "My chat"
