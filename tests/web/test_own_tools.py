"""A call of the host's own ``@tool`` function (its MCP server is ``python-tools-<hex>``) is shown
as "Your tool"; another MCP server's call keeps the "MCP" label."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from playwright.sync_api import expect
from server_helpers import new_chat

from cursor_agent_api.sim import wire

SID = "8ef40118-8378-436d-8ba8-2436b19cc877"
MC = "m-0-abcd"


def _script(path: Path, ws: str) -> Path:
    t = 1789644625717
    lines: list[dict[str, Any]] = [wire.system_init(SID, ws, "Auto"), wire.user(SID, "tools")]
    calls = [("c-own", wire.mcp_args("python-tools-0a1b2c3d", "lookup_order", {"order_id": "A1"}, "c-own"),
              wire.mcp_success(['{"status": "shipped"}'])),
             ("c-other", wire.mcp_args("faz-ai", "get_board", {}, "c-other"), wire.mcp_success(["board"]))]
    for i, (cid, args, outcome) in enumerate(calls):
        lines.append(wire.tool_call_started(SID, cid, "mcpToolCall", args, model_call_id=MC,
                                            started_at_ms=t + i, timestamp_ms=t + i))
        lines.append(wire.tool_call_completed(SID, cid, "mcpToolCall", outcome, args=args, model_call_id=MC,
                                              started_at_ms=t + i, completed_at_ms=t + 5 + i,
                                              timestamp_ms=t + 5 + i))
    lines.append(wire.assistant_final(SID, "Shipped."))
    lines.append(wire.result_success(SID, "req", "Shipped.", 42, wire.usage(10, 5)))
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path


def test_own_tools_are_labelled(make_server: Any, browser: Any, tmp_path: Path, workspace: Path) -> None:
    script = _script(tmp_path / "own.ndjson", str(workspace / "project"))
    server = make_server(sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(script)})
    with server.client() as c:
        chat = new_chat(c)
    page = browser.new_page()
    page.goto(f"{server.url}/?token={server.token}#/chat/{chat['id']}")
    expect(page.locator("#conn")).to_have_text("Live")
    box = page.get_by_label("Prompt")
    box.fill("tools")
    box.press("Enter")
    expect(page.locator("#result-bar")).to_contain_text("Done")
    cards = page.locator(".card.tool-mcp")
    expect(cards).to_have_count(2)
    expect(cards.first.locator(".card-kind")).to_have_text("Your tool")
    expect(cards.first).to_contain_text("lookup_order")
    expect(cards.nth(1).locator(".card-kind")).to_have_text("MCP")
