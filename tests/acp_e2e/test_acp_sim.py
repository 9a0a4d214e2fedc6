"""Issue 14's "Done when", from Python, against ``cursor-agent-sim acp``: real processes, the
client's frames validated against the ``agent-client-protocol`` schema models."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from typing import Any

import pytest
from acp_sim_frames import validate
from acp_sim_harness import Sim

from cursor_agent_api import (
    AsyncConversationSession,
    AsyncCursorAgentClient,
    ConversationSession,
    CursorAgentClient,
    EventType,
)
from cursor_agent_api.errors import AgentProcessError
from cursor_agent_api.permissions import (
    Accept,
    Allow,
    Answer,
    Deny,
    PermissionRequest,
    Plan,
    QuestionRequest,
)
from cursor_agent_api.protocol.tools import ToolKind, ToolStatus
from cursor_agent_api.runtime.acp_connection import RpcFailure
from cursor_agent_api.runtime.acp_transport import AcpTransport


def shell_calls(result: Any) -> list[tuple[str | None, ToolStatus]]:
    return [(c.args.get("command"), c.status) for c in result.tool_calls if c.kind is ToolKind.SHELL]


def test_a_callback_denies_rm_rf_and_allows_ls_and_the_agent_sees_exactly_that(sim: Sim) -> None:
    (sim.workspace / "build").mkdir()
    (sim.workspace / "build" / "out.o").write_text("x")
    asked: list[str | None] = []

    def can_use_tool(request: PermissionRequest) -> Allow | Deny:
        asked.append(request.command)
        return Deny("not that") if (request.command or "").startswith("rm") else Allow()

    with CursorAgentClient(sim.config(can_use_tool=can_use_tool)) as client:
        listed = client.query("run `ls`")
        removed = client.query("run `rm -rf build`", resume=listed.session_id)
    assert asked == ["ls", "rm -rf build"]
    assert listed.success and removed.success and removed.session_id == listed.session_id
    assert shell_calls(listed) == [("ls", ToolStatus.SUCCEEDED)]
    assert "build" in (listed.tool_calls[0].output or "")
    # Cursor reports the rejected call "completed": the client remembers its own answer
    assert shell_calls(removed) == [("rm -rf build", ToolStatus.REJECTED)]
    assert "could not run `rm -rf build`: the command was rejected." in removed.result
    assert "--force" not in removed.result  # ACP: the person said no; no print-mode dead end
    assert (sim.workspace / "build" / "out.o").exists()  # the agent did not run it
    counts = validate(sim.client_frames(), sim.agent_frames())
    assert counts["session/request_permission:selected"] == 2
    answers = [f["result"]["outcome"]["optionId"] for f in sim.client_frames()
               if "outcome" in f.get("result", {})]
    assert answers == ["allow-once", "reject-once"]


def test_allow_always_is_remembered(sim: Sim) -> None:
    asked: list[str | None] = []

    def can_use_tool(request: PermissionRequest) -> Allow:
        asked.append(request.command)
        return Allow(remember=True)

    with CursorAgentClient(sim.config(can_use_tool=can_use_tool)) as client:
        first = client.query("run `ls`")
        again = client.query("run `ls -a`", resume=first.session_id)
    assert asked == ["ls"]  # the second ls was allowed by the agent's own allowlist
    assert shell_calls(again) == [("ls -a", ToolStatus.SUCCEEDED)]
    config = json.loads((sim.config_dir / "cli-config.json").read_text())
    assert config["permissions"]["allow"] == ["Shell(ls)"]
    validate(sim.client_frames(), sim.agent_frames())


def test_on_question_answers_the_agents_question(sim: Sim) -> None:
    seen: list[QuestionRequest] = []

    def on_question(request: QuestionRequest) -> Answer:
        seen.append(request)
        return Answer({"choice": ["b"]})

    with CursorAgentClient(sim.config(on_question=on_question)) as client:
        result = client.query("ask me before you start")
    (request,) = seen
    assert not request.fallback
    assert [o.label for o in request.questions[0].options] == ["Go ahead", "Stop"]
    assert "You chose: Stop." in result.result
    assert any(e.type is EventType.INTERACTION_QUERY for e in result.events)
    assert validate(sim.client_frames(), sim.agent_frames())["cursor/ask_question:result"] == 1


def test_the_ask_question_skip_fallback_reaches_on_question(
        sim: Sim, monkeypatch: pytest.MonkeyPatch) -> None:
    """A client that answers ``cursor/ask_question`` with -32601 (as SDK-based clients do) gets
    the fallback permission request with ``__ask_question_skip__``: it goes to on_question."""
    original = AcpTransport._on_request

    async def sdk_like(self: AcpTransport, request: Any) -> Any:
        if request.method == "cursor/ask_question":
            raise RpcFailure(-32601, "Method not found")
        return await original(self, request)

    monkeypatch.setattr(AcpTransport, "_on_request", sdk_like)
    seen: list[QuestionRequest] = []
    permissions: list[PermissionRequest] = []

    def on_question(request: QuestionRequest) -> Answer:
        seen.append(request)
        return Answer("a")

    with CursorAgentClient(sim.config(on_question=on_question,
                                      can_use_tool=permissions.append)) as client:
        result = client.query("ask me before you start")
    (request,) = seen
    assert request.fallback and request.title == "How should I proceed?"
    assert not permissions  # never "approved" as a tool call
    assert "You chose: Go ahead." in result.result
    counts = validate(sim.client_frames(), sim.agent_frames())
    assert counts["cursor/ask_question:error-32601"] == 1
    answers = [f["result"]["outcome"].get("optionId") for f in sim.client_frames()
               if "outcome" in f.get("result", {})]
    assert answers == ["a"]


def test_plan_mode_create_plan_goes_to_on_plan(sim: Sim) -> None:
    plans: list[Plan] = []

    def on_plan(plan: Plan) -> Accept:
        plans.append(plan)
        return Accept()

    with CursorAgentClient(sim.config(on_plan=on_plan)) as client:
        sid = client.create_chat()
        client.set_session_mode(sid, "plan")
        result = client.query("create notes.txt with hello", resume=sid)
    (plan,) = plans
    assert plan.session_id == sid and "notes.txt" in plan.plan
    assert result.success and not (sim.workspace / "notes.txt").exists()  # plan mode: no edits
    counts = validate(sim.client_frames(), sim.agent_frames())
    assert counts["cursor/create_plan:result"] == 1 and counts["session/set_mode"] == 1


def _cancel_on_first_delta(client: CursorAgentClient, prompt: str, sid: str) -> Any:
    stream = client.query_stream(prompt, resume=sid)
    for event in stream:
        if event.type is EventType.ASSISTANT_DELTA or event.type is EventType.THINKING_DELTA:
            stream.cancel()
    return stream.wait()


def test_cancel_keeps_the_chat(sim: Sim) -> None:
    # 0.1 s per update: the poem goes on for about 3 s after its first delta, where the
    # cancel is sent, so it lands mid-turn.
    config = sim.config(fault="slow", env={"CURSOR_AGENT_SIM_DELAY": "0.1"})
    with CursorAgentClient(config) as client:
        sid = client.create_chat()
        cancelled = _cancel_on_first_delta(client, "write a poem about the sea", sid)
        after = client.query("what did I ask before?", resume=sid)
    assert cancelled.cancelled and cancelled.session_id == sid
    assert after.success and after.session_id == sid
    assert "write a poem about the sea" in after.result
    counts = validate(sim.client_frames(), sim.agent_frames())
    assert counts["session/cancel"] == 1 and "session/load" not in counts
    assert counts["initialize"] == 1  # one process throughout


def test_cancel_on_a_build_without_session_cancel_falls_back_and_loads(sim: Sim) -> None:
    config = sim.config(fault="slow,cancel-unsupported", env={"CURSOR_AGENT_SIM_DELAY": "0.1"})
    with CursorAgentClient(config) as client:
        sid = client.create_chat()
        client.query("remember the code word is BLUE", resume=sid)
        cancelled = _cancel_on_first_delta(client, "write a poem about the sea", sid)
        after = client.query("what did I ask before?", resume=sid)
    assert cancelled.cancelled
    assert after.success and after.session_id == sid
    assert "remember the code word is BLUE" in after.result
    counts = validate(sim.client_frames(), sim.agent_frames())
    assert counts["initialize"] == 2 and counts["session/load"] == 1  # killed, then reloaded


def test_the_agent_killed_mid_turn_ends_the_turn_typed_and_the_next_prompt_works(sim: Sim) -> None:
    with CursorAgentClient(sim.config(permission_mode="allow")) as client:
        sid = client.query("remember the code word is BLUE").session_id
    with CursorAgentClient(sim.config(fault="crash-once", permission_mode="allow")) as client:
        crashed = client.query("run `ls`", resume=sid)
        after = client.query("what did I ask before?", resume=sid)
    assert not crashed.success and isinstance(crashed.exception, AgentProcessError)
    assert crashed.exception.exit_code == 1 and "the next prompt restarts" in str(crashed.exception)
    assert after.success and after.session_id == sid
    assert "remember the code word is BLUE" in after.result
    counts = validate(sim.client_frames(), sim.agent_frames())
    assert counts["initialize"] == 3 and counts["session/load"] == 2


def test_an_unknown_agent_request_never_stalls_a_turn(sim: Sim) -> None:
    with CursorAgentClient(sim.config(fault="unknown-request")) as client:
        result = client.query("say hello", timeout=60)
    assert result.success and result.result
    counts = validate(sim.client_frames(), sim.agent_frames())
    assert counts["cursor/sim_unknown:error-32601"] == 1


def test_sync_and_async_sessions_in_acp_mode(sim: Sim) -> None:
    config = sim.config(permission_mode="allow")
    session = ConversationSession(config)
    try:
        session.send("remember the code word is BLUE")
        second = session.send("what did I ask before?")
    finally:
        session.close()
    assert "remember the code word is BLUE" in second.result

    async def main() -> tuple[Any, Any]:
        async with AsyncCursorAgentClient(config) as client:
            first = await client.query("run `ls`")
            asession = AsyncConversationSession(client, session_id=first.session_id)
            later = await asession.send("what did I ask before?")
            return first, later

    first, later = asyncio.run(main())
    assert shell_calls(first) == [("ls", ToolStatus.SUCCEEDED)]
    assert "run `ls`" in later.result and later.session_id == first.session_id
    validate(sim.client_frames(), sim.agent_frames())


def _approval_key(name: str, definition: dict[str, Any], workspace: str) -> str:
    """MCP.md §4, written here apart from the code under test: SHA-256 of JS's
    ``JSON.stringify({path, server})``, its first 16 hex digits after the name."""
    text = json.dumps({"path": workspace, "server": definition}, separators=(",", ":"))
    return f"{name}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def test_a_tool_function_is_called_in_acp_mode_after_a_permission_request(sim: Sim) -> None:
    """The client's tool server goes to the agent in ``session/new``'s ``mcpServers`` (the
    token resolved there, never in a file) and gets an approval entry in the CLI's
    ``mcp-approvals.json`` for the turn (``--approve-mcps`` is not wired to ACP, and the
    simulator, as the 09.10 bundle, loads a given server only with one); the simulator loads
    it and asks before the call, and the client allows its own tools without asking the
    callback (as print mode's allowlist does)."""
    from cursor_agent_api.tools import tool

    slug = re.sub(r"[^A-Za-z0-9]+", "-", str(sim.workspace.resolve())).strip("-")
    approvals = sim.config_dir / "projects" / slug / "mcp-approvals.json"
    during: list[list[str]] = []

    @tool
    def lookup_order(order_id: str) -> dict[str, Any]:
        """Look up an order by its id."""
        during.append(json.loads(approvals.read_bytes()))
        return {"id": order_id, "status": "shipped"}

    asked: list[PermissionRequest] = []

    def can_use_tool(request: PermissionRequest) -> Allow:
        asked.append(request)
        return Allow()

    before = sorted(p.name for p in sim.workspace.rglob("*"))
    with CursorAgentClient(sim.config(can_use_tool=can_use_tool), tools=[lookup_order]) as client:
        result = client.query('lookup_order {"order_id": "A1"}')
    assert asked == []  # its own tool: allowed without asking
    (request,) = [e.data["query"]["permissionRequestQuery"] for e in result.events
                  if e.type is EventType.INTERACTION_QUERY and e.data.get("subtype") == "request"]
    assert request["args"]["providerIdentifier"].startswith("python-tools-")
    assert request["args"]["toolName"] == "lookup_order"
    assert '{"order_id":"A1"}' in (request["reason"] or "")
    assert result.success, result.error
    assert '`lookup_order` returned: {"id": "A1", "status": "shipped"}' in result.result
    # the permission request named the server and the arguments: the call is linked back
    (call,) = [c for c in result.tool_calls if c.kind is ToolKind.MCP]
    assert call.mcp_server == request["args"]["providerIdentifier"]
    assert call.mcp_tool == "lookup_order"
    assert call.is_own_tool and call.local is not None
    assert call.local.arguments == {"order_id": "A1"} and call.local.value == {
        "id": "A1", "status": "shipped"}
    assert sorted(p.name for p in sim.workspace.rglob("*")) == before  # .cursor/ restored
    new = next(f for f in sim.client_frames() if f.get("method") == "session/new")
    (server,) = new["params"]["mcpServers"]
    assert server["type"] == "http" and server["name"].startswith("python-tools-")
    header, scope = server["headers"]
    assert header["name"] == "Authorization" and header["value"].startswith("Bearer ")
    assert "${env:" not in header["value"]
    # the scope of the MCP sessions the agent opens for it (they end with the session)
    assert scope["name"] == "X-Cursor-Agent-Api-Scope" and scope["value"]
    assert "${env:" not in scope["value"]
    # the approval entry the simulator needed ({url} alone, as the forum hashed an ACP server)
    # was there during the turn, and nothing of it is left afterwards
    (keys,) = during
    assert _approval_key(server["name"], {"url": server["url"]}, str(sim.workspace.resolve())) in keys
    assert not any(header["value"][len("Bearer "):] in k for k in keys)
    assert not (sim.config_dir / "projects").exists()
    validate(sim.client_frames(), sim.agent_frames())


def test_with_changes_on_a_sync_acp_stream_sees_every_fold(sim: Sim) -> None:
    with CursorAgentClient(sim.config(permission_mode="allow")) as client:
        stream = client.query_stream("run `ls`")
        pairs = list(stream.with_changes())
        result = stream.wait()
    assert result.success
    assert len(pairs) == stream.transcript.event_count == len(result.events)
    assert [e for e, _ in pairs] == result.events
    assert any(c.kind == "text_appended" for _, changes in pairs for c in changes)


def test_ctrl_c_while_the_agent_starts_sends_no_prompt_and_the_next_turn_works(sim: Sim) -> None:
    """A KeyboardInterrupt while ``agent acp`` initializes: the turn stops where it is (the
    prompt is never sent), and the client's next turn starts the agent again. (``query_stream``
    returns once the process runs: ``initialize`` is the turn's to wait for, under its
    ``timeout``; the interrupt lands in ``query``'s wait.)"""
    import _thread
    import threading

    config = sim.config(fault="slow-start", env={"CURSOR_AGENT_SIM_DELAY": "2"})
    with CursorAgentClient(config) as client:
        timer = threading.Timer(0.7, _thread.interrupt_main)
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            client.query("say hello")
        timer.join()
        after = client.query("what is 2+2?")
    assert after.success and "4" in after.result
    prompts = [f for f in sim.client_frames() if f.get("method") == "session/prompt"]
    assert ["say hello" in json.dumps(f) for f in prompts] == [False]


def test_a_per_turn_model_switches_the_acp_session_model(sim: Sim) -> None:
    """``query(..., model=…)`` in ACP mode: the client's one ``agent acp`` was started with the
    first turn's model; a later turn's model is set on its session (``set_config_option``)."""
    with CursorAgentClient(sim.config(model="gpt-5")) as client:
        first = client.query("hello")
        second = client.query("hello again", resume=first.session_id, model="composer-2.5")
        third = client.query("and again", resume=first.session_id, model="composer-2.5")
    assert first.success and second.success and third.success
    counts = validate(sim.client_frames(), sim.agent_frames())
    sets = [f["params"] for f in sim.client_frames()
            if f.get("method") == "session/set_config_option"]
    assert [(p["configId"], p["value"].split("[")[0]) for p in sets] == [("model", "composer-2.5")]
    assert counts["initialize"] == 1
    assert second.model is not None and second.model.startswith("composer-2.5")


def test_model_auto_is_the_agents_default_model_in_acp_mode(sim: Sim) -> None:
    with CursorAgentClient(sim.config(model="gpt-5")) as client:
        first = client.query("hello")
        auto = client.query("hello again", resume=first.session_id, model="auto")
    assert auto.success, auto.error
    sets = [f["params"]["value"] for f in sim.client_frames()
            if f.get("method") == "session/set_config_option"]
    assert [v.split("[")[0] for v in sets] == ["default"]  # the picker's id for "Auto"
