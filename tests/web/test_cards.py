"""Cards for the tool kinds the simulator's own agent does not make (MCP, web search, write,
delete, todos, a kind this version does not know), plus a thinking→text→tool sequence with
partial output and an agent error: replayed from a script built with sim.wire, through
the real server, into the browser.
"""

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
    lines: list[dict[str, Any]] = [
        wire.system_init(SID, ws, "Auto"),
        wire.user(SID, "show me every card"),
        wire.thinking_delta(SID, "Planning the ", t),
        wire.thinking_delta(SID, "cards.", t + 1),
        wire.thinking_completed(SID, t + 2),
        wire.assistant_delta(SID, "Let me ", t + 3),
        wire.assistant_delta(SID, "**work**.", t + 4),
        wire.assistant_segment(SID, "Let me **work**.", MC, t + 5),
    ]
    calls = [
        ("c-mcp", "mcpToolCall", wire.mcp_args("faz-ai", "get_board", {"id": 1}, "c-mcp"),
         wire.mcp_success(["board: <b>3 items</b>"])),
        ("c-web", "webSearchToolCall", wire.web_search_args("python asyncio", "c-web"),
         wire.web_search_success([{"title": "asyncio docs", "chunk": "x",
                                   "url": "https://docs.python.org/3/library/asyncio.html"}])),
        ("c-write", "writeToolCall", wire.write_args(f"{ws}/hello.py", "print('hi')\n", "c-write"),
         wire.write_success(f"{ws}/hello.py", "print('hi')\n")),
        ("c-del", "deleteToolCall", wire.delete_args(f"{ws}/old.txt", "c-del"),
         wire.delete_success(f"{ws}/old.txt", "bye")),
        ("c-todo", "updateTodosToolCall",
         wire.todos_args([wire.todo_item("1", "Write the page", "TODO_STATUS_COMPLETED", t),
                          wire.todo_item("2", "Test it", "TODO_STATUS_IN_PROGRESS", t)]),
         wire.todos_success([wire.todo_item("1", "Write the page", "TODO_STATUS_COMPLETED", t),
                             wire.todo_item("2", "Test it", "TODO_STATUS_IN_PROGRESS", t)])),
        ("c-new", "readLintsToolCall", {"paths": ["a.py"]},
         {"success": {"output": "no <lint> problems"}}),
    ]
    for i, (cid, key, args, outcome) in enumerate(calls):
        lines.append(wire.tool_call_started(SID, cid, key, args, model_call_id=MC,
                                            started_at_ms=t + 10 + i, timestamp_ms=t + 10 + i))
        lines.append(wire.tool_call_completed(SID, cid, key, outcome, args=args, model_call_id=MC,
                                              started_at_ms=t + 10 + i,
                                              completed_at_ms=t + 20 + i,
                                              timestamp_ms=t + 20 + i))
    lines.append({"type": "error", "message": "the tool server hiccuped"})
    lines.append(wire.assistant_final(SID, "All done: `6` cards."))
    lines.append(wire.result_success(SID, "req", "Let me **work**.All done: `6` cards.", 42,
                                     wire.usage(1234, 56)))
    with path.open("wb") as f:
        for line in lines:
            f.write(orjson.dumps(line) + b"\n")
    return path


def test_every_card_kind_from_a_replayed_script(
    make_server: Any, browser: Any, shot: Any, tmp_path: Path, workspace: Path
) -> None:
    ws = str(workspace / "project")
    script = _script(tmp_path / "cards.ndjson", ws)
    server = make_server(sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(script)})
    with server.client() as c:
        chat = new_chat(c, stream_partial_output=True)
    page = browser.new_page()
    page.goto(f"{server.url}/?token={server.token}#/chat/{chat['id']}")
    expect(page.locator("#conn")).to_have_text("Live")
    box = page.get_by_label("Prompt")
    box.fill("show me every card")
    box.press("Enter")
    expect(page.locator("#result-bar")).to_contain_text("Done")
    expect(page.locator("#result-bar")).to_contain_text("1,234 tokens in")

    # Deltas then the whole segment: one message, rendered as Markdown, not doubled.
    first = page.locator(".msg.assistant").first
    expect(first).to_have_text("Let me work.")
    expect(first.locator("strong")).to_have_text("work")
    expect(page.locator(".msg.assistant").last.locator("code")).to_have_text("6")

    mcp = page.locator(".card.tool-mcp")
    expect(mcp).to_contain_text("faz-ai")
    expect(mcp).to_contain_text("get_board")
    expect(mcp.locator("pre")).to_have_text("board: <b>3 items</b>")
    web = page.locator(".card.tool-web_search")
    expect(web).to_contain_text("python asyncio")
    expect(web).to_contain_text("asyncio docs")
    write = page.locator(".card.tool-write")
    expect(write.locator(".card-summary")).to_have_text("hello.py")
    expect(write.locator(".diff-add")).to_have_text("+print('hi')")
    expect(page.locator(".card.tool-delete")).to_contain_text("old.txt")
    todos = page.locator(".card.tool-todos .todo")
    expect(todos).to_have_count(2)
    expect(todos.first.locator("input")).to_be_checked()
    expect(todos.nth(1).locator("input")).not_to_be_checked()
    expect(todos.nth(1)).to_contain_text("in progress")
    generic = page.locator(".card.tool-unknown")
    expect(generic).to_contain_text("readLintsToolCall")
    expect(generic.locator("pre")).to_have_text("no <lint> problems")
    expect(page.locator(".card")).to_have_count(6)
    expect(page.locator(".card[data-status=succeeded]")).to_have_count(6)
    expect(page.locator(".msg.error")).to_contain_text("the tool server hiccuped")
    expect(page.locator(".thinking-folded")).to_have_count(1)
    assert page.locator("#timeline b, #timeline lint").count() == 0
    shot(page, "cards")
