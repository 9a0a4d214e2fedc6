"""Calls the agent refuses by itself (ask mode here) are not reported as successes: the
simulator, like Cursor, completes them with no output (ACP.md §6), and the result says they
were rejected, the agent's own way."""

from __future__ import annotations

from acp_sim_harness import Sim

from cursor_agent_api import CursorAgentClient
from cursor_agent_api.protocol.tools import ToolKind, ToolStatus


def test_ask_mode_refusals_are_rejected_and_calls_that_ran_succeed(sim: Sim) -> None:
    prompts = ("create y.txt with hi", "run `touch t.txt`")
    with CursorAgentClient(sim.config(session_mode="ask")) as client:
        refused = [call for p in prompts for call in client.query(p).tool_calls]
    assert not (sim.workspace / "y.txt").exists() and not (sim.workspace / "t.txt").exists()
    with CursorAgentClient(sim.config(force_approve=True)) as client:
        ran = [call for p in prompts for call in client.query(p).tool_calls]
    assert [(c.kind, c.status) for c in refused] == [
        (ToolKind.EDIT, ToolStatus.REJECTED), (ToolKind.SHELL, ToolStatus.REJECTED)]
    assert all("did not run" in (c.error_message or "") for c in refused)
    assert [(c.kind, c.status) for c in ran] == [
        (ToolKind.EDIT, ToolStatus.SUCCEEDED), (ToolKind.SHELL, ToolStatus.SUCCEEDED)]
    assert (sim.workspace / "y.txt").exists() and (sim.workspace / "t.txt").exists()
