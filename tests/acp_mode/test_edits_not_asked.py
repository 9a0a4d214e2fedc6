"""What docs/acp.md says of edits (audit 6, F3): current builds — and the simulator by default —
ask no permission before an edit or a delete, so ``permission_mode="read-only"`` and a
``Write(**)`` deny rule do not stop one; ``session_mode="plan"`` does. With a build that asks
(the simulator's ``CURSOR_AGENT_SIM_ACP_ASK_EDITS=1``) the rules answer edits too."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from cursor_agent_api import CursorAgentClient
from cursor_agent_api.config import AgentConfig
from cursor_agent_api.protocol import EventType

PROMPT = 'create new.txt with "x"; delete keep.txt'


def _turn(make_config: Callable[..., AgentConfig], workspace: Path, **fields: object) -> list[str]:
    (workspace / "keep.txt").write_text("important")
    config = make_config(transport="acp", trust=True, kill_grace=1.0, timeout=120.0,
                         permission_mode="read-only", denied_tools=["Write(**)"], **fields)
    with CursorAgentClient(config) as client:
        result = client.query(PROMPT)
    assert result.success, result.error
    asked = [e for e in result.events if e.type is EventType.INTERACTION_QUERY]
    if not fields:
        assert not asked, "the agent asked nothing"
    return sorted(p.name for p in workspace.iterdir() if p.name != ".cursor")


def test_read_only_and_a_write_deny_rule_do_not_stop_edits(
        make_cursor_sim_config: Callable[..., AgentConfig], cursor_sim_workspace: Path) -> None:
    assert _turn(make_cursor_sim_config, cursor_sim_workspace) == ["new.txt"]  # keep.txt gone


def test_plan_mode_stops_edits(make_cursor_sim_config: Callable[..., AgentConfig],
                               cursor_sim_workspace: Path) -> None:
    assert _turn(make_cursor_sim_config, cursor_sim_workspace, session_mode="plan") == ["keep.txt"]


def test_a_build_that_asks_before_edits_has_them_refused(
        make_cursor_sim_config: Callable[..., AgentConfig], cursor_sim_workspace: Path) -> None:
    files = _turn(make_cursor_sim_config, cursor_sim_workspace,
                  env={"CURSOR_AGENT_SIM_ACP_ASK_EDITS": "1"})
    assert files == ["keep.txt"]
