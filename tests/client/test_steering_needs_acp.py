"""ACP's steering settings are refused in print mode, where they would do nothing (a
``can_use_tool`` callback was accepted and never called; ``images`` and ``session_mode``
were already refused): the caller learns it at once, not by a tool that ran unasked."""

from __future__ import annotations

from typing import Any

import pytest

from cursor_agent_api import AgentConfig

STEERING: dict[str, Any] = {
    "can_use_tool": lambda request: None,
    "on_question": lambda question: None,
    "on_plan": lambda plan: None,
    "permission_mode": "allow",
    "allowed_tools": ["Shell(ls)"],
    "denied_tools": ["Shell(rm)"],
    "permission_timeout": 30.0,
}


@pytest.mark.parametrize("name", sorted(STEERING))
def test_a_steering_setting_needs_the_acp_transport(name: str) -> None:
    with pytest.raises(ValueError, match=f"{name} needs transport='acp'"):
        AgentConfig(**{name: STEERING[name]})
    assert getattr(AgentConfig(transport="acp", **{name: STEERING[name]}), name) is not None


def test_the_defaults_are_fine_in_print_mode() -> None:
    config = AgentConfig()
    assert (config.transport, config.permission_mode, config.can_use_tool) == ("print", "deny", None)
