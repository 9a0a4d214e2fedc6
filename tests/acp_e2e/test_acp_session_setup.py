"""A session's mode and model as the client knows them (its ``session_setup``), against
``cursor-agent-sim acp``: what ``set_session_option``/``set_session_mode`` set, what a
``session/load`` answered and what the agent reports are what the next turn compares with."""

from __future__ import annotations

from typing import Any

import pytest
from acp_sim_harness import Sim

from cursor_agent_api import CursorAgentClient
from cursor_agent_api.config import AgentConfig
from cursor_agent_api.errors import SessionError
from cursor_agent_api.protocol.acp_codec import RpcNotification
from cursor_agent_api.runtime.acp_transport import AcpTransport


def sent(sim: Sim, method: str) -> list[dict[str, Any]]:
    return [f["params"] for f in sim.client_frames() if f.get("method") == method]


def test_a_mode_set_as_an_option_is_the_sessions_and_a_later_turn_switches_back(sim: Sim) -> None:
    """``set_session_option(sid, "mode", "plan")``, then a turn asking ``agent``: it switches
    (it ran in plan mode, making a plan instead of the file)."""
    with CursorAgentClient(sim.config()) as client:
        sid = client.query("say hi").session_id
        assert sid is not None
        client.set_session_option(sid, "mode", "plan")
        assert client.session_setup(sid)["modes"]["currentModeId"] == "plan"
        turn = client.query("create notes.md with hello", resume=sid, session_mode="agent")
        assert client.session_setup(sid)["modes"]["currentModeId"] == "agent"
    assert turn.success, turn.error
    assert (sim.workspace / "notes.md").exists()
    assert [p["modeId"] for p in sent(sim, "session/set_mode")] == ["agent"]


def test_a_model_set_as_an_option_is_the_sessions_and_a_later_turn_switches_back(sim: Sim) -> None:
    with CursorAgentClient(sim.config()) as client:
        sid = client.query("say hi", model="auto").session_id
        assert sid is not None
        client.set_session_option(sid, "model", "gpt-5[]")
        assert client.session_setup(sid)["models"]["currentModelId"] == "gpt-5[]"
        turn = client.query("say hi", resume=sid, model="auto")
        assert client.session_setup(sid)["models"]["currentModelId"] == "default[]"
    assert turn.success, turn.error
    assert [p["value"] for p in sent(sim, "session/set_config_option")] == ["gpt-5[]", "default[]"]
    assert turn.model == "default[]"


def test_a_session_loaded_by_a_mode_switch_keeps_its_setup_and_the_next_turn_switches_model(
    sim: Sim,
) -> None:
    """Another client (or a restart) holds no session: ``set_session_mode`` loads it, and the
    load's answer is its setup (a turn asking ``gpt-5`` switches from the agent's ``default[]``
    instead of running on it while reporting ``gpt-5``)."""
    with CursorAgentClient(sim.config()) as first:
        sid = first.query("say hi").session_id
        assert sid is not None
    with CursorAgentClient(sim.config()) as second:
        second.set_session_mode(sid, "agent")
        setup = second.session_setup(sid)
        assert setup["models"]["currentModelId"] == "default[]"
        assert setup["modes"]["currentModeId"] == "agent"
        turn = second.query("say hi again", resume=sid, model="gpt-5")
    assert turn.success, turn.error
    assert [p["value"] for p in sent(sim, "session/set_config_option")] == ["gpt-5[]"]
    assert turn.model == "gpt-5[]"


@pytest.mark.parametrize("control", ["mode", "option"])
def test_a_session_the_agent_cannot_load_is_a_session_error(sim: Sim, control: str) -> None:
    """``session/load`` answered ``-32602`` (not found) for a mode or option switch: a
    :class:`SessionError` naming the session, as a turn would start a new one instead."""
    missing = "00000000-0000-4000-8000-000000000000"
    with CursorAgentClient(sim.config()) as client, pytest.raises(SessionError, match=missing) as caught:
        if control == "mode":
            client.set_session_mode(missing, "plan")
        else:
            client.set_session_option(missing, "model", "gpt-5[]")
    assert "model ids" not in str(caught.value)  # (not AcpRequestError's hint)
    assert sent(sim, "session/load") and not sent(sim, "session/set_mode") \
        and not sent(sim, "session/set_config_option")


def test_the_agents_mode_and_option_updates_are_the_sessions() -> None:
    """``current_mode_update`` and ``config_option_update`` (ACP.md §5), also between turns,
    change what a turn compares its mode and model with."""
    transport = AcpTransport(AgentConfig(transport="acp"))
    transport._remember("s1", "/w", {"modes": {"currentModeId": "agent"},
                                     "models": {"currentModelId": "default[]"}}, ())

    def update(update: dict[str, Any]) -> None:
        transport._on_notification(RpcNotification("session/update",
                                                    {"sessionId": "s1", "update": update}))

    update({"sessionUpdate": "current_mode_update", "currentModeId": "plan"})
    assert transport.session_mode("s1") == "plan"
    update({"sessionUpdate": "config_option_update", "configOptions": [
        {"id": "mode", "currentValue": "ask"}, {"id": "model", "currentValue": "gpt-5[]"}]})
    assert (transport.session_mode("s1"), transport.model_of("s1")) == ("ask", "gpt-5[]")
    assert transport.session_setup["s1"]["configOptions"][1]["currentValue"] == "gpt-5[]"


def test_todos_and_tasks_sent_as_notifications_are_the_turns_events(sim: Sim) -> None:
    """Cursor's documented form of ``cursor/update_todos`` and ``cursor/task`` (ACP.md §9:
    notifications) gives the turn what the wire's requests give it."""
    config = sim.config(env={"CURSOR_AGENT_SIM_ACP_CURSOR_FORM": "notification"})
    with CursorAgentClient(config) as client:
        todos = client.query("make a todo list: write the tests, fix the bug")
        task = client.query("use a subagent to count the files")
    tells = [f for f in sim.agent_frames() if f.get("method") in ("cursor/update_todos", "cursor/task")]
    assert sorted(f["method"] for f in tells) == ["cursor/task", "cursor/update_todos"]
    assert not [f for f in tells if "id" in f]  # notifications indeed
    (todo,) = [c for c in todos.tool_calls if c.todos]
    assert [t["content"] for t in todo.todos] == ["write the tests", "fix the bug"]
    assert [c.name for c in task.tool_calls] == ["Task"]
    assert task.tool_calls[0].args.get("prompt") == "count the files"
