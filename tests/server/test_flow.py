"""The whole flow against a real server and simulated agents: chat, prompt, stream, store."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from server_helpers import (
    Server,
    all_events,
    event_seqs,
    is_run_end,
    new_chat,
    wait_run,
    ws_collect,
)


def test_whole_flow_rest_and_websocket(server: Server) -> None:
    with server.client() as c:
        health = c.get("/api/health").json()
        assert health["status"] == "ok" and health["simulate"] is False
        assert health["ws_protocol"] == 1
        paths = c.get("/openapi.json").json()["paths"]
        for path in (
            "/api/chats",
            "/api/chats/{chat_id}/runs",
            "/api/runs/{run_id}/cancel",
            "/api/chats/{chat_id}/events",
            "/api/chats/{chat_id}/tool-calls",
            "/api/health",
        ):
            assert path in paths, path
        chat = new_chat(c)
        assert chat["workspace"] == str(server.root / "project")
        assert chat["status"] == "idle" and chat["last_seq"] == 0

        async def scenario() -> tuple[list[dict[str, Any]], dict[str, Any]]:
            listener = asyncio.create_task(ws_collect(server.ws_url(chat["id"]), is_run_end))
            # The hello arrives before we post, so the run is watched from its first record.
            await asyncio.sleep(0)
            r = await asyncio.to_thread(
                c.post,
                f"/api/chats/{chat['id']}/runs",
                json={"prompt": "list the files and read notes.txt"},
            )
            assert r.status_code == 202, r.text
            return await listener, r.json()

        msgs, run = asyncio.run(scenario())
        assert run["status"] == "queued" and run["chat_id"] == chat["id"]
        assert msgs[0]["op"] == "hello" and msgs[0]["protocol"] == 1

        final = wait_run(c, run["id"])
        assert final["status"] == "succeeded", final
        assert final["exit_code"] == 0 and final["usage"]["output_tokens"] > 0
        assert "notes.txt" in final["result"]

        stored = all_events(c, chat["id"], page=7)
        seqs = [e["seq"] for e in stored]
        assert seqs == list(range(1, len(seqs) + 1)), "seq must have no gap"
        # Whatever the WebSocket sent (replay + live) is exactly the stored log, in order.
        live = [m["event"] for m in msgs if m["op"] == "event"]
        assert live == stored[: len(live)]
        assert event_seqs(msgs) == seqs[: len(live)]

        kinds = [(e["source"], e["type"], e["subtype"]) for e in stored]
        assert kinds[0] == ("server", "run", "queued")
        assert kinds[1] == ("server", "run", "running")
        assert kinds[-1] == ("server", "run", "succeeded")
        agent = [e for e in stored if e["source"] == "agent"]
        assert agent[0]["type"] == "system:init"
        assert any(e["type"] == "tool-call-started" for e in agent)
        assert agent[-1]["type"] == "result:success"
        # payload is the client's normalized event, raw the original line.
        with_raw = c.get(f"/api/chats/{chat['id']}/events", params={"include_raw": True}).json()
        init = next(e for e in with_raw["events"] if e["type"] == "system:init")
        assert init["raw"].startswith("{") and '"init"' in init["raw"]
        assert init["payload"]["data"]["subtype"] == "init"

        tools = c.get(f"/api/chats/{chat['id']}/tool-calls").json()["tool_calls"]
        assert [t["kind"] for t in tools] == ["ls", "read"]
        assert all(t["status"] == "succeeded" for t in tools)
        assert all(t["started_seq"] < t["completed_seq"] for t in tools)
        assert "TODO: write tests" in tools[1]["output"]
        by_run = c.get(f"/api/runs/{run['id']}/tool-calls").json()["tool_calls"]
        assert by_run == tools

        got = c.get(f"/api/chats/{chat['id']}").json()
        assert got["session_id"] == final["session_id"] and got["session_id"]
        assert got["status"] == "succeeded" and got["last_seq"] == seqs[-1]
        assert got["latest_run"]["id"] == run["id"]
        assert got["title"] == "list the files and read notes.txt", "named after the prompt"
        listed = c.get("/api/chats").json()["chats"]
        assert [x["id"] for x in listed] == [chat["id"]]


def test_second_prompt_resumes_the_agents_chat(server: Server) -> None:
    with server.client() as c:
        chat = new_chat(c)
        first = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "reply with exactly: one"})
        r1 = wait_run(c, first.json()["id"])
        second = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "what did I ask before?"})
        assert second.status_code == 202
        r2 = wait_run(c, second.json()["id"])
        assert r2["status"] == "succeeded"
        assert r2["session_id"] == r1["session_id"], "the second run must resume the chat"
        assert "reply with exactly: one" in r2["result"]
        runs = c.get(f"/api/chats/{chat['id']}/runs").json()["runs"]
        assert [r["id"] for r in runs] == [r1["id"], r2["id"]]
        seqs = [e["seq"] for e in all_events(c, chat["id"])]
        assert seqs == list(range(1, len(seqs) + 1))
        assert r2["first_seq"] > r1["last_seq"]


def test_one_run_at_a_time_per_chat_is_409(make_server: Any) -> None:
    server = make_server(sim_env={"CURSOR_AGENT_SIM_FAULT": "silence"})
    with server.client() as c:
        chat = new_chat(c)
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hello"}).json()
        again = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hello again"})
        assert again.status_code == 409
        assert "already has a queued or running run" in again.json()["detail"]
        # Another chat is not blocked.
        other = new_chat(c)
        assert c.post(f"/api/chats/{other['id']}/runs", json={"prompt": "hi"}).status_code == 202
        cancelled = c.post(f"/api/runs/{run['id']}/cancel")
        assert cancelled.status_code == 200, cancelled.text
        assert cancelled.json()["status"] == "cancelled"
        assert c.post(f"/api/runs/{run['id']}/cancel").status_code == 409
        # Now the chat takes a prompt again.
        assert c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "next"}).status_code == 202


def test_cancel_stops_the_agent_and_records_it(make_server: Any) -> None:
    server = make_server(sim_env={"CURSOR_AGENT_SIM_FAULT": "silence"})
    with server.client() as c:
        chat = new_chat(c)
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hello"}).json()

        def started() -> dict[str, Any] | None:
            r = c.get(f"/api/runs/{run['id']}").json()
            return r if r["pid"] and r["first_seq"] else None

        from server_helpers import alive, poll

        pid = poll(started)["pid"]
        assert alive(pid)
        done = c.post(f"/api/runs/{run['id']}/cancel").json()
        assert done["status"] == "cancelled" and done["ended_ms"] is not None
        poll(lambda: not alive(pid), 30)
        last = all_events(c, chat["id"])[-1]
        assert (last["type"], last["subtype"]) == ("run", "cancelled")


def test_failed_run_is_recorded_with_its_error(make_server: Any) -> None:
    server = make_server(sim_env={"CURSOR_AGENT_SIM_FAULT": "auth"})
    with server.client() as c:
        chat = new_chat(c)
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hello"}).json()
        final = wait_run(c, run["id"])
        assert final["status"] == "failed"
        assert final["error_type"] == "AuthenticationError"
        assert "login" in final["error"]
        assert final["exit_code"] == 1


def test_runs_over_the_limit_wait_queued(make_server: Any) -> None:
    server = make_server(
        sim_env={"CURSOR_AGENT_SIM_FAULT": "slow", "CURSOR_AGENT_SIM_DELAY": "0.05"},
        args=["--max-runs", "1"],
    )
    with server.client() as c:
        chats = [new_chat(c) for _ in range(3)]
        runs = [
            c.post(f"/api/chats/{ch['id']}/runs", json={"prompt": "reply with exactly: hi"}).json()
            for ch in chats
        ]
        counts = c.get("/api/health").json()["runs"]
        assert counts["running"] <= 1 and counts["running"] + counts["queued"] >= 1
        finals = [wait_run(c, r["id"]) for r in runs]
        assert [f["status"] for f in finals] == ["succeeded"] * 3
        # With one slot, no two runs overlapped.
        spans = sorted((f["started_ms"], f["ended_ms"]) for f in finals)
        for (_, end), (start, _) in itertools.pairwise(spans):
            assert start >= end


def test_missing_agent_binary_fails_the_run_clearly(make_server: Any, tmp_path: Any) -> None:
    server = make_server(args=["--agent-binary", str(tmp_path / "no-such-agent")])
    with server.client() as c:
        chat = new_chat(c)
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hello"}).json()
        final = wait_run(c, run["id"])
        assert final["status"] == "failed"
        assert final["error_type"] == "AgentNotFoundError"
        assert "no-such-agent" in final["error"]
        records = all_events(c, chat["id"])
        assert [(e["type"], e["subtype"]) for e in records] == [
            ("run", "queued"),
            ("run", "running"),
            ("run", "failed"),
        ]
        # The chat takes the next prompt.
        assert c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "x"}).status_code == 202


def test_cancel_a_queued_run(make_server: Any) -> None:
    server = make_server(sim_env={"CURSOR_AGENT_SIM_FAULT": "silence"}, args=["--max-runs", "1"])
    with server.client() as c:
        busy, waiting = new_chat(c), new_chat(c)
        first = c.post(f"/api/chats/{busy['id']}/runs", json={"prompt": "hi"}).json()
        queued = c.post(f"/api/chats/{waiting['id']}/runs", json={"prompt": "hi"}).json()
        assert c.get(f"/api/runs/{queued['id']}").json()["status"] == "queued"
        done = c.post(f"/api/runs/{queued['id']}/cancel").json()
        assert done["status"] == "cancelled" and done["pid"] is None
        assert done["started_ms"] is None, "a cancelled queued run never started"
        records = all_events(c, waiting["id"])
        assert [(e["type"], e["subtype"]) for e in records] == [
            ("run", "queued"),
            ("run", "cancelled"),
        ]
        assert c.post(f"/api/runs/{first['id']}/cancel").json()["status"] == "cancelled"


def test_odd_agent_output_is_stored_intact(make_server: Any, tmp_path: Any) -> None:
    """NUL characters, a non-JSON line, non-ASCII text: stored and served as the client read
    them. PostgreSQL cannot hold a NUL in a text column: there, and only in the plain-text
    columns (``raw``, a run's ``result``), it becomes U+FFFD; JSON payloads keep it."""
    import orjson

    sid = "8ef40118-8378-436d-8ba8-2436b19cc877"
    lines = [
        orjson.dumps({"type": "system", "subtype": "init", "session_id": sid, "cwd": "/w"}),
        b"\x1b[1mbanner\x00 line\x1b[0m",
        orjson.dumps(
            {
                "type": "assistant",
                "message": {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "nul:\x00 café 日本 🚀"}],
                },
                "session_id": sid,
            }
        ),
        orjson.dumps(
            {
                "type": "result",
                "subtype": "success",
                "result": "nul:\x00 café 日本 🚀",
                "session_id": sid,
                "duration_ms": 1,
            }
        ),
    ]
    script = tmp_path / "odd.ndjson"
    script.write_bytes(b"\n".join(lines) + b"\n")
    server = make_server(sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(script)})
    with server.client() as c:
        chat = new_chat(c)
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "odd"}).json()
        assert wait_run(c, run["id"])["status"] == "succeeded"
        body = c.get(f"/api/chats/{chat['id']}/events", params={"include_raw": True}).json()
        agent = [e for e in body["events"] if e["source"] == "agent"]
        assert [e["type"] for e in agent] == ["system:init", "raw", "assistant", "result:success"]
        assert agent[2]["payload"]["text"] == "nul:\x00 café 日本 🚀"
        assert agent[1]["payload"]["text"] == "banner\x00 line"
        assert agent[1]["raw"] in ("\x1b[1mbanner\x00 line\x1b[0m", "\x1b[1mbanner\ufffd line\x1b[0m")
