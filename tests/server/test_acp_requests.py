"""ACP chats: the agent's permission requests, questions and plans become records, are
answered by ``POST /api/runs/{run_id}/requests/{request_id}``, time out, are cancelled with
their run and closed ``cancelled`` by a restart."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from server_helpers import all_events, new_chat, poll, wait_run


def _requests(c: httpx.Client, chat_id: str) -> list[dict[str, Any]]:
    return [e for e in all_events(c, chat_id) if e["type"] == "request"]


def _pending(c: httpx.Client, chat_id: str, kind: str = "permission") -> dict[str, Any] | None:
    recs = _requests(c, chat_id)
    answered = {e["payload"]["request_id"] for e in recs if e["subtype"] == "answered"}
    for e in recs:
        if e["subtype"] == kind and e["payload"]["request_id"] not in answered:
            return e
    return None


def _start(c: httpx.Client, chat_id: str, prompt: str) -> str:
    r = c.post(f"/api/chats/{chat_id}/runs", json={"prompt": prompt})
    assert r.status_code == 202, r.text
    return str(r.json()["id"])


def _answer(c: httpx.Client, run_id: str, request_id: str, body: Any) -> httpx.Response:
    return c.post(f"/api/runs/{run_id}/requests/{request_id}", json=body)


def test_transport_is_a_chat_option(server: Any) -> None:
    with server.client() as c:
        chat = new_chat(c, transport="acp")
        assert chat["options"]["transport"] == "acp"
        assert new_chat(c)["options"]["transport"] == "print"
        r = c.patch(f"/api/chats/{chat['id']}", json={"options": {"transport": "print"}})
        assert r.status_code == 200 and r.json()["options"]["transport"] == "print"
        r = c.patch(f"/api/chats/{chat['id']}", json={"options": {"transport": "carrier-pigeon"}})
        assert r.status_code == 422 and "carrier-pigeon" not in r.text


def test_allow_then_reject_in_an_acp_chat(server: Any) -> None:
    with server.client() as c:
        chat = new_chat(c, transport="acp")
        run_id = _start(c, chat["id"], "run `echo approved-output`")
        req = poll(lambda: _pending(c, chat["id"]))
        payload = req["payload"]
        assert req["source"] == "server" and req["run_id"] == run_id
        assert payload["tool"]["kind"] == "shell"
        assert payload["tool"]["command"] == "echo approved-output"
        assert [o["kind"] for o in payload["options"]] == ["allow_once", "allow_always", "reject_once"]
        assert payload["timeout_s"] == 900.0

        assert _answer(c, run_id, "nope", {"decision": "allow-once"}).status_code == 404
        assert _answer(c, "no-such-run", payload["request_id"], {"decision": "allow-once"}).status_code == 404
        bad = _answer(c, run_id, payload["request_id"], {"decision": "yes-please-<b>"})
        assert bad.status_code == 422 and "yes-please" not in bad.text
        wrong = _answer(c, run_id, payload["request_id"], {"accept": True})  # a plan's answer
        assert wrong.status_code == 422

        r = _answer(c, run_id, payload["request_id"], {"decision": "allow-once"})
        assert r.status_code == 200, r.text
        assert r.json()["decision"] == "allow-once" and r.json()["by"] == "user"
        assert _answer(c, run_id, payload["request_id"], {"decision": "reject"}).status_code == 409
        run = wait_run(c, run_id)
        assert run["status"] == "succeeded", run
        calls = c.get(f"/api/runs/{run_id}/tool-calls").json()["tool_calls"]
        assert any("approved-output" in (t["output"] or "") for t in calls), calls
        # answered after the run: still 409, not 404
        assert _answer(c, run_id, payload["request_id"], {"decision": "reject"}).status_code == 409

        run2 = _start(c, chat["id"], "run `echo never-shown`")
        req2 = poll(lambda: _pending(c, chat["id"]))
        r = _answer(c, run2, req2["payload"]["request_id"], {"decision": "reject"})
        assert r.status_code == 200
        wait_run(c, run2)
        calls = c.get(f"/api/runs/{run2}/tool-calls").json()["tool_calls"]
        assert calls and not any("never-shown" in (t["output"] or "") for t in calls)
        assert calls[0]["status"] in ("rejected", "failed"), calls

        # the chat opens with its requests and their answers
        turns = c.get(f"/api/chats/{chat['id']}/turns").json()
        items = [i for run in turns["runs"] for i in run["items"] if i["type"] == "request"]
        assert [i["answer"]["decision"] for i in items] == ["allow-once", "reject"]


def test_question_is_answered(server: Any) -> None:
    with server.client() as c:
        chat = new_chat(c, transport="acp")
        run_id = _start(c, chat["id"], "ask me which approach to take")
        req = poll(lambda: _pending(c, chat["id"], "question"))
        q = req["payload"]["questions"][0]
        option = q["options"][0]["id"]
        bad = _answer(c, run_id, req["payload"]["request_id"],
                      {"answers": [{"question_id": q["id"], "option_ids": ["not-offered"]}]})
        assert bad.status_code == 422
        # The same question answered twice in one body: refused, not stored with both.
        twice = _answer(c, run_id, req["payload"]["request_id"],
                        {"answers": [{"question_id": q["id"], "option_ids": [option]},
                                     {"question_id": q["id"], "option_ids": [q["options"][-1]["id"]]}]})
        assert twice.status_code == 422 and "twice" in twice.json()["detail"], twice.text
        r = _answer(c, run_id, req["payload"]["request_id"],
                    {"answers": [{"question_id": q["id"], "option_ids": [option]}]})
        assert r.status_code == 200, r.text
        assert r.json()["decision"] == "answered"
        assert wait_run(c, run_id)["status"] == "succeeded"
        agent_answers = [e for e in all_events(c, chat["id"])
                         if e["source"] == "agent" and "answered" in str(e["payload"])]
        assert agent_answers, "the agent heard the answer"


def test_timeout_rejects_and_says_so(make_server: Any) -> None:
    server = make_server(args=["--permission-timeout", "0.5"])
    with server.client() as c:
        chat = new_chat(c, transport="acp")
        run_id = _start(c, chat["id"], "run `echo too-late`")
        wait_run(c, run_id)
        recs = _requests(c, chat["id"])
        assert [e["subtype"] for e in recs] == ["permission", "answered"]
        answer = recs[1]["payload"]
        assert answer["decision"] == "reject" and answer["by"] == "timeout"
        assert "0.5 s" in answer["reason"]
        r = _answer(c, run_id, answer["request_id"], {"decision": "allow-once"})
        assert r.status_code == 409


def test_cancel_answers_pending_requests_cancelled(server: Any) -> None:
    with server.client() as c:
        chat = new_chat(c, transport="acp")
        run_id = _start(c, chat["id"], "run `echo wait-for-me`")
        req = poll(lambda: _pending(c, chat["id"]))
        r = c.post(f"/api/runs/{run_id}/cancel")
        assert r.status_code == 200, r.text
        assert wait_run(c, run_id)["status"] == "cancelled"
        recs = _requests(c, chat["id"])
        answered = [e["payload"] for e in recs if e["subtype"] == "answered"]
        assert answered and answered[0]["decision"] == "cancelled" and answered[0]["by"] == "cancel"
        assert _answer(c, run_id, req["payload"]["request_id"], {"decision": "allow-once"}).status_code == 409
        # the chat goes on
        again = _start(c, chat["id"], "say hello")
        assert wait_run(c, again)["status"] == "succeeded"


@pytest.mark.parametrize("stop", ["kill", "stop"])
def test_restart_answers_pending_requests_cancelled(make_server: Any, stop: str) -> None:
    """A crash (SIGKILL: the next start closes the request) and a graceful stop (SIGTERM: the
    stopping server closes it) say the same: ``by: "restart"`` ("Cancelled (the server
    restarted)" on the page; audit 5, F6: a graceful stop said ``run-end``, "the run ended")."""
    server = make_server()
    with server.client() as c:
        chat = new_chat(c, transport="acp")
        run_id = _start(c, chat["id"], "run `echo across-a-crash`")
        req = poll(lambda: _pending(c, chat["id"]))
    getattr(server, stop)()
    again = make_server()
    with again.client() as c:
        assert c.get(f"/api/runs/{run_id}").json()["status"] == "interrupted"
        recs = _requests(c, chat["id"])
        answered = [e["payload"] for e in recs if e["subtype"] == "answered"]
        assert len(answered) == 1
        assert answered[0]["request_id"] == req["payload"]["request_id"]
        assert answered[0]["decision"] == "cancelled" and answered[0]["by"] == "restart"
        events = all_events(c, chat["id"])
        assert (events[-1]["type"], events[-1]["subtype"]) == ("run", "interrupted")
        r = _answer(c, run_id, req["payload"]["request_id"], {"decision": "allow-once"})
        assert r.status_code == 409


def test_answer_needs_the_token_and_the_origin(server: Any) -> None:
    with server.client() as c:
        chat = new_chat(c, transport="acp")
        run_id = _start(c, chat["id"], "run `echo guarded`")
        req = poll(lambda: _pending(c, chat["id"]))
        rid = req["payload"]["request_id"]
        with server.anon() as anon:
            assert _answer(anon, run_id, rid, {"decision": "allow-once"}).status_code == 401
        evil = c.post(f"/api/runs/{run_id}/requests/{rid}", json={"decision": "allow-once"},
                      headers={"Origin": "https://evil.example"})
        assert evil.status_code == 403
        assert _pending(c, chat["id"]) is not None, "a refused answer changes nothing"
        assert _answer(c, run_id, rid, {"decision": "reject"}).status_code == 200
        wait_run(c, run_id)


def test_simulate_runs_acp_chats_on_the_simulators_acp_front_end() -> None:
    from cursor_agent_api.runtime.acp_transport import acp_argv
    from cursor_agent_api.server.runner import AgentLaunch, agent_config, simulator_binary
    from cursor_agent_api.server.settings import ServerSettings

    settings = ServerSettings(token="t" * 16, simulate=True)
    acp = agent_config(settings, AgentLaunch("hi", "/w", None, {"transport": "acp"}))
    assert acp.transport == "acp" and acp.permission_mode == "deny"  # no person: nothing runs
    argv = acp_argv(acp)
    assert argv[0] == simulator_binary() and argv[0].endswith("cursor-agent-sim")
    assert argv[-1] == "acp"
    printed = agent_config(settings, AgentLaunch("hi", "/w", None, {}))
    assert printed.transport == "print" and printed.can_use_tool is None


def test_a_forced_acp_chat_asks_a_person_its_questions_and_plans_only() -> None:
    """``force`` (``agent --force acp``) asks no permission: the run's config carries no
    ``can_use_tool`` (AgentConfig refuses one beside force_approve), only the rest."""
    from unittest.mock import Mock

    from cursor_agent_api.server.requests import RunSteering
    from cursor_agent_api.server.runner import AgentLaunch, agent_config
    from cursor_agent_api.server.settings import ServerSettings

    settings = ServerSettings(token="t" * 16, simulate=True)
    steering = RunSteering(Mock())
    forced = agent_config(settings, AgentLaunch("hi", "/w", None, {"transport": "acp", "force": True},
                                                steering=steering))
    assert forced.force_approve and forced.can_use_tool is None and forced.permission_mode == "deny"
    assert forced.on_question == steering.on_question and forced.on_plan == steering.on_plan
    asked = agent_config(settings, AgentLaunch("hi", "/w", None, {"transport": "acp"},
                                               steering=steering))
    assert asked.can_use_tool == steering.can_use_tool and asked.permission_mode == "ask"
