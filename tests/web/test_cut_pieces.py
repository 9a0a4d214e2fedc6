"""Streamed pieces cut by the WebSocket bound (docs/websocket.md): each cut piece of a text or
a thinking block has its note, in order, whose Show all puts the whole piece in its place; a
recap (``segment_replaced``) takes the place of the pieces and of their notes (review 48)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.sync_api import expect
from server_helpers import new_chat
from test_ui import open_chat, open_ui, send

from cursor_agent_api.sim import wire

SID = "8ef40118-8378-436d-8ba8-2436b19cc899"
P1 = "A " * 150_000 + "MID-ONE\n\n"  # 300,009 characters: over 256 KiB, cut (293 KB)
P2 = "B " * 200_000 + "END-TWO"  # 400,007: cut too (391 KB)
THINK_END = "THINK-END"


def _run(make_server: Any, browser: Any, path: Path, *lines: dict[str, Any]) -> Any:
    """A page showing a chat whose turn is ``lines`` (after the init and the prompt), ended."""
    with path.open("wb") as f:
        f.write(wire.encode(wire.system_init(SID, "/ws", "GPT-5 Mini")))
        f.write(wire.encode(wire.user(SID, "big")))
        for line in lines:
            f.write(wire.encode(line))
        f.write(wire.encode(wire.result_success(SID, "r", "done", 1, wire.usage(1, 2))))
    server = make_server(sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(path)})
    with server.client() as c:
        chat = new_chat(c, stream_partial_output=True)
    page = open_ui(browser, server)
    open_chat(page, server, chat["id"])
    send(page, "big")
    expect(page.locator("#result-bar")).to_have_attribute("data-status", "succeeded")
    return page


def test_two_cut_pieces_are_each_shown_whole_in_their_place(
    make_server: Any, browser: Any, tmp_path: Path
) -> None:
    # review 48: each piece's Show all spliced at the offset it had when it came; the first
    # piece shown whole moved the second, whose splice then overwrote the end of the first
    page = _run(make_server, browser, tmp_path / "s.ndjson",
                wire.assistant_delta(SID, P1, 1789644625717), wire.assistant_delta(SID, P2, 1789644625718))
    notes = page.locator(".cut-note")
    expect(notes).to_have_count(2)
    order = [notes.nth(i).inner_text() for i in range(2)]
    page.get_by_role("button", name="Show all (293 KB)").click()  # the first piece first
    expect(notes).to_have_count(1, timeout=30_000)
    page.get_by_role("button", name="Show all (391 KB)").click()
    expect(notes).to_have_count(0, timeout=30_000)
    text = page.locator(".msg.assistant").last.inner_text()
    assert text.count("MID-ONE") == 1 and text.count("END-TWO") == 1, (len(text), text[-40:])
    assert text.index("MID-ONE") < text.index("END-TWO")
    assert text.count("A") == 150_000 and text.count("B") == 200_000, (text.count("A"), text.count("B"))
    assert ["293 KB" in order[0], "391 KB" in order[1]] == [True, True], order  # notes in order
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_recap_takes_the_place_of_the_cut_pieces_and_their_notes(
    make_server: Any, browser: Any, tmp_path: Path
) -> None:
    # review 48: the note stayed after a segment_replaced, and its Show all put the old deltas
    # in place of the recap
    page = _run(make_server, browser, tmp_path / "s.ndjson",
                wire.assistant_delta(SID, P1, 1789644625717),
                wire.assistant_segment(SID, "RECAP-TEXT short and whole", "mc", 1789644625718))
    answer = page.locator(".msg.assistant").last
    expect(answer).to_contain_text("RECAP-TEXT")
    expect(page.locator(".cut-note")).to_have_count(0)
    assert "MID-ONE" not in answer.inner_text()


def test_a_cut_thinking_piece_has_its_show_all(make_server: Any, browser: Any, tmp_path: Path) -> None:
    # review 48: a cut thinking_appended piece (bytes, seq) was shown cut, and nothing said so
    page = _run(make_server, browser, tmp_path / "s.ndjson",
                wire.thinking_delta(SID, "T " * 150_000 + THINK_END, 1789644625716),
                wire.thinking_completed(SID, 1789644625717),
                wire.assistant_delta(SID, "The answer.", 1789644625718))
    thinking = page.locator(".thinking")
    expect(thinking).to_have_count(1)
    assert THINK_END not in (thinking.text_content() or "")
    note = page.locator(".thinking + .cut-note")
    expect(note).to_have_count(1)
    note.get_by_role("button", name="Show all").click()
    expect(page.locator(".cut-note")).to_have_count(0, timeout=30_000)
    text = page.locator(".thinking").text_content() or ""
    assert text.count(THINK_END) == 1 and text.count("T ") == 150_000, len(text)
    # reopened, from the chat's state (which has the block whole): the same
    page.reload()
    expect(page.locator(".msg.assistant").last).to_contain_text("The answer.")
    expect(page.locator(".thinking")).to_contain_text(THINK_END)
    expect(page.locator(".cut-note")).to_have_count(0)
    assert page.errors == []  # type: ignore[attr-defined]
