"""The client against the simulator's build variants (docs/simulator.md): a live prompt echo,
and a build that asks permission once more after a cancel."""

from __future__ import annotations

from acp_sim_harness import Sim

from cursor_agent_api import CursorAgentClient, EventType
from cursor_agent_api.permissions import Allow, Cancel, PermissionRequest


def test_a_live_prompt_echo_is_shown_once(sim: Sim) -> None:
    """``user_message_chunk`` live (ACP.md §5, one probe): the prompt is the turn's once."""
    results = []
    for echo in ("0", "1"):
        with CursorAgentClient(sim.config(env={"CURSOR_AGENT_SIM_ACP_USER_ECHO": echo})) as client:
            results.append(client.query("What is 2 + 2?"))
    plain, echoed = results
    updates = [f["params"]["update"] for f in sim.agent_frames() if f.get("method") == "session/update"]
    assert [u["content"]["text"] for u in updates if u["sessionUpdate"] == "user_message_chunk"] \
        == ["What is 2 + 2?"]
    assert echoed.success and echoed.result == plain.result
    # (``available_commands_update``, an UNKNOWN event, follows ``session/new`` on its own
    # time: it lands inside the turn's events or before them, echo or not)
    assert [e.type for e in echoed.events if e.type is not EventType.UNKNOWN] \
        == [e.type for e in plain.events if e.type is not EventType.UNKNOWN]
    assert len([e for e in echoed.events if e.type is EventType.USER]) == 1


def test_a_permission_request_after_the_cancel_is_answered_cancelled(sim: Sim) -> None:
    """The ``ask-after-cancel`` build: the callback cancels the turn at its first request; the
    request the agent sends after the cancel is answered ``cancelled`` (ACP.md §6, §11.3), so
    the call it asks about never runs."""
    asked: list[PermissionRequest] = []

    def can_use_tool(request: PermissionRequest) -> Allow | Cancel:
        asked.append(request)
        return Cancel() if len(asked) == 1 else Allow()

    config = sim.config(fault="ask-after-cancel", can_use_tool=can_use_tool)
    with CursorAgentClient(config) as client:
        result = client.query("run `touch a.txt`")
        after = client.query("What is 2 + 2?", resume=result.session_id)
    assert result.cancelled and after.success
    asks = [f for f in sim.agent_frames() if f.get("method") == "session/request_permission"]
    assert [f["params"]["toolCall"]["title"] for f in asks] == ["`touch a.txt`", "`touch after-cancel.txt`"]
    answers = {f["id"]: f["result"] for f in sim.client_frames() if "result" in f}
    assert answers[asks[1]["id"]] == {"outcome": {"outcome": "cancelled"}}
    assert not (sim.workspace / "after-cancel.txt").exists()
    assert not (sim.workspace / "a.txt").exists()
