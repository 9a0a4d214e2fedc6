"""``--mode`` and ``--allowed-tools``: real builds accept both. Under ``acp`` they are ignored
(ACP.md §1 [obs:RH 10.01]: the client uses ``session/set_mode``); in print mode ``--mode``
picks the turn's mode (ACP.md §12): ``plan`` is read-only and writes a plan instead of editing,
``ask`` makes no edits and runs no commands."""

from __future__ import annotations

from pathlib import Path

import pytest

from cursor_agent_api.protocol import EventType
from cursor_agent_api.sim.cli_args import parse_args
from cursor_agent_api.sim.context import ASK_MODE_REFUSAL

from .acp_peer import Peer
from .conftest import Sim

STREAM = ("-p", "--trust", "--output-format", "stream-json")


def test_the_flags_parse() -> None:
    opts = parse_args(["--mode", "plan", "--allowed-tools", "Shell(ls)", "acp"])
    assert opts.command == "acp" and opts.mode == "plan"
    assert parse_args(["--mode=ask", "-p", "hi"]).mode == "ask"
    assert parse_args(["--plan", "-p", "hi"]).mode == "plan"
    assert parse_args(["-p", "hi"]).mode == "agent"


@pytest.mark.parametrize("flags", [("--mode", "plan"), ("--allowed-tools", "Shell(ls)"), ("--plan",)])
def test_under_acp_they_are_accepted_and_ignored(sim: Sim, ws: Path, flags: tuple[str, ...]) -> None:
    peer = Peer.start(sim, *flags)
    try:
        peer.init()
        reply = peer.call("session/new", {"cwd": str(ws), "mcpServers": []})
        assert reply["result"]["modes"]["currentModeId"] == "agent", peer.stderr()
        done = peer.prompt(reply["result"]["sessionId"], "create made.txt with hello")
        assert done["result"]["stopReason"] == "end_turn"
        assert (ws / "made.txt").exists()  # agent mode: the edit ran
    finally:
        peer.close()


def _kinds(sim: Sim, *args: str) -> tuple[list[str], str]:
    run = sim.run(*STREAM, *args)
    assert run.returncode == 0, run.err
    t = run.transcript
    kinds = [tc.name for tc in t.tool_calls]
    return kinds, t.result_text or ""


def test_print_mode_plan_writes_a_plan_instead_of_editing(sim: Sim, ws: Path) -> None:
    kinds, text = _kinds(sim, "--mode", "plan", "create made.txt with hello")
    assert kinds == ["createPlanToolCall"] and not (ws / "made.txt").exists()
    assert "Switch to agent mode" in text
    kinds, _ = _kinds(sim, "--mode", "plan", "list the files")  # reading is fine in plan mode
    assert kinds == ["lsToolCall"]


def test_print_mode_ask_edits_nothing_and_runs_nothing(sim: Sim, ws: Path) -> None:
    run = sim.run(*STREAM, "--force", "--mode", "ask", "create made.txt with hello")
    assert run.returncode == 0, run.err
    assert not (ws / "made.txt").exists()
    shell = sim.run(*STREAM, "--force", "--mode", "ask", "run `touch ran.txt`")
    assert shell.returncode == 0, shell.err
    assert not (ws / "ran.txt").exists()
    assert "Ask mode" in shell.transcript.text
    completed = [e for e in shell.transcript.events if e.type is EventType.TOOL_CALL_COMPLETED]
    # docs/simulator.md: `rejected`, reason `Ask mode: no edits or command execution`
    assert completed[0].data["tool_call"]["shellToolCall"]["result"]["rejected"]["reason"] == ASK_MODE_REFUSAL


def test_print_mode_allowed_tools_is_accepted(sim: Sim) -> None:
    run = sim.run(*STREAM, "--allowed-tools", "Shell(ls)", "hi")
    assert run.returncode == 0 and run.transcript.success


def test_an_unknown_mode_is_a_usage_error(sim: Sim) -> None:
    run = sim.run(*STREAM, "--mode", "bogus", "hi")
    assert run.returncode == 1 and run.stdout == b""
    assert "--mode" in run.err and "bogus" in run.err
