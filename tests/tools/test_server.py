"""The tool server's boundary: token (401), Host (421), body size (413); and the MCP results."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import httpx2
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client

from cursor_agent_api.tools.server import ToolServer

from .conftest import TOOLS

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "Cursor", "version": "1.0.0"}}}
ACCEPT = {"Accept": "application/json, text/event-stream"}


def _serve(check: Any) -> Any:
    async def main() -> Any:
        server = ToolServer(TOOLS, max_body_bytes=64 * 1024)
        await server.start()
        try:
            return await check(server)
        finally:
            await server.stop()

    return asyncio.run(main())


def test_refuses_without_the_token_a_wrong_host_and_a_big_body() -> None:
    async def check(server: ToolServer) -> list[int]:
        good = {"Authorization": f"Bearer {server.token}", **ACCEPT}
        async with httpx.AsyncClient(trust_env=False) as http:
            codes = [
                (await http.post(server.url, json=INIT, headers=ACCEPT)).status_code,
                (await http.post(server.url, json=INIT, headers={**good, "Authorization": "Bearer x"})
                 ).status_code,
                (await http.post(server.url, json=INIT, headers={**good, "Host": "evil.example:80"})
                 ).status_code,
                (await http.post(server.url, json=INIT,
                                 headers={**good, "Host": "evil.example"})).status_code,
                (await http.post(server.url, content=b" " * (65 * 1024),
                                 headers={**good, "Content-Type": "application/json"})).status_code,
                (await http.post(server.url, json=INIT, headers=good)).status_code,
            ]
        assert server.refused == 2
        return codes

    assert _serve(check) == [401, 401, 421, 421, 413, 200]


def test_tools_list_and_call_through_the_sdk_client() -> None:
    async def check(server: ToolServer) -> Any:
        headers = {"Authorization": f"Bearer {server.token}"}
        async with httpx2.AsyncClient(headers=headers, trust_env=False) as http, \
                Client(streamable_http_client(server.url, http_client=http), mode="legacy") as client:
            listed = await client.list_tools()
            ok = await client.call_tool("lookup_order", {"order_id": "B2"})
            raised = await client.call_tool("track_parcel", {"parcel": "P"})
            bad_args = await client.call_tool("lookup_order", {"order": 1})
            unknown = await client.call_tool("nope", {})
        return listed, ok, raised, bad_args, unknown

    listed, ok, raised, bad_args, unknown = _serve(check)
    tools = {t.name: t for t in listed.tools}
    assert tools["lookup_order"].description == "Look up an order by its id."
    assert tools["lookup_order"].input_schema["required"] == ["order_id"]
    assert not ok.is_error and isinstance(ok.content[0], types.TextContent)
    assert ok.content[0].text == '{"id": "B2", "status": "shipped", "items": 3}'
    assert raised.is_error and raised.content[0].text == "LookupError: carrier unreachable for P"
    assert "Traceback" not in raised.content[0].text
    assert bad_args.is_error and bad_args.content[0].text.startswith("invalid arguments: order_id")
    assert unknown.is_error


def test_starting_the_tool_server_leaves_the_application_s_logging_alone() -> None:
    """uvicorn configures its loggers when a server starts unless told not to: an application
    that routes uvicorn's logs to its own handlers (propagate, no handler of uvicorn's) would
    find uvicorn's default handlers put back, and its access log cut off, the first time a
    turn with tools starts."""
    import logging

    loggers = [logging.getLogger(n) for n in ("uvicorn", "uvicorn.error", "uvicorn.access")]
    saved = [(lg.handlers[:], lg.propagate) for lg in loggers]
    try:
        for lg in loggers:  # the application's choice: everything to the root's handlers
            lg.handlers[:] = []
            lg.propagate = True

        async def check(server: ToolServer) -> list[tuple[list[str], bool]]:
            return [([type(h).__name__ for h in lg.handlers
                      if type(h.formatter).__module__.startswith("uvicorn")], lg.propagate)
                    for lg in loggers]

        assert _serve(check) == [([], True)] * 3
    finally:
        for lg, (handlers, propagate) in zip(loggers, saved, strict=True):
            lg.handlers[:] = handlers
            lg.propagate = propagate
