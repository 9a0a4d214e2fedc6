"""One call of a ``@tool`` function: whatever the function does, the call ends as a result (an
error result for what it raised), never as a protocol error, and a real cancel still cancels."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from cursor_agent_api.tools import Tool, tool
from cursor_agent_api.tools.server import ToolServer


@tool
async def fetch_price(sku: str) -> str:
    """A price from a shared request that another caller cancelled."""
    shared = asyncio.get_running_loop().create_task(asyncio.sleep(60))
    asyncio.get_running_loop().call_soon(shared.cancel)
    return str(await shared)  # raises asyncio.CancelledError, though nothing cancelled this call


@tool
def sync_cancelled(sku: str) -> str:
    """A sync function that raises asyncio.CancelledError."""
    raise asyncio.CancelledError("stale")


@tool
def echo(text: str) -> str:
    """Echo."""
    return text


@pytest.mark.parametrize("fn", [fetch_price, sync_cancelled])
def test_cancelled_error_raised_by_a_tool_is_an_error_result(fn: Tool) -> None:
    record = asyncio.run(fn.invoke({"sku": "A"}))
    assert record.is_error and record.error is not None and record.error.startswith("CancelledError")
    assert record.texts == [record.error]


def test_a_real_cancel_still_cancels_the_call() -> None:
    seen: list[str] = []

    @tool
    async def slow() -> str:
        """Slow."""
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        return "done"

    async def main() -> None:
        call = asyncio.ensure_future(slow.invoke({}))
        await asyncio.sleep(0.01)  # let it start (not a timing: any order passes the cancel on)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        await asyncio.sleep(0)  # the tool's own task takes its cancel

    asyncio.run(main())
    assert seen == ["cancelled"]


def test_the_session_survives_a_tool_that_raises_cancelled_error() -> None:
    async def main() -> Any:
        server = ToolServer([fetch_price, echo])
        await server.start()
        try:
            headers = {"Authorization": f"Bearer {server.token}"}
            async with httpx2.AsyncClient(headers=headers, trust_env=False) as http, \
                    Client(streamable_http_client(server.url, http_client=http), mode="legacy") as client:
                first = await client.call_tool("fetch_price", {"sku": "A"})
                second = await client.call_tool("echo", {"text": "after"})
            return first, second
        finally:
            await server.stop()

    first, second = asyncio.run(main())
    assert first.is_error and first.content[0].text.startswith("CancelledError")
    assert not second.is_error and second.content[0].text == "after"


def test_a_sync_decorator_around_an_async_function() -> None:
    import functools

    def logged(fn: Any) -> Any:  # a plain decorator: the wrapper is sync, it returns a coroutine
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **kwargs)
        return wrapper

    @tool
    @logged
    async def lookup(order_id: str) -> str:
        """Look up an order."""
        await asyncio.sleep(0)
        return f"{order_id} shipped"

    record = asyncio.run(lookup.invoke({"order_id": "A1"}))
    assert record.ok, record.error
    assert (record.value, record.texts) == ("A1 shipped", ["A1 shipped"])


def test_stop_with_a_stuck_sync_call_in_flight(caplog: pytest.LogCaptureFixture) -> None:
    """The agent died during a sync call that never returns; the server then stops at once (the
    call is cancelled, its thread abandoned), without uvicorn's grace period and its ERROR
    traceback for a task it had to cancel."""
    import logging
    import threading

    import httpx

    entered, release = threading.Event(), threading.Event()

    @tool
    def stuck() -> str:
        """A network call that never returns."""
        entered.set()
        release.wait(120)
        return "late"

    def rpc(method: str, id_: int | None = None, **params: Any) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        return message if id_ is None else {**message, "id": id_}

    async def main() -> tuple[bool, int]:
        server = ToolServer([stuck])
        await server.start()
        # uvicorn's loggers do not propagate to the root (its dictConfig, on start, says so)
        logging.getLogger("uvicorn").addHandler(caplog.handler)
        headers = {"Authorization": f"Bearer {server.token}", "Accept": "application/json, text/event-stream"}
        try:
            async with httpx.AsyncClient(trust_env=False, headers=headers) as http:  # the agent
                init = await http.post(server.url, json=rpc("initialize", 0, protocolVersion="2025-06-18",
                                                             capabilities={},
                                                             clientInfo={"name": "Cursor", "version": "1"}))
                headers["Mcp-Session-Id"] = init.headers["mcp-session-id"]
                await http.post(server.url, json=rpc("notifications/initialized"), headers=headers)
                request = rpc("tools/call", 1, name="stuck", arguments={})
                call = asyncio.ensure_future(http.post(server.url, json=request, headers=headers))
                assert await asyncio.get_running_loop().run_in_executor(None, entered.wait, 60)
                call.cancel()  # the agent is gone: its connection closes, nothing more is sent
            uvicorn_server = server._server
            assert uvicorn_server is not None
            await server.stop()
            return uvicorn_server.force_exit, server.calls
        finally:
            release.set()
            logging.getLogger("uvicorn").removeHandler(caplog.handler)

    with caplog.at_level(logging.INFO):
        forced, calls = asyncio.run(main())
    assert not forced and calls == 1
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


def test_non_finite_numbers_are_sent_as_json_null() -> None:
    import json
    import math

    @tool
    def stats() -> dict[str, Any]:
        """Statistics with gaps (pandas gives NaN)."""
        return {"mean": math.nan, "max": math.inf, "rows": [1.5, -math.inf], "flag": True}

    record = asyncio.run(stats.invoke({}))
    assert record.ok
    (text,) = record.texts
    assert json.loads(text, parse_constant=lambda c: pytest.fail(f"not JSON: {c}")) == {
        "mean": None, "max": None, "rows": [1.5, None], "flag": True}
    json.dumps(record.to_dict(), allow_nan=False)  # the record's JSON is JSON too
    assert record.to_dict()["value"]["mean"] is None


STUCK_FOREVER = '''
import asyncio, threading
import httpx
from cursor_agent_api.tools import tool
from cursor_agent_api.tools.server import ToolServer

entered = threading.Event()

@tool
def stuck() -> str:
    """A network call that never returns."""
    entered.set()
    threading.Event().wait()
    return "never"

def rpc(method, id_=None, **params):
    message = {"jsonrpc": "2.0", "method": method, "params": params}
    return message if id_ is None else {**message, "id": id_}

async def main():
    server = ToolServer([stuck])
    await server.start()
    headers = {"Authorization": f"Bearer {server.token}",
               "Accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient(trust_env=False, headers=headers) as http:
        init = await http.post(server.url, json=rpc("initialize", 0, protocolVersion="2025-06-18",
                               capabilities={}, clientInfo={"name": "Cursor", "version": "1"}))
        headers["Mcp-Session-Id"] = init.headers["mcp-session-id"]
        await http.post(server.url, json=rpc("notifications/initialized"), headers=headers)
        request = rpc("tools/call", 1, name="stuck", arguments={})
        call = asyncio.ensure_future(http.post(server.url, json=request, headers=headers))
        assert await asyncio.get_running_loop().run_in_executor(None, entered.wait, 60)
        call.cancel()
    await server.stop()  # what the client's close() does
    print("stopped", server.calls, flush=True)

asyncio.run(main())
'''


def test_a_stuck_sync_call_does_not_keep_the_process_from_exiting(tmp_path: Any) -> None:
    """After the server stopped, a sync call that never returns is abandoned for good: its
    thread is a daemon, so the program exits (the interpreter joins no such thread)."""
    import subprocess
    import sys

    script = tmp_path / "stuck.py"
    script.write_text(STUCK_FOREVER)
    try:  # the bound is a hang guard: a kept thread would block the exit for ever
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              timeout=60, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail("the program did not exit: the stuck call's thread was joined at exit")
    assert (done.returncode, done.stdout) == (0, "stopped 1\n"), done.stderr
