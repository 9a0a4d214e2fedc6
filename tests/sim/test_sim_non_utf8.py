"""Bytes that are not UTF-8 (a file name, the prompt, the workspace path) are shown as the real
CLI, a Node program, shows them: U+FFFD for each undecodable byte, on stdout, on stderr and in
the chat store. The simulator used to die mid-turn (orjson refuses Python's lone surrogates)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .conftest import Sim

STREAM = ("-p", "--trust", "--output-format", "stream-json")
CAFE = os.fsdecode(b"caf\xe9")  # what Python makes of the bytes: 'caf\udce9'
SHOWN = "caf\ufffd"


def _events(stdout: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.decode("utf-8").splitlines()]  # strict UTF-8


def _ok(run_stdout: bytes, returncode: int, err: str) -> list[dict[str, Any]]:
    assert returncode == 0, err
    events = _events(run_stdout)
    assert events[-1]["type"] == "result" and events[-1]["subtype"] == "success"
    return events


def test_a_file_name_that_is_not_utf8_is_listed_with_a_replacement_character(sim: Sim, ws: Path) -> None:
    (ws / f"{CAFE}.txt").write_text("# TODO: accents\n")
    for prompt in ("list the files", "glob *.txt", "grep TODO"):
        run = sim.run(*STREAM, prompt)
        events = _ok(run.stdout, run.returncode, run.err)
        completed = [e for e in events if e["type"] == "tool_call" and e["subtype"] == "completed"]
        assert completed, prompt
        assert f"{SHOWN}.txt" in json.dumps(completed, ensure_ascii=False), prompt


def test_a_listing_in_text_format(sim: Sim, ws: Path) -> None:
    (ws / f"{CAFE}.txt").write_text("")
    run = sim.run("-p", "--trust", "glob *.txt")
    assert run.returncode == 0, run.err
    assert f"{SHOWN}.txt" in run.stdout.decode("utf-8")


def test_a_prompt_that_is_not_utf8_is_answered_and_saved(sim: Sim) -> None:
    run = sim.run(*STREAM, f"say {CAFE}")
    events = _ok(run.stdout, run.returncode, run.err)
    assert events[-1]["result"] == SHOWN
    user = next(e for e in events if e["type"] == "user")
    assert user["message"]["content"][0]["text"] == f"say {SHOWN}"
    chat_id = events[-1]["session_id"]
    again = sim.run(*STREAM, "--resume", chat_id, "what did I ask before?")
    assert f'you asked: "say {SHOWN}"' in _ok(again.stdout, again.returncode, again.err)[-1]["result"]


def test_a_workspace_path_that_is_not_utf8(sim: Sim, tmp_path: Path) -> None:
    workspace = tmp_path / f"ws-{CAFE}"
    workspace.mkdir()
    (workspace / "a.txt").write_text("x\n")
    untrusted = sim.run("-p", "--workspace", str(workspace), "--output-format", "stream-json", "hi")
    assert untrusted.returncode == 1 and "Workspace Trust Required" in untrusted.err
    assert "Traceback" not in untrusted.err and f"ws-{SHOWN}" in untrusted.err
    run = sim.run(*STREAM, "--workspace", str(workspace), "list the files")
    events = _ok(run.stdout, run.returncode, run.err)
    assert events[0]["cwd"].endswith(f"ws-{SHOWN}")
    assert "a.txt" in json.dumps(events)
    trusted = json.loads((sim.config_dir / "trusted-workspaces.json").read_bytes())  # strict
    assert any(w.endswith(f"ws-{SHOWN}") for w in trusted["workspaces"])
    later = sim.run("-p", "--workspace", str(workspace), "--output-format", "stream-json", "hi")
    _ok(later.stdout, later.returncode, later.err)  # the trust was recorded


def test_a_working_directory_that_is_not_utf8(tmp_path: Path) -> None:
    workspace = tmp_path / f"ws-{CAFE}"
    workspace.mkdir()
    sim = Sim(workspace, tmp_path / "config")
    try:
        run = sim.run(*STREAM, "hi")
        assert _ok(run.stdout, run.returncode, run.err)[0]["cwd"].endswith(f"ws-{SHOWN}")
    finally:
        sim.close()


def test_an_acp_frame_with_a_name_that_is_not_utf8() -> None:
    """The ACP side writes through the same pipe code: a session/update naming such a file
    is written, not a crash of the server."""
    from cursor_agent_api.sim.jsonrpc import Connection

    r, w = os.pipe()
    try:
        Connection(in_fd=None, out_fd=w).notify("session/update", {"title": f"Read {CAFE}.txt"})
        os.close(w)
        w = -1
        frame = json.loads(os.read(r, 65536).decode("utf-8"))
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)
    assert frame["params"]["title"] == f"Read {SHOWN}.txt"


def test_an_acp_turn_listing_a_name_that_is_not_utf8_is_stored_and_ends(sim: Sim, ws: Path) -> None:
    """The ACP session store writes the turn's updates (to load the session later) as the
    pipe does: U+FFFD, not a crash of the turn."""
    from .acp_peer import Peer

    (ws / f"{CAFE}.txt").write_text("x\n")
    peer = Peer.start(sim)
    try:
        peer.init()
        sid = peer.new_session(ws)
        rid = peer.request(
            "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "list the files"}]}
        )
        assert peer.until(rid).get("result") == {"stopReason": "end_turn"}, peer.stderr()
        assert f"{SHOWN}.txt" in json.dumps(peer.updates(sid), ensure_ascii=False)
    finally:
        peer.close()
