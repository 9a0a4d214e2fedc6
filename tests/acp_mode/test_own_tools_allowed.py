"""The client's own tools (``tools=``) in ACP mode are allowed as print mode allows them (audit 6,
F5: they were rejected by default, and no stable rule could allow them, since their server's
name is random per client): an implicit ``Mcp(<the client's server>:*)`` allow rule, with the
precedence of ``allowed_tools`` — a deny rule still wins; neither the callback nor the mode is
asked. ``Allow(remember=True)`` for a per-client server is sent as ``allow_once``: "allow
always" wrote a global allowlist token for a server name no later client has."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_api import CursorAgentClient
from cursor_agent_api.config import AgentConfig
from cursor_agent_api.permissions import Allow, Deny
from cursor_agent_api.protocol import ToolKind, ToolStatus
from cursor_agent_api.runtime.acp_steering import Steering
from cursor_agent_api.tools import tool

OWN = "python-tools-0a1b2c3d"
_OPTIONS = [{"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
            {"optionId": "allow-always", "name": "Allow always", "kind": "allow_always"},
            {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"}]
_ONCE = {"outcome": {"outcome": "selected", "optionId": "allow-once"}}
_ALWAYS = {"outcome": {"outcome": "selected", "optionId": "allow-always"}}
_REJECTED = {"outcome": {"outcome": "selected", "optionId": "reject-once"}}


def _mcp(server: str, tool_name: str = "lookup_order") -> dict[str, Any]:
    """A permission request for an MCP call, as Cursor sends it (ACP.md §7)."""
    return {"sessionId": "s1", "options": _OPTIONS, "toolCall": {
        "toolCallId": "c1", "kind": "other", "title": f"{server}-{tool_name}: {tool_name}",
        "content": [{"type": "content", "content": {
            "type": "text", "text": f"Not in allowlist: Mcp({server}:{tool_name})"}}]}}


def _steering(**fields: Any) -> Steering:
    fields.setdefault("mcp_servers", {OWN: {"url": "http://127.0.0.1:9/mcp"},
                                      "github": {"url": "http://127.0.0.1:9/gh"}})
    return Steering(AgentConfig(transport="acp", **fields), session_id="s1")


@pytest.mark.parametrize("fields", [{}, {"permission_mode": "read-only"},
                                    {"can_use_tool": lambda request: Deny("asked")},
                                    {"allowed_tools": ["Shell(ls)"]}])
def test_the_clients_own_tools_are_allowed_without_asking(fields: dict[str, Any]) -> None:
    assert asyncio.run(_steering(**fields).permission(0, _mcp(OWN))) == _ONCE


@pytest.mark.parametrize("rule", ["Mcp(*:lookup_order)", f"Mcp({OWN}:*)", "Mcp(*:*)"])
def test_a_deny_rule_still_wins(rule: str) -> None:
    steering = _steering(denied_tools=[rule], permission_mode="allow")
    assert asyncio.run(steering.permission(0, _mcp(OWN))) == _REJECTED


@pytest.mark.parametrize("server", ["github", "python-tools-ffffffff"])  # (another client's)
def test_other_servers_are_decided_as_before(server: str) -> None:
    assert asyncio.run(_steering().permission(0, _mcp(server))) == _REJECTED
    remembered = _steering(can_use_tool=lambda request: Allow(remember=True))
    expected = _ALWAYS if server == "github" else _ONCE  # a per-client name: never remembered
    assert asyncio.run(remembered.permission(0, _mcp(server))) == expected


def test_remember_for_a_per_client_server_is_sent_as_allow_once() -> None:
    steering = _steering(mcp_servers={}, can_use_tool=lambda request: Allow(remember=True))
    assert asyncio.run(steering.permission(0, _mcp(OWN))) == _ONCE


@tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look up an order by its id."""
    return {"id": order_id, "status": "shipped"}


def test_a_client_with_tools_runs_them_on_the_simulator(
        make_cursor_sim_config: Callable[..., AgentConfig], cursor_sim_config_dir: Path) -> None:
    asked: list[Any] = []
    config = make_cursor_sim_config(transport="acp", trust=True, kill_grace=1.0, timeout=120.0,
                                    can_use_tool=lambda request: asked.append(request) or Deny())
    with CursorAgentClient(config, tools=[lookup_order]) as client:
        result = client.query('Use lookup_order {"order_id": "A1"}')
        denied = client.query('Use lookup_order {"order_id": "A2"}',
                              denied_tools=["Mcp(*:lookup_order)"])
    [call] = [c for c in result.tool_calls if c.kind is ToolKind.MCP]
    assert call.status is ToolStatus.SUCCEEDED and call.local is not None, result.tool_calls
    assert call.local.value == {"id": "A1", "status": "shipped"} and not asked
    [refused] = [c for c in denied.tool_calls if c.kind is ToolKind.MCP]
    assert refused.status is ToolStatus.REJECTED and not asked
    allowlist = cursor_sim_config_dir / "cli-config.json"
    assert not allowlist.exists() or "python-tools-" not in allowlist.read_text()


@pytest.mark.parametrize("where", ["request", "earlier frame"])
def test_only_the_title_says_whose_call_it_is(where: str) -> None:
    """Which server an MCP call belongs to comes from its titles (the permission request's
    ``"<server>-<tool>: <tool>"``), never from ``rawInput`` (``{}`` for MCP calls in every
    build seen): a ``providerIdentifier`` there made another server's call look like the
    client's own, allowed without asking (review 42), and could sidestep a deny rule."""
    steering = _steering()
    spoof = {"providerIdentifier": OWN, "toolName": "x"}
    params = _mcp("github", "x")
    if where == "request":
        params["toolCall"]["rawInput"] = spoof
    else:
        steering.mapper.update({"sessionUpdate": "tool_call", "toolCallId": "c1", "kind": "other",
                                "title": "MCP: x", "rawInput": spoof})
    assert steering.request_of(params).mcp_server == "github"
    assert asyncio.run(steering.permission(0, params)) == _REJECTED
    denied = _steering(denied_tools=["Mcp(github:*)"], permission_mode="allow")
    assert asyncio.run(denied.permission(0, params)) == _REJECTED
