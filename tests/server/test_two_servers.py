"""Two in-process-dispatch servers on one database (docs/server.md, "Several servers, one
database"): a run belongs to the server process that runs it. The other server does not
relay to it; its answers say so, and where to go, instead of an unexplained 409."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from typing import Any

from inproc import InProcServer
from server_helpers import Server, all_events, is_run_end, new_chat, poll, wait_run, ws_collect

HELD = {"CURSOR_AGENT_SIM_FAULT": "silence"}
"""The first server's agent: ``system/init``, then nothing until stopped, so that its run is
still running when the test acts on it however slow the machine (a slowed turn of ~1.6 s
could end before a cancel sent after three requests)."""
TOKEN = "a-token-shared-by-two-servers"


def test_a_cancel_through_the_other_server_names_the_server_that_runs_it(
    make_server: Callable[..., Server],
) -> None:
    first = make_server(token=TOKEN, sim_env=HELD)
    second = make_server(token=TOKEN)
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


def _run_of_a_dead_server(
    make_server: Callable[..., Server],
) -> tuple[Server, dict[str, Any], dict[str, Any]]:
    """Two servers; the one running a run is SIGKILLed (and reaped; its owner guard stops
    the agent). The survivor, the chat, the run (as the survivor reads it: still ``running``)."""
    first = make_server(token=TOKEN, sim_env=HELD)
    second = make_server(token=TOKEN)
    with first.client() as a, second.client() as b:
        chat = new_chat(a)
        run = a.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "count"}).json()
        poll(lambda: b.get(f"/api/runs/{run['id']}").json()["status"] == "running")
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait()
        run = b.get(f"/api/runs/{run['id']}").json()
    # running, unless the survivor's periodic look (every 10 s) came first: then the
    # cancel and the prompt below find it ended, as they do when they end it themselves
    assert run["status"] in ("running", "interrupted")
    return second, chat, run


def test_a_cancel_of_a_run_whose_server_died_ends_it_interrupted(make_server: Callable[..., Server]) -> None:
    """Review of 2026-11-24, wave 11: the survivor said "cancel it through that server" (dead)
    and the run stayed ``running`` until a restart. Now it ends it as a restart does."""
    survivor, chat, run = _run_of_a_dead_server(make_server)
    with survivor.client() as b:
        r = b.post(f"/api/runs/{run['id']}/cancel")
        assert r.status_code == 409, r.text
        assert r.json()["detail"] == f"run {run['id']} is already interrupted"
        after = b.get(f"/api/runs/{run['id']}").json()
        assert after["status"] == "interrupted"
        assert after["error_type"] == "ServerRestart"
        events = all_events(b, chat["id"])
        assert [e["subtype"] for e in events if e["type"] == "run"][-1] == "interrupted"
        p = b.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hi"})
        assert p.status_code == 202, p.text
        assert wait_run(b, p.json()["id"])["status"] == "succeeded"
    assert "Traceback" not in survivor.log_text()


def test_a_prompt_on_a_chat_whose_run_was_left_by_a_dead_server_is_taken(
    make_server: Callable[..., Server],
) -> None:
    """The chat refused every prompt (409: an active run) until a restart; now the survivor
    ends the dead server's run (interrupted, as a restart does) and takes the prompt."""
    survivor, chat, run = _run_of_a_dead_server(make_server)
    with survivor.client() as b:
        p = b.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hi"})
        assert p.status_code == 202, p.text
        old = b.get(f"/api/runs/{run['id']}").json()
        assert (old["status"], old["error_type"]) == ("interrupted", "ServerRestart")
        assert wait_run(b, p.json()["id"])["status"] == "succeeded"
    assert "Traceback" not in survivor.log_text()


def test_the_run_of_a_killed_server_is_ended_by_the_survivor_unasked(
    make_server: Callable[..., Server], make_inproc: Callable[..., InProcServer],
) -> None:
    """Review of 2026-11-24, wave 16: a run of a server killed -9 stayed ``running`` on the
    survivor until someone cancelled it or prompted the chat. Now each server looks for the
    runs of dead server processes of its host every ``dead_owner_check_interval`` s and
    ends them ``interrupted``; a client watching the chat there sees the end as any other."""
    first = make_server(token=TOKEN, sim_env=HELD)
    survivor = make_inproc(token=TOKEN, dead_owner_check_interval=0.05)
    with first.client() as a, survivor.client() as b:
        chat = new_chat(a)
        run = a.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "count"}).json()
        poll(lambda: b.get(f"/api/runs/{run['id']}").json()["status"] == "running")
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait()
        url = survivor.url.replace("http://", "ws://") + f"/api/chats/{chat['id']}/stream?after_seq=0"
        msgs = asyncio.run(ws_collect(url, lambda m: is_run_end(m, run["id"]), timeout=60,
                                      additional_headers={"Authorization": f"token {TOKEN}"}))
        assert msgs[-1]["event"]["subtype"] == "interrupted"
        after = b.get(f"/api/runs/{run['id']}").json()
        assert (after["status"], after["error_type"]) == ("interrupted", "ServerRestart")
        assert b.get(f"/api/chats/{chat['id']}").json()["status"] != "running"
        p = b.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hi"})
        assert p.status_code == 202, p.text
        assert wait_run(b, p.json()["id"])["status"] == "succeeded"
    assert "Traceback" not in first.log_text()
