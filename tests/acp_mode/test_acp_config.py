"""The ACP settings of AgentConfig are checked where they are written."""

from __future__ import annotations

import pytest

from cursor_agent_api import AgentConfig
from cursor_agent_api.permissions import Allow
from cursor_agent_api.runtime.acp_transport import acp_argv


@pytest.mark.parametrize(("fields", "message"), [
    ({"transport": "websocket"}, "transport must be one of print, acp or a Transport"),
    ({"transport": "acp", "permission_mode": "maybe"}, "permission_mode must be"),
    ({"transport": "acp", "permission_mode": "ask"}, "'ask' needs a can_use_tool callback"),
    ({"transport": "acp", "allowed_tools": ["rm"]}, "allowed_tools: 'rm' is not a permission rule"),
    ({"transport": "acp", "denied_tools": ["Shell"]}, "denied_tools: 'Shell' is not a permission rule"),
    ({"images": ["a.png"]}, "images need transport='acp'"),
    ({"transport": "acp", "can_use_tool": "yes"}, "can_use_tool must be a function"),
    ({"transport": "acp", "permission_timeout": -1}, "permission_timeout must be"),
])
def test_bad_acp_settings_fail_at_once(fields: dict[str, object], message: str) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        AgentConfig(**fields)  # type: ignore[arg-type]


def test_good_acp_settings() -> None:
    cfg = AgentConfig(transport="acp", permission_mode="ask", can_use_tool=lambda r: Allow(),
                      allowed_tools=[" Shell(ls) "], permission_timeout=900)
    assert cfg.allowed_tools == ["Shell(ls)"] and cfg.permission_timeout == 900.0
    assert cfg == cfg.with_overrides(can_use_tool=lambda r: Allow(remember=True))  # not compared


def test_the_api_key_never_reaches_argv() -> None:
    argv = acp_argv(AgentConfig(transport="acp", api_key="sk-secret", model="gpt-5", trust=True),
                    binary="agent")
    assert argv == ["agent", "--trust", "--model=gpt-5", "acp"]
    assert not any("sk-secret" in a for a in argv)
