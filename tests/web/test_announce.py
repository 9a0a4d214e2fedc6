"""What a screen reader user hears as the conversation changes (modelled by live_regions.py).

Review of 2026-11-25: a streamed answer was filled while aria-busy and never read (NVDA
ignores changes while busy and reads nothing when it clears); opening a chat queued its
whole history for reading."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
from live_regions import announced, announced_by_region, record
from netproxy import CuttableProxy
from playwright.sync_api import expect
from server_helpers import wait_run
from test_reflow import new_chat
from test_ui import goes_live, open_chat, open_ui

from cursor_agent_api.sim import wire

SID = "0c8a3f55-5b4e-4c57-9d7c-1b0e4fd2a7a1"
FIRST = "The notes file has **two** lines."
SECOND = "Run it with:\n\n```\nmake test\n```\n\nThat is all."


def titled_chat(client: Any, title: str) -> dict[str, Any]:
    r = client.post("/api/chats", json={"workspace": "project", "title": title, "options": {"trust": True}})
    assert r.status_code == 201, r.text
    return dict(r.json())


def _streamed_script(path: Path, ws: str) -> Path:
    """Two answers streamed in pieces around a tool call."""
    t = 1789644625717
    lines: list[dict[str, Any]] = [wire.system_init(SID, ws, "Auto"), wire.user(SID, "explain")]
    for n, (text, mc) in enumerate(((FIRST, "m-0-a"), (SECOND, "m-1-b"))):
        pieces = [text[i:i + 7] for i in range(0, len(text), 7)]
        lines += [wire.assistant_delta(SID, p, t + 10 * n + i) for i, p in enumerate(pieces)]
        lines.append(wire.assistant_segment(SID, text, mc, t + 10 * n + 9))
        if n == 0:
            args = wire.read_args(f"{ws}/notes.txt")
            lines.append(wire.tool_call_started(SID, "c-read", "readToolCall", args, model_call_id=mc,
                                                started_at_ms=t + 5, timestamp_ms=t + 5))
            lines.append(wire.tool_call_completed(SID, "c-read", "readToolCall",
                                                  wire.read_success(f"{ws}/notes.txt", "a\nb\n"),
                                                  args=args, model_call_id=mc, started_at_ms=t + 5,
                                                  completed_at_ms=t + 6, timestamp_ms=t + 6))
    lines.append(wire.result_success(SID, "req", FIRST + SECOND, 42, wire.usage(10, 5)))
    with path.open("wb") as f:
        for line in lines:
            f.write(orjson.dumps(line) + b"\n")
    return path


def test_each_streamed_answer_is_announced_once_whole(
    make_server: Any, browser: Any, tmp_path: Path, workspace: Path
) -> None:
    script = _streamed_script(tmp_path / "streamed.ndjson", str(workspace / "project"))
    server = make_server(sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(script)})
    page = open_ui(browser, server)
    open_chat(page, server, new_chat(server, stream_partial_output=True))
    record(page)
    box = page.get_by_label("Prompt")
    box.fill("explain")
    box.press("Enter")
    expect(page.locator("#result-bar")).to_contain_text("Done")
    answers = page.locator(".msg.assistant")
    expect(answers).to_have_count(2)
    expect(answers.first.locator("strong")).to_have_text("two")
    whole = [(t or "").strip() for t in answers.all_text_contents()]
    heard = announced(page, "timeline")
    for text in whole:
        assert heard.count(text) == 1, (text, heard)
    # no piece of an answer on the way
    pieces = [h for h in heard if h not in whole and any(w in h for w in ("has two", "make test", "That is"))]
    assert not pieces, pieces
    assert page.errors == []  # type: ignore[attr-defined]


def test_opening_a_chat_says_what_opened_and_does_not_read_its_history(
    make_server: Any, browser: Any
) -> None:
    server = make_server()
    with server.client() as c:
        older = titled_chat(c, "three small runs")
        for prompt in ("read notes.txt and explain it", "run `ls`", "read notes.txt again"):
            run = c.post(f"/api/chats/{older['id']}/runs", json={"prompt": prompt}).json()
            wait_run(c, run["id"])
        newer = titled_chat(c, "empty one")
    page = open_ui(browser, server)
    open_chat(page, server, newer["id"])
    expect(page.locator("#chat-title")).to_have_text("empty one")
    expect(page.locator("#announce")).to_have_text("Opened empty one: no turns yet.")
    record(page)
    page.locator(f"#chat-list li[data-chat-id='{older['id']}'] a").click()
    expect(page.locator("#chat-title")).to_have_text("three small runs")
    expect(page.locator(".msg.user")).to_have_count(3)
    expect(page.locator("#result-bar")).to_contain_text("Done")
    expect(page.get_by_label("Prompt")).to_be_focused()
    expect(page.locator("#announce")).to_have_text("Opened three small runs: 3 turns.")
    # the one line, and nothing of the history or its result (the connection's state, short,
    # is said as it changes)
    heard = [(where, text) for where, text in announced_by_region(page) if where != "conn"]
    assert heard == [("announce", "Opened three small runs: 3 turns.")], heard
    # the log still announces what happens next
    box = page.get_by_label("Prompt")
    box.fill("say hello")
    box.press("Enter")
    expect(page.locator(".msg.user")).to_have_count(4)  # (the result bar says Done already)
    assert "You: say hello" in announced(page, "timeline")
    assert page.errors == []  # type: ignore[attr-defined]


def test_earlier_turns_are_not_read_out_and_the_focus_stays_near(
    make_server: Any, browser: Any
) -> None:
    server = make_server()
    with server.client() as c:
        chat = titled_chat(c, "five turns")
        for n in range(5):
            run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": f"say hello {n}"}).json()
            wait_run(c, run["id"])
    page = open_ui(browser, server)

    def two_per_page(route: Any) -> None:  # the page asks for 30 runs a page: 2 here
        route.continue_(url=re.sub(r"limit=\d+", "limit=2", route.request.url))

    page.route(re.compile(r".*/turns\?.*"), two_per_page)
    open_chat(page, server, chat["id"])
    expect(page.locator("#announce")).to_have_text(
        "Opened five turns: 2 turns shown (Show earlier turns, at the top, loads more).")
    record(page)
    earlier = page.get_by_role("button", name="Show earlier turns")
    earlier.focus()
    page.keyboard.press("Enter")
    expect(page.locator(".msg.user")).to_have_count(4)
    expect(earlier).to_be_focused()  # the next page's button
    expect(page.locator("#announce")).to_have_text("Showed 2 earlier turns, above.")
    page.keyboard.press("Enter")
    expect(page.locator(".msg.user")).to_have_count(5)
    expect(page.locator("#timeline")).to_be_focused()  # no more pages: the conversation
    expect(page.locator("#announce")).to_have_text("Showed 1 earlier turn, above.")
    heard = announced(page)
    assert not [h for h in heard if "hello" in h], heard
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_waiting_card_is_announced_once_and_its_decision_once(
    make_server: Any, browser: Any
) -> None:
    """Review of 2026-11-25: a card was read twice (the log read the whole card, buttons and
    help included, and the status region said it again), its decision up to three times."""
    server = make_server()
    page = open_ui(browser, server)
    open_chat(page, server, new_chat(server, transport="acp"))
    record(page)
    box = page.get_by_label("Prompt")
    box.fill("run `echo heard-once`")
    box.press("Enter")
    card = page.locator(".card.request-permission").first
    expect(page.locator("#announce")).to_contain_text("echo heard-once")
    card.get_by_role("button", name="Allow once").click()
    expect(card.locator(".request-decision")).to_have_text("Allowed once")
    expect(page.locator("#result-bar")).to_contain_text("Done")
    heard = announced(page)
    about_card = [h for h in heard if h.startswith(("Allow?", "The agent asks"))]
    assert about_card == [
        "The agent asks to run: Shell command echo heard-once. Its card is at the end of the conversation."
    ], heard
    assert heard.count("Allowed once") == 1, heard
    assert page.errors == []  # type: ignore[attr-defined]


TIMELINE = """async () => {
  const { Timeline } = await import('/js/timeline.js');
  document.getElementById('welcome-view').hidden = true;
  document.getElementById('chat-view').hidden = false;
  const tl = new Timeline(document.getElementById('timeline'), document.getElementById('result-bar'),
                          { onRunChange: () => {}, workspace: '/ws' });
  tl.apply({ type: 'run', subtype: 'queued', seq: 1,
            payload: { run: { id: 'r1', status: 'running', prompt: 'hi' } } }, []);
  window.tl = tl;
  window.seq = 2;
  window.frame = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r)));
  window.change = async (...changes) => {
    tl.apply({ type: 'event', run_id: 'r1', seq: window.seq++ }, changes);
    await window.frame();
  };
}"""

RUNNING = {"call_id": "c-ls", "kind": "shell", "status": "running", "command": "ls",
           "description": "List the files"}
DONE = {**RUNNING, "status": "succeeded", "stdout": "a.txt\nb.txt\n", "exit_code": 0, "duration_ms": 5}
FAILED = {"call_id": "c-false", "kind": "shell", "status": "failed", "command": "false", "stdout": "",
          "stderr": "no such thing\n", "exit_code": 1, "duration_ms": 3}


def _timeline_page(make_server: Any, browser: Any) -> Any:
    page = open_ui(browser, make_server())
    expect(page.locator("#welcome-view")).to_be_visible()
    page.evaluate(TIMELINE)
    return page


def test_a_tool_card_is_updated_in_place_and_its_end_said_in_one_short_line(
    make_server: Any, browser: Any
) -> None:
    """Review of 2026-11-25: a card was rebuilt whole at each change of its call, so the log
    read it again each time ("Shell ls running…", then the whole card, output included, at
    its end), and the focus on one of its buttons was lost."""
    page = _timeline_page(make_server, browser)
    record(page)
    page.evaluate("(v) => window.change({ kind: 'tool_call_opened', index: 0, view: v })", RUNNING)
    page.evaluate("""() => {
      const card = document.querySelector('.card.tool-shell');
      window.kept = [card, card.querySelector('.card-head'), card.querySelector('.card-summary'),
                     card.querySelector('.card-desc'), card.querySelector('button.copy')];
      window.kept[4].focus();
    }""")
    page.evaluate("(v) => window.change({ kind: 'tool_call_changed', index: 0, view: v })", DONE)
    card = page.locator(".card.tool-shell")
    expect(card).to_have_attribute("data-status", "succeeded")
    expect(card.locator("pre")).to_have_text("a.txt\nb.txt\n")
    # the same nodes, updated; the focus where it was
    assert page.evaluate("""() => { const card = document.querySelector('.card.tool-shell');
      const now = [card, card.querySelector('.card-head'), card.querySelector('.card-summary'),
                   card.querySelector('.card-desc'), card.querySelector('button.copy')];
      return now.map((n, i) => n === window.kept[i]); }""") == [True] * 5
    assert page.evaluate("document.activeElement === window.kept[4]")
    page.evaluate("(v) => window.change({ kind: 'tool_call_opened', index: 1, view: v })", FAILED)
    expect(page.locator(".card.tool-shell")).to_have_count(2)
    heard = announced(page)
    assert heard == ["Shell ls: done", "Shell false: failed (exit 1)"], heard
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_card_updated_in_place_shows_what_a_card_drawn_at_its_end_shows(
    make_server: Any, browser: Any
) -> None:
    page = _timeline_page(make_server, browser)
    page.evaluate("(v) => window.change({ kind: 'tool_call_opened', index: 0, view: v })", RUNNING)
    page.evaluate("(v) => window.change({ kind: 'tool_call_changed', index: 0, view: v })", DONE)
    page.evaluate("(v) => window.change({ kind: 'tool_call_opened', index: 1, view: v })",
                  {**DONE, "call_id": "c-ls2"})
    cards = page.locator(".card.tool-shell")
    expect(cards).to_have_count(2)
    first, second = page.eval_on_selector_all(
        ".card.tool-shell", "cards => cards.map((c) => c.outerHTML.replace(/c-ls2?/, ''))")
    assert first == second


def test_folded_thinking_is_not_read_out_as_it_folds(make_server: Any, browser: Any) -> None:
    """Review of 2026-11-25: live thinking is not read out, but the "Thought" block that took
    its place when it folded was, whole."""
    page = _timeline_page(make_server, browser)
    record(page)
    page.evaluate("() => window.change({ kind: 'thinking_appended', block: 0, text: 'pondering the notes' })")
    page.evaluate("() => window.change({ kind: 'thinking_closed', block: 0 })")
    page.evaluate("() => window.change({ kind: 'segment_replaced', segment: 0, text: 'The answer.' })")
    expect(page.locator(".thinking-folded")).to_have_count(1)
    expect(page.locator(".msg.assistant")).to_have_text("The answer.")
    assert announced(page) == ["The answer."], announced(page)


def test_a_tool_call_is_said_once_as_it_ends_not_read_out_at_each_change(
    make_server: Any, browser: Any
) -> None:
    server = make_server()
    page = open_ui(browser, server)
    open_chat(page, server, new_chat(server, force=True))
    record(page)
    box = page.get_by_label("Prompt")
    box.fill("run `ls`")
    box.press("Enter")
    expect(page.locator(".card.tool-shell")).to_have_attribute("data-status", "succeeded")
    expect(page.locator("#result-bar")).to_contain_text("Done")
    heard = announced(page)
    assert [h for h in heard if h.startswith("Shell")] == ["Shell ls: done"], heard
    # nothing of the card itself (its header while running, its description, its output)
    assert not [h for h in heard if "running…" in h or "Run ls" in h or h.startswith("stdout")], heard
    assert page.errors == []  # type: ignore[attr-defined]


def test_the_connection_is_said_when_it_is_lost_and_back_not_at_each_open(
    make_server: Any, browser: Any
) -> None:
    """Review of 2026-11-25: "Connecting…", "Catching up…" and "Live" were said each time a
    chat opened."""
    server = make_server()
    proxy = CuttableProxy(server.port)
    try:
        with server.client() as c:
            first = titled_chat(c, "first")["id"]
            second = titled_chat(c, "second")["id"]
        page = browser.new_page()
        page.goto(f"{proxy.url}/?token={server.token}")
        expect(page.locator("#welcome-view")).to_be_visible()
        record(page)
        for chat in (first, second, first):
            goes_live(page, page.locator(f"#chat-list li[data-chat-id='{chat}'] a").click)
        assert [h for h in announced(page) if not h.startswith("Opened")] == [], announced(page)
        proxy.cut()
        expect(page.locator("#conn")).to_have_text("Reconnecting…")
        expect(page.locator("#announce")).to_have_text("Lost the connection to the server: reconnecting…")
        proxy.restore()
        expect(page.locator("#conn")).to_have_text("Live")
        expect(page.locator("#announce")).to_have_text("Connected again.")
        heard = [h for h in announced(page) if not h.startswith("Opened")]
        assert heard == ["Lost the connection to the server: reconnecting…", "Connected again."], heard
    finally:
        proxy.close()
