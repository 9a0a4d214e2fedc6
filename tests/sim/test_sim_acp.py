"""``cursor-agent-sim acp`` driven as a subprocess with raw JSON-RPC; every standard frame it
writes is validated against the ``agent-client-protocol`` schema models (see acp_peer.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from .acp_peer import FrameError, Peer, allow_once, method_not_found, reject_once, text_of, validate
from .conftest import Sim


@pytest.fixture
def peer(sim: Sim) -> Peer:
    return Peer.start(sim)


def _tool_calls(updates: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Tool-call frames grouped by id, in order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for u in updates:
        if u["sessionUpdate"] in ("tool_call", "tool_call_update"):
            out.setdefault(u["toolCallId"], []).append(u)
    return out


def _final(frames: list[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for f in frames:
        merged.update(f)
    return merged


# ---- the validator can fail -----------------------------------------------------------------------


def test_the_validator_rejects_a_misspelt_or_wrong_frame() -> None:
    good = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "sessionId": "s",
            "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}},
        },
    }
    assert validate(good, lambda _id: None)
    bad_kind = orjson.loads(orjson.dumps(good))
    bad_kind["params"]["update"]["sessionUpdate"] = "agent_message"
    misspelt = orjson.loads(orjson.dumps(good))
    misspelt["params"]["sesionId"] = misspelt["params"].pop("sessionId")
    extra = orjson.loads(orjson.dumps(good))
    extra["params"]["update"]["contents"] = "x"
    wrong_result = {"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "done"}}
    for frame in (bad_kind, misspelt, extra):
        with pytest.raises(FrameError):
            validate(frame, lambda _id: None)
    with pytest.raises(FrameError):
        validate(wrong_result, lambda _id: "session/prompt")


# ---- initialize and authentication ------------------------------------------------------------------


def test_initialize_gives_cursors_capability_block(peer: Peer) -> None:
    result = peer.init()
    assert result == {
        "protocolVersion": 1,
        "agentCapabilities": {
            "loadSession": True,
            "mcpCapabilities": {"http": True, "sse": True},
            "promptCapabilities": {"audio": False, "embeddedContext": False, "image": True},
            "sessionCapabilities": {"list": {}},
        },
        "authMethods": [
            {
                "id": "cursor_login",
                "name": "Cursor Login",
                "description": "Authenticate using existing Cursor login credentials. "
                "Run 'agent login' first if not logged in.",
            }
        ],
    }
    # protocol v1 only: a newer version is answered with 1
    assert peer.call("initialize", {"protocolVersion": 99})["result"]["protocolVersion"] == 1
    assert peer.validated >= 2


def test_logged_out_refuses_sessions_and_authenticate(sim: Sim, ws: Path) -> None:
    assert sim.run("logout").returncode == 0
    peer = Peer.start(sim)
    peer.init()
    error = peer.call("session/new", {"cwd": str(ws), "mcpServers": []})["error"]
    assert error["code"] == -32000 and error["message"] == "Authentication required"
    assert "cursor_login" in error["data"]["message"]
    # headless, the browser login fails at once
    error = peer.call("authenticate", {"methodId": "cursor_login"})["error"]
    assert error["code"] == -32602 and error["data"]["message"].startswith("Failed to open browser for login")
    error = peer.call("authenticate", {"methodId": "github"})["error"]
    assert error["code"] == -32602 and "Supported method: cursor_login" in error["data"]["message"]
    assert peer.call("session/list", {})["error"]["code"] == -32000
    peer.close()
    # an API key pre-authenticates: no authenticate call needed
    keyed = Peer.start(sim, env={"CURSOR_API_KEY": "sk-test"})
    keyed.init()
    assert keyed.new_session(ws)
    keyed.close()
    # logged in again: authenticate succeeds
    assert sim.run("login").returncode == 0
    again = Peer.start(sim)
    again.init()
    assert again.call("authenticate", {"methodId": "cursor_login"})["result"] == {}
    again.close()


def test_auth_fault_and_invalid_key(sim: Sim, ws: Path) -> None:
    peer = Peer.start(sim, env={"CURSOR_AGENT_SIM_FAULT": "auth"})
    peer.init()
    assert peer.call("session/new", {"cwd": str(ws), "mcpServers": []})["error"]["code"] == -32000
    assert peer.call("authenticate", {"methodId": "cursor_login"})["error"]["code"] == -32602
    peer.close()
    bad = Peer.start(sim, env={"CURSOR_API_KEY": "invalid-key"})
    bad.init()
    error = bad.call("session/new", {"cwd": str(ws), "mcpServers": []})["error"]
    assert (error["code"], error["message"]) == (-32603, "Failed to initialize session services")
    bad.close()


def test_unknown_methods_missing_params_and_malformed_lines(peer: Peer, ws: Path) -> None:
    peer.init()
    for method in ("session/resume", "session/close", "session/fork", "fs/whatever"):
        assert peer.call(method, {})["error"]["code"] == -32601
    error = peer.call("session/new", {})["error"]
    assert error["code"] == -32603
    assert [issue["path"] for issue in error["data"]] == [["cwd"], ["mcpServers"]]  # a Zod issue array
    peer.write(b"this is not json\n")
    peer.write(b'{"jsonrpc":"2.0","id":\n')
    # no answer to the malformed lines: the next request is the next answer
    reply = peer.call("session/list", {})
    assert reply["result"] == {"sessions": []}
    assert all("error" not in f or f["id"] is not None for f in peer.frames)


# ---- a turn ------------------------------------------------------------------------------------------


def test_a_turn_streams_thoughts_and_text_then_end_turn(peer: Peer, ws: Path) -> None:
    peer.init()
    sid = peer.new_session(ws)
    reply = peer.prompt(sid, "What is 6 * 7?")
    assert reply["result"] == {"stopReason": "end_turn"}  # no usage in ACP
    updates = peer.updates(sid)
    kinds = [u["sessionUpdate"] for u in updates]
    assert kinds[0] == "available_commands_update"
    assert kinds[1] == "session_info_update" and updates[1]["title"]
    assert "agent_thought_chunk" in kinds and kinds.index("agent_thought_chunk") < kinds.index(
        "agent_message_chunk"
    )
    assert text_of(updates) == "42"
    assert kinds.count("agent_message_chunk") >= 1 and "usage_update" not in kinds
    assert peer.validated == len(peer.frames)


def test_shell_asks_permission_and_allow_once_runs_it(peer: Peer, ws: Path) -> None:
    peer.init()
    sid = peer.new_session(ws)
    rid = peer.request(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "run `echo hello`"}]}
    )
    ask = peer.until(rid, stop_on="session/request_permission")
    params = ask["params"]
    assert params["sessionId"] == sid
    assert [o["optionId"] for o in params["options"]] == ["allow-once", "allow-always", "reject-once"]
    assert [o["kind"] for o in params["options"]] == ["allow_once", "allow_always", "reject_once"]
    call = params["toolCall"]
    assert (call["kind"], call["status"], call["title"]) == ("execute", "pending", "`echo hello`")
    assert call["content"][0]["content"]["text"] == "Not in allowlist: echo"
    assert "\n" in call["toolCallId"]  # call-<uuid>-0\nfc_<hex>_0, as recorded
    peer.answer(ask, allow_once(ask))
    assert peer.until(rid)["result"] == {"stopReason": "end_turn"}
    frames = _tool_calls(peer.updates(sid))[call["toolCallId"]]
    assert frames[0]["sessionUpdate"] == "tool_call" and frames[0]["rawInput"] == {"command": "echo hello"}
    assert [f.get("status") for f in frames] == ["pending", "in_progress", "completed"]
    assert frames[-1]["rawOutput"] == {"exitCode": 0, "stdout": "hello\n", "stderr": ""}
    assert "hello" in text_of(peer.updates(sid))
    assert peer.validated == len(peer.frames)


def test_a_reject_is_honoured_and_reported_completed_as_the_builds_do(peer: Peer, ws: Path) -> None:
    peer.init()
    sid = peer.new_session(ws)
    peer.handlers["session/request_permission"] = reject_once
    assert peer.prompt(sid, "run `touch made.txt`")["result"]["stopReason"] == "end_turn"
    assert not (ws / "made.txt").exists()
    (frames,) = _tool_calls(peer.updates(sid)).values()
    assert [f.get("status") for f in frames] == ["pending", "completed"]
    assert "rawOutput" not in _final(frames) and "content" not in _final(frames)
    assert "rejected" in text_of(peer.updates(sid))


def test_reject_failed_fault(sim: Sim, ws: Path) -> None:
    peer = Peer.start(sim, env={"CURSOR_AGENT_SIM_FAULT": "reject-failed"})
    peer.init()
    sid = peer.new_session(ws)
    peer.handlers["session/request_permission"] = reject_once
    peer.prompt(sid, "run `touch made.txt`")
    assert not (ws / "made.txt").exists()
    (frames,) = _tool_calls(peer.updates(sid)).values()
    assert [f.get("status") for f in frames] == ["pending", "failed"]
    assert "rawOutput" not in _final(frames)


def test_allow_always_is_remembered(sim: Sim, peer: Peer, ws: Path) -> None:
    peer.init()
    sid = peer.new_session(ws)
    asked: list[dict[str, Any]] = []

    def always(request: dict[str, Any]) -> dict[str, Any]:
        asked.append(request)
        return {"result": {"outcome": {"outcome": "selected", "optionId": "allow-always"}}}

    peer.handlers["session/request_permission"] = always
    peer.prompt(sid, "run `touch one.txt`")
    peer.prompt(sid, "run `touch two.txt`")
    assert len(asked) == 1
    assert (ws / "one.txt").exists() and (ws / "two.txt").exists()
    config = orjson.loads((sim.config_dir / "cli-config.json").read_bytes())
    assert config["permissions"]["allow"] == ["Shell(touch)"]
    # another command still asks
    peer.prompt(sid, "run `echo x`")
    assert len(asked) == 2


def test_force_and_allowlist_do_not_ask(sim: Sim, ws: Path) -> None:
    forced = Peer.start(sim, "--force")
    forced.init()
    sid = forced.new_session(ws)
    forced.prompt(sid, "run `touch forced.txt` ")
    assert (ws / "forced.txt").exists()
    assert not [f for f in forced.frames if f.get("method") == "session/request_permission"]
    forced.close()
    sim.config_dir.mkdir(parents=True, exist_ok=True)
    (sim.config_dir / "cli-config.json").write_text('{"permissions": {"allow": ["Shell(touch)"]}}')
    listed = Peer.start(sim)
    listed.init()
    sid = listed.new_session(ws)
    listed.prompt(sid, "run `touch listed.txt`")
    assert (ws / "listed.txt").exists()
    assert not [f for f in listed.frames if f.get("method") == "session/request_permission"]


def test_web_fetch_asks_and_reads_edits_do_not(peer: Peer, ws: Path) -> None:
    peer.init()
    sid = peer.new_session(ws)
    peer.handlers["session/request_permission"] = allow_once
    peer.prompt(sid, "fetch https://example.com/page")
    asks = [f for f in peer.frames if f.get("method") == "session/request_permission"]
    assert [a["params"]["toolCall"]["kind"] for a in asks] == ["fetch"]
    (call_id,) = _tool_calls(peer.updates(sid))
    assert call_id == "web_fetch_0"
    peer.prompt(sid, 'create new.txt with "Hi" and read notes.txt')
    assert len([f for f in peer.frames if f.get("method") == "session/request_permission"]) == 1
    assert (ws / "new.txt").read_text() == "Hi\n"


@pytest.mark.parametrize("style", ["update", "tool_call"])
def test_edits_are_enriched_after_they_start_and_carry_a_diff(sim: Sim, ws: Path, style: str) -> None:
    peer = Peer.start(sim, env={"CURSOR_AGENT_SIM_ACP_ENRICH": style})
    peer.init()
    sid = peer.new_session(ws)
    peer.prompt(sid, 'replace "alpha" with "omega" in notes.txt')
    calls = _tool_calls(peer.updates(sid))
    edit = next(frames for frames in calls.values() if frames[0]["kind"] == "edit")
    first, second = edit[0], edit[1]
    assert (first["sessionUpdate"], first["title"], first["rawInput"]) == ("tool_call", "Edit File", {})
    assert second["sessionUpdate"] == ("tool_call_update" if style == "update" else "tool_call")
    assert second["toolCallId"] == first["toolCallId"] and second["rawInput"]["path"].endswith("notes.txt")
    done = edit[-1]
    assert done["status"] == "completed"
    (diff,) = done["content"]
    assert diff["type"] == "diff" and diff["path"].endswith("notes.txt")
    assert (diff["oldText"], diff["newText"]) == ("alpha\nbeta\n", "omega\nbeta\n")
    assert (ws / "notes.txt").read_text() == "omega\nbeta\n"
    reads = [frames for frames in calls.values() if frames[0]["kind"] == "read"]
    assert reads and reads[0][-1]["rawOutput"] == {"content": "alpha\nbeta\n"}
    peer.close()


def test_edits_ask_when_the_setting_says_a_build_asks(sim: Sim, ws: Path) -> None:
    peer = Peer.start(sim, env={"CURSOR_AGENT_SIM_ACP_ASK_EDITS": "1"})
    peer.init()
    sid = peer.new_session(ws)
    peer.handlers["session/request_permission"] = reject_once
    peer.prompt(sid, 'create fresh.txt with "x"')
    asks = [f for f in peer.frames if f.get("method") == "session/request_permission"]
    assert [a["params"]["toolCall"]["kind"] for a in asks] == ["edit"]
    assert not (ws / "fresh.txt").exists()
    peer.close()


# ---- questions, plans, todos ---------------------------------------------------------------------


def test_ask_question_answered(peer: Peer, ws: Path) -> None:
    peer.init()
    sid = peer.new_session(ws)
    seen: list[dict[str, Any]] = []

    def answer(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request)
        q = request["params"]["questions"][0]
        picked = {"questionId": q["id"], "selectedOptionIds": [q["options"][0]["id"]]}
        return {"result": {"outcome": {"outcome": "answered", "answers": [picked]}}}

    peer.handlers["cursor/ask_question"] = answer
    assert peer.prompt(sid, "ask me how to proceed")["result"]["stopReason"] == "end_turn"
    assert len(seen) == 1 and seen[0]["params"]["toolCallId"]
    assert "You chose: Go ahead." in text_of(peer.updates(sid))


def test_ask_question_falls_back_to_a_permission_request(peer: Peer, ws: Path) -> None:
    peer.init()
    sid = peer.new_session(ws)
    asks: list[dict[str, Any]] = []

    def pick(request: dict[str, Any]) -> dict[str, Any]:
        asks.append(request)
        return {"result": {"outcome": {"outcome": "selected", "optionId": "b"}}}

    peer.handlers["cursor/ask_question"] = method_not_found
    peer.handlers["session/request_permission"] = pick
    peer.prompt(sid, "ask me how to proceed")
    (ask,) = asks
    options = ask["params"]["options"]
    assert options[-1] == {"optionId": "__ask_question_skip__", "name": "Skip", "kind": "reject_once"}
    assert [o["kind"] for o in options[:-1]] == ["allow_once", "allow_once"]
    assert ask["params"]["toolCall"]["kind"] == "other"
    assert ask["params"]["toolCall"]["title"] == "How should I proceed?"
    assert "You chose: Stop." in text_of(peer.updates(sid))


def test_plan_mode_creates_a_plan_and_the_fallback_writes_a_file(peer: Peer, ws: Path) -> None:
    peer.init()
    sid = peer.new_session(ws)
    assert peer.call("session/set_mode", {"sessionId": sid, "modeId": "plan"})["result"] == {}
    assert peer.updates(sid)[-1] == {"sessionUpdate": "current_mode_update", "currentModeId": "plan"}
    plans: list[dict[str, Any]] = []

    def accept(request: dict[str, Any]) -> dict[str, Any]:
        plans.append(request)
        return {"result": {"outcome": {"outcome": "accepted"}}}

    peer.handlers["cursor/create_plan"] = accept
    peer.prompt(sid, 'create plan.txt with "x"')
    (plan,) = plans
    assert plan["params"]["plan"].startswith("# ") and plan["params"]["todos"]
    assert not (ws / "plan.txt").exists()  # plan mode blocks edits
    assert any(u["sessionUpdate"] == "plan" for u in peer.updates(sid))
    titles = [u.get("title", "") for u in peer.updates(sid) if u["sessionUpdate"] == "tool_call"]
    assert any(t.startswith("Create Plan: ") for t in titles)
    # a client that does not know cursor/create_plan: the plan becomes a local file, the turn ends normally
    peer.handlers["cursor/create_plan"] = method_not_found
    assert peer.prompt(sid, 'create other.txt with "y"')["result"]["stopReason"] == "end_turn"
    files = list((ws / ".cursor" / "plans").glob("*.plan.md"))
    assert len(files) == 1 and "other.txt" in files[0].read_text()
    assert peer.call("session/set_mode", {"sessionId": sid, "modeId": "yolo"})["error"]["data"] == {
        "details": "Invalid mode ID: yolo"
    }


def test_todos_are_sent_as_a_request_without_session_id(peer: Peer, ws: Path) -> None:
    peer.init()
    sid = peer.new_session(ws)
    peer.prompt(sid, "todo: write tests, fix bug, ship")
    (todo,) = [f for f in peer.frames if f.get("method") == "cursor/update_todos"]
    assert "id" in todo and "sessionId" not in todo["params"]
    assert [t["content"] for t in todo["params"]["todos"]] == ["write tests", "fix bug", "ship"]
    assert todo["params"]["todos"][0]["status"] == "in_progress"


# ---- cancel -------------------------------------------------------------------------------------------


def test_cancel_aborts_the_turn_and_keeps_the_session(peer: Peer, ws: Path) -> None:
    peer.init()
    sid = peer.new_session(ws)
    rid = peer.request(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "run `touch late.txt`"}]}
    )
    ask = peer.until(rid, stop_on="session/request_permission")
    peer.notify("session/cancel", {"sessionId": sid})
    reply = peer.until(rid)
    assert reply["result"] == {"stopReason": "cancelled"}
    peer.answer(ask, {"result": {"outcome": {"outcome": "cancelled"}}})  # the client's duty; late is fine
    assert not (ws / "late.txt").exists()
    # the session survives and remembers the cancelled turn
    peer.prompt(sid, "what did I ask before?")
    answer = text_of([u for u in peer.updates(sid) if u["sessionUpdate"] == "agent_message_chunk"][-30:])
    assert "run `touch late.txt`" in answer
    # cancel sent as a request (with an id) is not a method
    assert peer.call("session/cancel", {"sessionId": sid})["error"]["code"] == -32601


def test_cancel_mid_stream(sim: Sim, ws: Path) -> None:
    # 0.5 s between updates: the poem's first words ("River") come over 2 s after its first
    # thought, time for a loaded machine to send the cancel (0.05 s left 0.3-0.6 s)
    peer = Peer.start(sim, env={"CURSOR_AGENT_SIM_FAULT": "slow", "CURSOR_AGENT_SIM_DELAY": "0.5"})
    peer.init()
    sid = peer.new_session(ws)
    rid = peer.request(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "write me a poem"}]}
    )
    while True:
        frame = peer.next()
        assert frame is not None
        if (
            frame.get("method") == "session/update"
            and frame["params"]["update"]["sessionUpdate"] == "agent_thought_chunk"
        ):
            break
    peer.notify("session/cancel", {"sessionId": sid})
    assert peer.until(rid)["result"] == {"stopReason": "cancelled"}
    assert "River" not in text_of(peer.updates(sid))
    peer.close()


def test_cancel_unsupported_fault(sim: Sim, ws: Path) -> None:
    peer = Peer.start(sim, env={"CURSOR_AGENT_SIM_FAULT": "cancel-unsupported"})
    peer.init()
    sid = peer.new_session(ws)
    rid = peer.request(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "run `touch x.txt`"}]}
    )
    ask = peer.until(rid, stop_on="session/request_permission")
    peer.notify("session/cancel", {"sessionId": sid})
    error = peer.next()
    assert error is not None and error["id"] is None and error["error"]["code"] == -32601
    peer.answer(ask, allow_once(ask))
    assert peer.until(rid)["result"] == {"stopReason": "end_turn"}  # the turn went on
    assert (ws / "x.txt").exists()
    peer.close()


# ---- load, list, replay --------------------------------------------------------------------------------


def test_load_replays_history_in_a_new_process(sim: Sim, ws: Path) -> None:
    first = Peer.start(sim)
    first.init()
    sid = first.new_session(ws)
    never = first.new_session(ws)
    first.prompt(sid, "list the files")
    first.prompt(sid, "remember the code word BLUE")
    first.close()

    peer = Peer.start(sim)
    peer.init()
    listed = peer.call("session/list", {})["result"]["sessions"]
    assert [s["sessionId"] for s in listed] == [sid]  # never-prompted sessions are omitted
    assert listed[0]["cwd"] == str(ws) and listed[0]["title"] == "list the files"
    assert (
        peer.call("session/load", {"sessionId": never, "cwd": str(ws), "mcpServers": []})["error"]["code"]
        == -32602
    )
    reply = peer.call("session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": []})
    assert "sessionId" not in reply["result"] and reply["result"]["modes"]["currentModeId"] == "agent"
    replay = peer.updates(sid)
    kinds = [u["sessionUpdate"] for u in replay]
    assert kinds.count("user_message_chunk") == 2
    assert replay[0]["content"]["text"] == "list the files"
    # coalesced: one thought and one message run per stretch, not word by word
    assert kinds.count("agent_message_chunk") <= 4
    (call,) = [u for u in replay if u["sessionUpdate"] == "tool_call"]
    assert call["toolCallId"].startswith("replay-") and call["status"] == "completed"
    # the replay comes before the result, and the session continues with its history
    peer.prompt(sid, "what did I ask you to remember?")
    assert "BLUE" in text_of(peer.updates(sid)[len(replay) :])
    # unknown and print-mode ids are not found (separate stores)
    print_chat = sim.stream("hello").transcript.session_id
    for other in ("8ef40118-8378-436d-8ba8-2436b19cc877", print_chat):
        error = peer.call("session/load", {"sessionId": other, "cwd": str(ws), "mcpServers": []})["error"]
        assert error["code"] == -32602 and error["message"] == f'Session "{other}" not found'
    assert peer.validated == len(
        [f for f in peer.frames if not str(f.get("method", "")).startswith("cursor/")]
    )
    peer.close()


def test_load_not_found_fault(sim: Sim, ws: Path) -> None:
    first = Peer.start(sim)
    first.init()
    sid = first.new_session(ws)
    first.prompt(sid, "hi")
    first.close()
    peer = Peer.start(sim, env={"CURSOR_AGENT_SIM_FAULT": "load-not-found"})
    peer.init()
    error = peer.call("session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": []})["error"]
    assert error["code"] == -32602 and "not found" in error["message"]
    peer.close()


def test_models_and_config_options(peer: Peer, ws: Path) -> None:
    peer.init()
    sid = peer.new_session(ws)
    reply = peer.call(
        "session/set_config_option", {"sessionId": sid, "configId": "model", "value": "gpt-5[]"}
    )
    options = {o["id"]: o["currentValue"] for o in reply["result"]["configOptions"]}
    assert options == {"mode": "agent", "model": "gpt-5[]"}
    error = peer.call("session/set_config_option", {"sessionId": sid, "configId": "model", "value": "gpt-5"})[
        "error"
    ]
    assert error["code"] == -32602 and error["message"] == "Invalid model value"


# ---- faults --------------------------------------------------------------------------------------------


def test_crash_mid_turn(sim: Sim, ws: Path) -> None:
    peer = Peer.start(sim, "--force", env={"CURSOR_AGENT_SIM_FAULT": "crash"})
    peer.init()
    sid = peer.new_session(ws)
    rid = peer.request(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "run `echo hi`"}]}
    )
    frames = []
    while (frame := peer.next()) is not None:
        frames.append(frame)
    assert not [f for f in frames if f.get("id") == rid]  # no answer to the prompt
    assert any(u["sessionUpdate"] == "tool_call" for u in peer.updates(sid))
    assert peer.proc.wait(timeout=60) == 1
    assert peer.proc.stderr is not None and b"crash" in peer.proc.stderr.read()


def test_noise_on_stdout(sim: Sim, ws: Path) -> None:
    peer = Peer.start(sim, env={"CURSOR_AGENT_SIM_FAULT": "banner"})
    peer.init()
    sid = peer.new_session(ws)
    assert peer.prompt(sid, "What is 2 + 2?")["result"]["stopReason"] == "end_turn"
    assert len(peer.noise) == 3 and all(b"\x1b[" in line for line in peer.noise)
    peer.close()


def test_idle_process_exits_0_on_eof(peer: Peer) -> None:
    peer.init()
    assert peer.proc.stdin is not None
    peer.proc.stdin.close()
    assert peer.proc.wait(timeout=60) == 0


def test_a_subagent_task_then_cursor_task(peer: Peer, ws: Path) -> None:
    peer.init()
    sid = peer.new_session(ws)
    assert peer.prompt(sid, "use a subagent to count the files")["result"]["stopReason"] == "end_turn"
    (frames,) = _tool_calls(peer.updates(sid)).values()
    final = _final(frames)
    assert (final["kind"], final["status"], final["rawInput"]) == (
        "other",
        "completed",
        {"_toolName": "task"},
    )
    assert final["rawOutput"] == {"durationMs": 7, "isBackground": False}
    (task,) = [f for f in peer.frames if f.get("method") == "cursor/task"]
    assert "id" in task and "sessionId" not in task["params"]
    assert task["params"]["toolCallId"] == frames[0]["toolCallId"]
    assert task["params"]["prompt"] == "count the files" and task["params"]["subagentType"]
    # sent after the tool completed
    assert peer.frames.index(task) > max(
        i
        for i, f in enumerate(peer.frames)
        if f.get("method") == "session/update" and f["params"]["update"].get("status") == "completed"
    )


def test_during_a_turn_other_requests_are_answered_and_a_second_prompt_cancels_the_first(
    peer: Peer, ws: Path
) -> None:
    peer.init()
    sid = peer.new_session(ws)
    first = peer.request(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "run `touch a.txt`"}]}
    )
    ask = peer.until(first, stop_on="session/request_permission")
    # the turn waits for its permission; a list request is still answered
    assert peer.call("session/list", {})["result"] == {"sessions": []}
    second = peer.request(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "What is 2 + 3?"}]}
    )
    assert peer.until(first)["result"] == {"stopReason": "cancelled"}
    peer.answer(ask, {"result": {"outcome": {"outcome": "cancelled"}}})
    assert peer.until(second)["result"] == {"stopReason": "end_turn"}
    assert not (ws / "a.txt").exists()
    assert text_of(peer.updates(sid)).endswith("5")


def test_list_is_newest_first(peer: Peer, ws: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    peer.init()
    old, new = peer.new_session(ws), peer.new_session(other)
    peer.prompt(old, "hi")
    peer.prompt(new, "hello")
    sessions = peer.call("session/list", {})["result"]["sessions"]
    assert [(s["sessionId"], s["cwd"]) for s in sessions] == [(new, str(other)), (old, str(ws))]
    assert peer.call("session/list", {"cursor": "x"})["error"]["code"] == -32602
