"""``cursor-agent-sim acp``'s build variants (ACP.md §1, §3, §5, §9, §13): lingering after the
end of stdin, Cursor's notification form, a live prompt echo, a build without ``session/list``
and one that asks once more after a cancel."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cursor_agent_api.sim import acp as acp_module
from cursor_agent_api.sim.acp import Server
from cursor_agent_api.sim.cli_args import parse_args
from cursor_agent_api.sim.jsonrpc import Connection, Message
from cursor_agent_api.sim.settings import LINGER_S, Fault, SimSettings
from cursor_agent_api.sim.store import ChatStore

from .acp_peer import Peer, allow_once, reject_once
from .conftest import Sim


def _eof_after(tmp_path: Path, ws: Path, settings: SimSettings, *, prompt: bool,
               monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Serve a session (and a prompt turn on it), then the end of stdin: the lingers asked."""
    lingered: list[float] = []
    monkeypatch.setattr(acp_module, "linger", lingered.append)
    out = os.open(os.devnull, os.O_WRONLY)
    try:
        conn = Connection(in_fd=None, out_fd=out)
        server = Server(parse_args(["acp"]), {"CURSOR_API_KEY": "k"}, ChatStore(tmp_path / "cfg"),
                        settings, conn)
        server.handle(Message("request", 0, "initialize", {"protocolVersion": 1}))
        sid = acp_module._session_new(server, {"cwd": str(ws), "mcpServers": []})["sessionId"]
        if prompt:
            server.deferred.append(Message("request", 1, "session/prompt", {
                "sessionId": sid, "prompt": [{"type": "text", "text": "What is 2 + 2?"}]}))
        conn._queue.put(None)  # the end of stdin
        assert server.serve() == 0
    finally:
        os.close(out)
    return lingered


def test_after_a_turn_the_end_of_stdin_lingers_by_default(
        tmp_path: Path, ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real builds did not exit within 10 s of EOF after a turn (ACP.md §1, 10 of 10)."""
    assert _eof_after(tmp_path, ws, SimSettings(), prompt=True, monkeypatch=monkeypatch) == [LINGER_S]


def test_idle_or_with_eof_exit_the_end_of_stdin_ends_at_once(
        tmp_path: Path, ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _eof_after(tmp_path, ws, SimSettings(), prompt=False, monkeypatch=monkeypatch) == []
    assert _eof_after(tmp_path, ws, SimSettings(acp_eof="exit"), prompt=True,
                      monkeypatch=monkeypatch) == []


def test_eof_exit_ends_the_process_after_a_turn(sim: Sim, ws: Path) -> None:
    peer = Peer.start(sim, env={"CURSOR_AGENT_SIM_ACP_EOF": "exit"})
    peer.init()
    sid = peer.new_session(ws)
    assert peer.prompt(sid, "What is 2 + 2?")["result"] == {"stopReason": "end_turn"}
    assert peer.proc.stdin is not None
    peer.proc.stdin.close()
    assert peer.proc.wait(timeout=60) == 0


@pytest.mark.parametrize("form", ["request", "notification"])
def test_todos_and_tasks_in_either_form(sim: Sim, ws: Path, form: str) -> None:
    """``request`` (the wire's: an id, no session id) or ``notification`` (Cursor's docs)."""
    peer = Peer.start(sim, env={"CURSOR_AGENT_SIM_ACP_CURSOR_FORM": form})
    peer.init()
    sid = peer.new_session(ws)
    for prompt in ("make a todo list: write the tests", "use a subagent to count the files"):
        assert peer.prompt(sid, prompt)["result"] == {"stopReason": "end_turn"}
    tells = [f for f in peer.frames if f.get("method", "").startswith("cursor/")]
    assert [f["method"] for f in tells] == ["cursor/update_todos", "cursor/task"]
    assert [("id" in f) for f in tells] == [form == "request"] * 2
    assert not [f for f in tells if "sessionId" in f["params"]]
    peer.close()


def test_user_echo_sends_the_prompt_as_a_live_user_message_chunk(sim: Sim, ws: Path) -> None:
    peer = Peer.start(sim, env={"CURSOR_AGENT_SIM_ACP_USER_ECHO": "1"})
    peer.init()
    sid = peer.new_session(ws)
    assert peer.prompt(sid, "What is 2 + 2?")["result"] == {"stopReason": "end_turn"}
    first = peer.updates(sid)[1]  # (after available_commands_update)
    assert first == {"sessionUpdate": "user_message_chunk",
                     "content": {"type": "text", "text": "What is 2 + 2?"}}
    peer.close()


def test_list_unsupported_is_the_build_without_session_list(sim: Sim) -> None:
    """03.25/03.30: no ``sessionCapabilities``, and ``session/list`` answers ``-32601``."""
    peer = Peer.start(sim, env={"CURSOR_AGENT_SIM_FAULT": "list-unsupported"})
    assert "sessionCapabilities" not in peer.init()["agentCapabilities"]
    assert peer.call("session/list", {})["error"]["code"] == -32601
    peer.close()
    default = Peer.start(sim)
    assert default.init()["agentCapabilities"]["sessionCapabilities"] == {"list": {}}
    default.close()


@pytest.mark.parametrize("answer", ["allow", "reject"])
def test_ask_after_cancel_asks_once_more_before_answering_cancelled(
        sim: Sim, ws: Path, answer: str) -> None:
    """After ``session/cancel`` the build asks about ``touch after-cancel.txt``, waits for
    the answer, runs the call only if allowed, then answers the prompt ``cancelled``."""
    peer = Peer.start(sim, env={"CURSOR_AGENT_SIM_FAULT": "ask-after-cancel"})
    peer.init()
    sid = peer.new_session(ws)
    prompt = peer.request("session/prompt", {
        "sessionId": sid, "prompt": [{"type": "text", "text": "run `touch a.txt`"}]})
    first = peer.until(prompt, stop_on="session/request_permission")
    peer.notify("session/cancel", {"sessionId": sid})
    again = peer.until(prompt, stop_on="session/request_permission")
    assert again["params"]["toolCall"]["title"] == "`touch after-cancel.txt`"
    assert not [f for f in peer.frames if f.get("id") == prompt and "result" in f]  # still waiting
    peer.answer(first, reject_once(first))  # (a late answer to the first: ignored)
    peer.answer(again, (allow_once if answer == "allow" else reject_once)(again))
    assert peer.until(prompt)["result"] == {"stopReason": "cancelled"}
    assert (ws / "after-cancel.txt").exists() is (answer == "allow")
    assert not (ws / "a.txt").exists()
    peer.close()


def test_the_new_faults_are_acp_only() -> None:
    for fault in (Fault.LIST_UNSUPPORTED, Fault.ASK_AFTER_CANCEL):
        assert SimSettings(frozenset({fault})).refusal("print") is not None
        assert SimSettings(frozenset({fault})).refusal("acp") is None


@pytest.mark.parametrize("name", ["CURSOR_AGENT_SIM_ACP_EOF", "CURSOR_AGENT_SIM_ACP_CURSOR_FORM"])
def test_a_bad_variant_value_is_refused(sim: Sim, name: str) -> None:
    run = sim.run("acp", env={name: "sometimes"})
    assert run.returncode == 1 and f"{name}: 'sometimes' is not one of" in run.err
