"""ACP chats share one long-lived ``agent acp`` per server (issue 14 point 2): runs of two
chats and their follow-ups use one simulator process, each run's permission requests reach
that run, a cancel stops one chat's turn and not the other's, a process killed mid-turn
ends that turn with an error and the next prompt works, and shutdown leaves no process."""

from __future__ import annotations

import os
import signal
from typing import Any

import httpx
from server_helpers import alive, all_events, marked_processes, new_chat, poll, wait_run


def _pending(c: httpx.Client, chat_id: str, run_id: str) -> dict[str, Any] | None:
    recs = [e for e in all_events(c, chat_id) if e["type"] == "request"]
    answered = {e["payload"]["request_id"] for e in recs if e["subtype"] == "answered"}
    for e in recs:
        if e["subtype"] == "permission" and e["run_id"] == run_id \
                and e["payload"]["request_id"] not in answered:
            return e
    return None


def _start(c: httpx.Client, chat_id: str, prompt: str) -> str:
    r = c.post(f"/api/chats/{chat_id}/runs", json={"prompt": prompt})
    assert r.status_code == 202, r.text
    return str(r.json()["id"])


def _answer(c: httpx.Client, run_id: str, req: dict[str, Any], decision: str) -> None:
    r = c.post(f"/api/runs/{run_id}/requests/{req['payload']['request_id']}",
               json={"decision": decision})
    assert r.status_code == 200, r.text


def _outputs(c: httpx.Client, run_id: str) -> str:
    calls = c.get(f"/api/runs/{run_id}/tool-calls").json()["tool_calls"]
    return " ".join(t["output"] or "" for t in calls)


def _agents(server: Any) -> list[int]:
    """The pids of this server's agent processes."""
    return sorted(marked_processes(server.marker))


def _run_pid(c: httpx.Client, run_id: str) -> int:
    return int(c.get(f"/api/runs/{run_id}").json()["pid"])


def test_acp_chats_share_long_lived_agent_processes(make_server: Any) -> None:
    server = make_server()
    with server.client() as c:
        a = new_chat(c, transport="acp")
        b = new_chat(c, transport="acp")
        # two chats, one after the other: one process, kept between runs
        first_a = wait_run(c, _start(c, a["id"], "say hello"))
        assert first_a["status"] == "succeeded", first_a
        pid = first_a["pid"]
        assert _agents(server) == [pid]
        first_b = wait_run(c, _start(c, b["id"], "say hi"))
        assert first_b["status"] == "succeeded" and first_b["pid"] == pid
        assert first_b["session_id"] != first_a["session_id"]
        assert _agents(server) == [pid]

        # both chats' turns wait for a person at once: the second gets a process of its own
        run_a = _start(c, a["id"], "run `echo from-chat-a`")
        req_a = poll(lambda: _pending(c, a["id"], run_a))
        run_b = _start(c, b["id"], "run `echo from-chat-b`")
        req_b = poll(lambda: _pending(c, b["id"], run_b))
        assert _run_pid(c, run_a) == pid
        pid_b = _run_pid(c, run_b)
        assert _agents(server) == sorted([pid, pid_b])
        assert req_a["payload"]["tool"]["command"] == "echo from-chat-a"
        assert req_b["payload"]["tool"]["command"] == "echo from-chat-b"
        # each answer reaches the turn that asked
        _answer(c, run_b, req_b, "allow-once")
        assert wait_run(c, run_b)["status"] == "succeeded"
        _answer(c, run_a, req_a, "reject")
        assert wait_run(c, run_a)["status"] == "succeeded"
        assert "from-chat-b" in _outputs(c, run_b)
        assert "from-chat-a" not in _outputs(c, run_a)

        # follow-ups go to the process that holds their session: no new process
        for chat, home in ((a, pid), (b, pid_b)):
            done = wait_run(c, _start(c, chat["id"], "say hello again"))
            assert done["status"] == "succeeded" and done["pid"] == home, done
        assert _agents(server) == sorted([pid, pid_b])

        # cancel ends one chat's turn (session/cancel); the process and the chat go on
        run_a = _start(c, a["id"], "run `echo cancel-me`")
        poll(lambda: _pending(c, a["id"], run_a))
        run_b = _start(c, b["id"], "run `echo keep-me`")
        req_b = poll(lambda: _pending(c, b["id"], run_b))
        assert c.post(f"/api/runs/{run_a}/cancel").status_code == 200
        assert wait_run(c, run_a)["status"] == "cancelled"
        assert c.get(f"/api/runs/{run_b}").json()["status"] == "running"
        _answer(c, run_b, req_b, "allow-once")
        assert wait_run(c, run_b)["status"] == "succeeded"
        assert "keep-me" in _outputs(c, run_b)
        assert _agents(server) == sorted([pid, pid_b])

        # a process killed mid-turn: that turn fails with an error; the next prompt works
        run_a = _start(c, a["id"], "run `echo killed-before-this`")
        poll(lambda: _pending(c, a["id"], run_a))
        os.kill(pid, signal.SIGKILL)
        failed = wait_run(c, run_a)
        assert failed["status"] == "failed", failed
        assert failed["error_type"] == "AgentProcessError" and "next prompt" in failed["error"]
        done = wait_run(c, _start(c, a["id"], "say back again"))
        assert done["status"] == "succeeded", done
        assert done["session_id"] == first_a["session_id"]  # loaded into the new process
        assert done["pid"] not in (pid, pid_b)
        left = _agents(server)
        assert len(left) == 2 and pid not in left

    server.stop()
    assert not any(alive(p) for p in left)
    assert marked_processes(server.marker) == []
