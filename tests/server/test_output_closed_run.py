"""A run whose agent closes stdout and stderr without a result and never exits ends ``failed``
(audit 4: it stayed ``running`` for good): the turn stops the agent's group ``result_grace``
after both pipes ended, and the run's error says what happened."""

from __future__ import annotations

from collections.abc import Callable

from inproc import InProcServer
from server_helpers import all_events, new_chat, wait_run


def test_a_run_whose_agent_closes_its_output_and_lingers_ends_failed(
    make_inproc: Callable[..., InProcServer],
) -> None:
    server = make_inproc(sim_env={"CURSOR_AGENT_SIM_FAULT": "close-output"})
    with server.client() as c:
        chat = new_chat(c)
        r = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hello"})
        assert r.status_code == 202, r.text
        run = wait_run(c, r.json()["id"])
        assert (run["status"], run["error_type"]) == ("failed", "AgentProcessError"), run
        assert "closed its output (stdout and stderr) without a result but did not exit" \
            in run["error"]
        events = all_events(c, chat["id"])
        agent = [(e["type"], e["subtype"]) for e in events if e["source"] == "agent"]
        assert agent[0] == ("system:init", "init")
        assert [e["subtype"] for e in events if e["type"] == "run"][-1] == "failed"
