"""Long output cut by the server ("Size limits" in docs/server.md): the page shows the
beginning, says so, and "Show all" fetches the whole value, shown as inert text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.sync_api import expect
from server_helpers import new_chat
from test_ui import open_chat, open_ui, send

from cursor_agent_api.sim import wire

END_TOOL = "END-OF-THE-BIG-FILE"
END_TEXT = "END-OF-THE-LONG-ANSWER"


def _one_call(path: Path, sid: str, kind: str, args: dict[str, Any], result: dict[str, Any],
              answer: str) -> Path:
    """A recorded turn at ``path``: one ``kind`` call with ``args`` and ``result``, then
    ``answer`` as the text and the result."""
    times = {"model_call_id": "mc", "started_at_ms": 1, "timestamp_ms": 1}
    with path.open("wb") as f:
        f.write(wire.encode(wire.system_init(sid, "/ws", "GPT-5 Mini")))
        f.write(wire.encode(wire.user(sid, "big")))
        f.write(wire.encode(wire.tool_call_started(sid, "call_1", kind, args, **times)))
        done = wire.tool_call_completed(sid, "call_1", kind, result, args=args,
                                        completed_at_ms=2, **times)
        f.write(wire.encode(done))
        f.write(wire.encode(wire.assistant_final(sid, answer)))
        f.write(wire.encode(wire.result_success(sid, "r", answer, 1, wire.usage(1, 2))))
    return path


def _script(path: Path) -> Path:
    content = "<script>window.__pwned = 1</script> line\n" * 12000 + END_TOOL + "\n"
    answer = "A long answer. " * 30000 + END_TEXT
    return _one_call(path, "8ef40118-8378-436d-8ba8-2436b19cc877", "readToolCall",
                     wire.read_args("/ws/big.log"), wire.read_success("/ws/big.log", content),
                     answer)


def test_long_output_and_text_are_cut_with_show_all(
    make_server: Any, browser: Any, shot: Any, tmp_path: Path
) -> None:
    server = make_server(sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(_script(tmp_path / "big.ndjson"))})
    with server.client() as c:
        chat = new_chat(c)
    page = open_ui(browser, server)
    open_chat(page, server, chat["id"])
    send(page, "big")
    expect(page.locator("#result-bar")).to_have_attribute("data-status", "succeeded")
    card = page.locator(".card.tool-read")
    expect(card.locator(".cut-note")).to_contain_text("only its beginning is shown")
    expect(card).not_to_contain_text(END_TOOL)
    answer = page.locator(".msg.assistant").last
    expect(answer).not_to_contain_text(END_TEXT)
    shot(page, "cut")
    card.get_by_role("button", name="Show all").click()
    expect(card.locator("pre.whole-value")).to_contain_text(END_TOOL)
    expect(card.locator(".cut-note")).to_have_count(0)
    page.locator(".cut-note").get_by_role("button", name="Show all").click()
    expect(answer.locator("pre.whole-value")).to_contain_text(END_TEXT)
    expect(page.locator(".cut-note")).to_have_count(0)
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#timeline script").count() == 0
    assert page.errors == []  # type: ignore[attr-defined]
    shot(page, "shown-all")


def _failed_mcp_script(path: Path) -> Path:
    said = "a line of what the tool said\n" * 12000 + END_TOOL + "\n"
    return _one_call(path, "8ef40118-8378-436d-8ba8-2436b19cc878", "mcpToolCall",
                     wire.mcp_args("docs", "find", {"q": "x"}, "call_1"),
                     wire.mcp_success([said], is_error=True), "The tool failed.")


def test_show_all_of_a_failed_calls_cut_output_shows_it_under_the_card(
    make_server: Any, browser: Any, tmp_path: Path
) -> None:
    """A failed MCP (fetch, other) call's card shows no output block (its error line says
    why): Show all of its cut output loaded the text and showed nothing (review 43); the
    whole comes under the card."""
    script = _failed_mcp_script(tmp_path / "failed.ndjson")
    server = make_server(sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(script)})
    with server.client() as c:
        chat = new_chat(c)
    page = open_ui(browser, server)
    open_chat(page, server, chat["id"])
    send(page, "big")
    expect(page.locator("#result-bar")).to_have_attribute("data-status", "succeeded")
    card = page.locator(".card.tool-mcp")
    expect(card).to_have_attribute("data-status", "failed")
    card.locator(".cut-note").get_by_role("button", name="Show all").click()
    expect(card.locator("pre.whole-value")).to_contain_text(END_TOOL)
    assert page.errors == []  # type: ignore[attr-defined]


EVIL = "0_invoice_\u202efdp.exe"


def test_show_all_under_a_card_shows_bidi_controls_as_markers(
    make_server: Any, browser: Any, tmp_path: Path
) -> None:
    """What Show all loads whole under a card (a failed call's output, a list card's whole
    list, ...) shows bidi controls as markers, as the card itself does (docs/web.md, Safety):
    it was put in raw (audit 16), so "invoice_<U+202E>fdp.exe" read "invoice_exe.pdf"."""
    said = "a line of what the tool said\n" * 12000 + EVIL + "\n" + END_TOOL + "\n"
    script = _one_call(tmp_path / "evil.ndjson", "8ef40118-8378-436d-8ba8-2436b19cc87a",
                       "mcpToolCall", wire.mcp_args("docs", "find", {"q": "x"}, "call_1"),
                       wire.mcp_success([said], is_error=True), "The tool failed.")
    server = make_server(sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(script)})
    with server.client() as c:
        chat = new_chat(c)
    page = open_ui(browser, server)
    open_chat(page, server, chat["id"])
    send(page, "big")
    expect(page.locator("#result-bar")).to_have_attribute("data-status", "succeeded")
    card = page.locator(".card.tool-mcp")
    card.locator(".cut-note").get_by_role("button", name="Show all").click()
    whole = card.locator("pre.whole-value")
    expect(whole).to_contain_text(END_TOOL)
    text = whole.text_content() or ""
    assert "\u202e" not in text
    assert "0_invoice_⟨U+202E⟩fdp.exe" in text
    assert page.errors == []  # type: ignore[attr-defined]


MIDDLE = "MIDDLE-OF-THE-STREAMED-ANSWER"


def _streamed_script(path: Path) -> Path:
    """An answer streamed in two pieces: 200,000 characters (under the store's 256 KiB, but
    three copies of it over a WebSocket message's 512 KiB), then 300,000 (over 256 KiB: its
    change is cut, with ``bytes`` and ``seq``)."""
    sid = "8ef40118-8378-436d-8ba8-2436b19cc879"
    with path.open("wb") as f:
        f.write(wire.encode(wire.system_init(sid, "/ws", "GPT-5 Mini")))
        f.write(wire.encode(wire.user(sid, "big")))
        f.write(wire.encode(wire.assistant_delta(sid, "A " * 100_000 + MIDDLE + "\n\n", 1789644625717)))
        f.write(wire.encode(wire.assistant_delta(sid, "B " * 150_000 + END_TEXT, 1789644625718)))
        f.write(wire.encode(wire.result_success(sid, "r", "done", 1, wire.usage(1, 2))))
    return path


def test_a_long_streamed_answer_is_shown_whole_or_cut_with_show_all(
    make_server: Any, browser: Any, tmp_path: Path
) -> None:
    # review 45: the page appended a text_appended change's text as it came, ignoring bytes and
    # seq, and the WebSocket bound cut a 200,000-character piece to 128 KiB: text lost silently
    server = make_server(sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(_streamed_script(tmp_path / "s.ndjson"))})
    with server.client() as c:
        chat = new_chat(c, stream_partial_output=True)
    page = open_ui(browser, server)
    open_chat(page, server, chat["id"])
    send(page, "big")
    expect(page.locator("#result-bar")).to_have_attribute("data-status", "succeeded")
    answer = page.locator(".msg.assistant").last
    expect(answer).to_contain_text(MIDDLE)  # the first piece whole
    expect(answer).not_to_contain_text(END_TEXT)
    note = page.locator(".cut-note")
    expect(note).to_have_count(1)
    note.get_by_role("button", name="Show all").click()
    expect(page.locator(".msg.assistant").last).to_contain_text(END_TEXT, timeout=30_000)
    expect(page.locator(".msg.assistant").last).to_contain_text(MIDDLE)
    expect(page.locator(".cut-note")).to_have_count(0)
    assert page.errors == []  # type: ignore[attr-defined]
