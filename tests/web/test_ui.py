"""The web UI in a real browser (Debian's Chromium, headless) against a real server whose
agents come from the simulator: new chat, prompt, tool cards and the final answer; Stop;
reload mid-run and catch up; a server restart; agent output kept inert; phone width.

Screenshots of the main states go to test-artifacts/web/.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from netproxy import CuttableProxy
from playwright.sync_api import Page, expect
from server_helpers import Server, new_chat, wait_run

SLOW = {"CURSOR_AGENT_SIM_FAULT": "slow", "CURSOR_AGENT_SIM_DELAY": "0.4"}


def open_ui(context: Any, server: Server, fragment: str = "") -> Page:
    """Open the URL the server printed (token included), as a user would."""
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.errors = errors  # type: ignore[attr-defined]
    page.goto(f"{server.url}/?token={server.token}{fragment}")
    expect(page.locator("#conn, #welcome-view, #chat-view").first).to_be_attached()
    return page


def goes_live(page: Page, act: Callable[[], object]) -> None:
    """Do ``act`` (which opens a chat), then wait until that chat is open and live.

    The "Live" a chat open before still shows does not count: the page goes to a chat on
    the next turn of its event loop and shows it once the server has answered. Each status
    the page sets is a new text node in ``#conn``, so the wait is for a "Live" set after
    ``act``."""
    page.evaluate("() => { window.__connBefore = document.getElementById('conn').firstChild; }")
    act()
    page.wait_for_function(
        "() => { const el = document.getElementById('conn');"
        " return el.firstChild !== window.__connBefore && el.textContent === 'Live'; }"
    )


def open_chat(page: Page, server: Server, chat_id: str) -> None:
    """Go to the chat's address and wait until it is open and live (see :func:`goes_live`)."""
    url = f"{server.url}/#/chat/{chat_id}"
    if page.url == url:  # already there: going again changes nothing
        expect(page.locator("#conn")).to_have_text("Live")
        return
    goes_live(page, lambda: page.goto(url))


def shows_result(page: Page, act: Callable[[], object], label: str = "Done") -> None:
    """Do ``act`` (which starts a run), then wait until the result bar shows that run's
    result, ``label`` ("Done", "Stopped", …).

    The run before's result does not count: it stays in ``#result-bar`` (hidden once the new
    run is queued, its text still there) until the new run ends, and the page hears of the
    new run over its WebSocket, later than the prompt is sent. Each result the page shows is
    a new element in the bar, so the wait is for one shown after ``act``."""
    page.evaluate("() => { window.__resultBefore = document.querySelector('#result-bar .result-status'); }")
    act()
    page.wait_for_function(
        "(label) => { const el = document.querySelector('#result-bar .result-status');"
        " return el !== null && el !== window.__resultBefore && !el.parentElement.hidden"
        " && el.textContent === label; }",
        arg=label,
    )


def send(page: Page, prompt: str) -> None:
    box = page.get_by_label("Prompt")
    box.fill(prompt)
    box.press("Enter")


def call_ids(page: Page) -> list[str]:
    return page.eval_on_selector_all(".card", "cards => cards.map(c => c.dataset.callId)")


def test_token_exchange_new_chat_prompt_tool_cards_and_answer(
    make_server: Any, browser: Any, shot: Any
) -> None:
    server = make_server()
    page = open_ui(browser, server)
    # The token became the HttpOnly cookie and left the address bar.
    assert "token" not in page.url
    cookies = browser.cookies()
    assert [c["httpOnly"] for c in cookies] == [True]
    assert server.token not in str(cookies)
    expect(page.locator("#sim-badge")).to_be_visible()
    expect(page.locator("#sim-badge")).to_contain_text("Simulated")
    shot(page, "welcome")

    page.get_by_role("button", name="New chat").click()
    expect(page.get_by_label("Workspace root")).to_have_value(str(server.root))
    # A folder outside the allowed roots is refused, plainly.
    page.get_by_label("Folder inside it (optional)").fill("../..")
    page.get_by_role("button", name="Create chat").click()
    expect(page.locator("#alert")).to_contain_text("outside the allowed roots")
    page.get_by_label("Folder inside it (optional)").fill("project")
    page.get_by_label(re.compile("Run tools without asking")).check()
    shot(page, "new-chat")
    page.get_by_role("button", name="Create chat").click()
    expect(page.locator("#chat-title")).to_have_text("New chat in project")
    expect(page.locator("#conn")).to_have_text("Live")
    expect(page.get_by_label("Prompt")).to_be_focused()

    # Shift+Enter is a new line, not a send.
    box = page.get_by_label("Prompt")
    box.type("first line")
    box.press("Shift+Enter")
    box.type("second line")
    assert box.input_value() == "first line\nsecond line"
    box.fill("")

    send(page, "list the files and read notes.txt")
    expect(page.locator(".msg.user")).to_have_text(re.compile("list the files and read notes.txt"))
    expect(page.locator(".card")).to_have_count(2)
    expect(page.locator(".card.tool-ls.status-succeeded")).to_contain_text("notes.txt")
    read = page.locator(".card.tool-read")
    expect(read).to_have_attribute("data-status", "succeeded")
    expect(read).to_contain_text("lines 1–")
    expect(read.locator(".card-summary")).to_have_text("notes.txt")  # relative to the workspace
    expect(read.locator("pre")).to_contain_text("TODO: write tests")
    expect(page.locator("#result-bar")).to_contain_text("Done")
    expect(page.locator("#result-bar")).to_contain_text("tokens in")
    expect(page.locator(".thinking-live")).to_have_count(0)  # thinking folded away
    expect(page.locator(".thinking-folded").first).to_be_attached()
    expect(page.locator("#prompt")).to_have_value("")
    shot(page, "answer")

    # Continue the chat: a shell command (force is on), its card and the final answer.
    shows_result(page, lambda: send_after_done(page, "run `echo hi; echo oops >&2; exit 3`"))
    shell = page.locator(".card.tool-shell")
    expect(shell).to_have_attribute("data-status", "failed")
    expect(shell.locator(".card-summary")).to_have_text("echo hi; echo oops >&2; exit 3")
    expect(shell.locator(".card-status")).to_contain_text("exit 3")
    expect(shell.locator("details.card-output").first).to_contain_text("hi")
    expect(shell.locator("details.stderr")).to_contain_text("oops")
    expect(page.locator(".msg.assistant").last).to_contain_text("exited with code 3")
    expect(page.locator(".msg.user")).to_have_count(2)
    expect(page.locator("#result-bar .result-status")).to_have_count(1)  # only the latest result
    shot(page, "shell")

    # The chats list: title, workspace, status, last activity.
    item = page.locator(".chat-item").first
    expect(item).to_contain_text("list the files and read notes.txt")  # named by its first prompt
    expect(page.locator("#chat-title")).to_have_text("list the files and read notes.txt")
    expect(item).to_contain_text(str(server.root / "project"))
    expect(item.locator(".pill")).to_have_text("succeeded")
    expect(item.locator("time")).to_be_attached()

    # Leave, open it again from the list as an old chat, and continue it (the agent resumes).
    page.evaluate("location.hash = '#/'")
    expect(page.locator("#welcome-view")).to_be_visible()
    # (the cards of the chat shown before stay in the hidden view until another opens)
    goes_live(page, page.locator(".chat-item a").first.click)
    expect(page.locator(".card")).to_have_count(3)
    expect(page.locator(".msg.user")).to_have_count(2)
    send_after_done(page, "what did I ask before?")
    expect(page.locator(".msg.user")).to_have_count(3)
    expect(page.locator(".msg.assistant").last).to_contain_text("list the files")
    expect(page.locator("#stop-button")).to_be_hidden()
    assert page.errors == []  # type: ignore[attr-defined]


def test_edit_and_write_cards_show_a_coloured_diff(make_server: Any, browser: Any) -> None:
    server = make_server()
    with server.client() as c:
        chat = new_chat(c)
    page = open_ui(browser, server)
    open_chat(page, server, chat["id"])
    send(page, 'replace "hello" with "bye" in notes.txt')
    edit = page.locator(".card.tool-edit")
    expect(edit).to_have_attribute("data-status", "succeeded")
    expect(edit.locator(".diff-del")).to_have_text("-hello")
    expect(edit.locator(".diff-add")).to_have_text("+bye")
    send_after_done(page, "todo plan")
    expect(page.locator(".card.tool-todos .todo")).not_to_have_count(0)
    expect(page.locator(".card.tool-todos input[type=checkbox]").first).to_be_disabled()


def send_after_done(page: Page, prompt: str) -> None:
    expect(page.locator("#stop-button")).to_be_hidden()
    send(page, prompt)


def test_stop_mid_run_with_the_button_and_with_esc(
    make_server: Any, browser: Any, shot: Any
) -> None:
    server = make_server(sim_env=SLOW)
    with server.client() as c:
        chat = new_chat(c)
    page = open_ui(browser, server)
    open_chat(page, server, chat["id"])

    send(page, "list the files and read notes.txt")
    stop = page.get_by_role("button", name="Stop")
    expect(stop).to_be_visible()
    expect(page.locator(".thinking-live")).to_be_visible()  # thinking, while it is the latest
    shot(page, "running")
    stop.click()
    expect(page.locator("#result-bar")).to_contain_text("Stopped")
    expect(page.get_by_label("Prompt")).to_be_focused()
    expect(page.locator(".notice.cancelled")).to_be_visible()
    expect(stop).to_be_hidden()
    expect(page.locator(".thinking-live")).to_have_count(0)
    shot(page, "stopped")

    send(page, "grep TODO and glob *.txt")
    expect(stop).to_be_visible()
    page.get_by_label("Prompt").press("Escape")
    expect(page.locator(".notice.cancelled")).to_have_count(2)
    with server.client() as c:
        runs = c.get(f"/api/chats/{chat['id']}/runs").json()["runs"]
    assert [r["status"] for r in runs] == ["cancelled", "cancelled"]


def test_reload_mid_run_catches_up_every_event_once(make_server: Any, browser: Any) -> None:
    # Paced so that the reload comes mid-run (checked below: the run went on after the page
    # had loaded again), not slower: after the first card, 14 more events.
    server = make_server(sim_env={**SLOW, "CURSOR_AGENT_SIM_DELAY": "0.25"})
    with server.client() as c:
        chat = new_chat(c)
        page = open_ui(browser, server)
        open_chat(page, server, chat["id"])
        send(page, "list the files and read notes.txt, grep TODO and glob *.txt")
        expect(page.locator(".card").first).to_be_attached()
        page.reload()  # mid-run
        reloaded_at = c.get(f"/api/chats/{chat['id']}").json()["last_seq"]
        expect(page.locator("#result-bar")).to_contain_text("Done")
        run = c.get(f"/api/chats/{chat['id']}/runs").json()["runs"][-1]
        run = wait_run(c, run["id"])
        assert run["status"] == "succeeded"
        events = c.get(f"/api/chats/{chat['id']}/events", params={"limit": 5000}).json()["events"]
        calls = c.get(f"/api/chats/{chat['id']}/tool-calls").json()["tool_calls"]
    last_from_the_agent = max(e["seq"] for e in events if e["source"] == "agent")
    assert reloaded_at < last_from_the_agent, "the agent was done before the page loaded again"

    ids = call_ids(page)
    assert len(ids) == len(set(ids)) == len(calls) >= 3
    assert set(ids) == {tc["call_id"] for tc in calls}
    assistants = [e for e in events if e["type"] == "assistant"]
    expect(page.locator(".msg.assistant")).to_have_count(len(assistants))
    expect(page.locator(".msg.user")).to_have_count(1)
    expect(page.locator(".thinking-folded")).to_have_count(
        count_thinking_blocks([e["type"] for e in events])
    )
    # A page opened afterwards shows exactly the same.
    fresh = browser.new_page()
    fresh.goto(f"{server.url}/#/chat/{chat['id']}")
    expect(fresh.locator("#result-bar")).to_contain_text("Done")
    assert call_ids(fresh) == ids
    expect(fresh.locator(".msg.assistant")).to_have_count(len(assistants))


def count_thinking_blocks(types: list[str]) -> int:
    """Runs of consecutive thinking records (each one folded block on the page)."""
    blocks, inside = 0, False
    for t in types:
        thinking = t.startswith("thinking:")
        if thinking and not inside:
            blocks += 1
        inside = thinking
    return blocks


def test_file_with_script_read_by_the_agent_is_shown_as_text(
    make_server: Any, browser: Any, shot: Any
) -> None:
    server = make_server()
    with server.client() as c:
        chat = new_chat(c)
    page = open_ui(browser, server)
    open_chat(page, server, chat["id"])
    send(page, "read evil.html")
    card = page.locator(".card.tool-read")
    expect(card).to_have_attribute("data-status", "succeeded")
    expect(card.locator("pre")).to_contain_text("<script>window.__pwned = 'script';</script>")
    expect(card.locator("pre")).to_contain_text("<img src=x onerror=")
    # The answer may quote markup too: Markdown is rendered, HTML is not.
    send_after_done(page, "reply with exactly: <img src=x onerror=window.__pwned=1> **bold** <b>b</b>")
    last = page.locator(".msg.assistant").last
    expect(last).to_contain_text("<img src=x onerror=window.__pwned=1>")
    expect(last.locator("strong")).to_have_text("bold")
    expect(last).to_contain_text("<b>b</b>")
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#timeline script, #timeline img, #timeline b, #timeline h1").count() == 0
    expect(page.locator("#stop-button")).to_be_hidden()
    assert page.evaluate("window.__pwned") is None
    shot(page, "inert")


def test_reconnects_after_a_server_restart(make_server: Any, browser: Any, shot: Any) -> None:
    first = make_server()
    with first.client() as c:
        chat = new_chat(c)
    page = browser.new_page()
    page.clock.install()  # (it runs; the test moves it past the reconnect's backoff)
    page.goto(f"{first.url}/?token={first.token}")
    open_chat(page, first, chat["id"])
    send(page, "list the files")
    expect(page.locator("#result-bar")).to_contain_text("Done")
    first.stop()
    expect(page.locator("#conn")).to_have_text("Reconnecting…")
    shot(page, "reconnecting")
    # The same database, port and token: the page catches up by itself.
    second = make_server(token=first.token, args=["--port", str(first.port)])
    page.clock.run_for(5_000)  # the longest backoff: the page's timer tries again now
    expect(page.locator("#conn")).to_have_text("Live")
    shows_result(page, lambda: send_after_done(page, "grep TODO"))
    expect(page.locator(".card.tool-grep")).to_have_attribute("data-status", "succeeded")
    with second.client() as c:
        calls = c.get(f"/api/chats/{chat['id']}/tool-calls").json()["tool_calls"]
    ids = call_ids(page)
    assert len(ids) == len(set(ids)) == len(calls) == 2
    expect(page.locator(".msg.user")).to_have_count(2)


def test_phone_width_keyboard_and_labels(make_server: Any, browser: Any, shot: Any) -> None:
    server = make_server()
    with server.client() as c:
        chat = new_chat(c)
    page = open_ui(browser, server)
    page.set_viewport_size({"width": 375, "height": 740})
    open_chat(page, server, chat["id"])
    send(page, "list the files and read notes.txt")
    expect(page.locator("#result-bar")).to_contain_text("Done")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 375, f"the page scrolls sideways at phone width ({width} px)"
    expect(page.locator("#sidebar")).to_be_hidden()
    shot(page, "phone")
    toggle = page.get_by_role("button", name="Chats")
    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(page.get_by_role("button", name="New chat")).to_be_focused()
    expect(page.locator("#sidebar .chat-item")).to_have_count(1)
    expect(page.locator("#sidebar")).to_have_css("transform", "none")  # slid in
    shot(page, "phone-menu")
    page.keyboard.press("Escape")
    expect(page.locator("#sidebar")).to_be_hidden()
    expect(toggle).to_be_focused()
    # Every form control has a label; the stream is a live region.
    for label in ("Prompt", "Workspace root", "Folder inside it (optional)", "Model (optional)",
                  "Token"):
        assert page.get_by_label(label).count() == 1, label
    expect(page.locator("#timeline")).to_have_attribute("role", "log")
    expect(page.locator("#timeline")).to_have_attribute("aria-live", "polite")


def test_without_the_token_the_page_asks_for_it(
    make_server: Any, browser: Any, tmp_path: Path
) -> None:
    server = make_server()
    page = browser.new_page()
    response = page.goto(server.url + "/")
    assert response is not None
    csp = response.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    expect(page.locator("#login-view")).to_be_visible()
    page.get_by_label("Token").fill("wrong")
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#alert")).to_contain_text("not this server's token")
    page.get_by_label("Token").fill(server.token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#welcome-view")).to_be_visible()
    expect(page.locator("#sim-badge")).to_be_visible()


def test_network_drop_mid_run_then_catch_up(make_server: Any, browser: Any, shot: Any) -> None:
    # Paced so that the cut comes mid-run (checked below: the page has not seen the end), not
    # slower: after the first card, 14 more events.
    server = make_server(sim_env={**SLOW, "CURSOR_AGENT_SIM_DELAY": "0.2"})
    proxy = CuttableProxy(server.port)
    try:
        with server.client() as c:
            chat = new_chat(c)
            page = browser.new_page()
            page.clock.install()  # (it runs; the test moves it past the reconnect's backoff)
            page.goto(f"{proxy.url}/?token={server.token}#/chat/{chat['id']}")
            expect(page.locator("#conn")).to_have_text("Live")
            send(page, "list the files and read notes.txt, grep TODO and glob *.txt")
            expect(page.locator(".card").first).to_be_attached()
            proxy.cut()
            expect(page.locator("#conn")).to_have_text("Reconnecting…")
            expect(page.locator("#result-bar")).not_to_contain_text("Done")  # cut mid-run
            shot(page, "network-down")
            run_id = c.get(f"/api/chats/{chat['id']}/runs").json()["runs"][-1]["id"]
            assert wait_run(c, run_id)["status"] == "succeeded"  # the run went on alone
            proxy.restore()
            # The page tries again by itself, after a backoff of up to 5 s by then: its clock is
            # moved past that instead of waiting for it.
            page.clock.run_for(5_000)
            expect(page.locator("#conn")).to_have_text("Live")
            expect(page.locator("#result-bar")).to_contain_text("Done")
            calls = c.get(f"/api/chats/{chat['id']}/tool-calls").json()["tool_calls"]
            events = c.get(f"/api/chats/{chat['id']}/events", params={"limit": 5000}).json()
        ids = call_ids(page)
        assert len(ids) == len(set(ids)) == len(calls) >= 3
        assistants = [e for e in events["events"] if e["type"] == "assistant"]
        expect(page.locator(".msg.assistant")).to_have_count(len(assistants))
        expect(page.locator(".msg.user")).to_have_count(1)
    finally:
        proxy.close()


def test_a_failed_run_is_shown_plainly_with_its_remedy(
    make_server: Any, browser: Any, shot: Any
) -> None:
    server = make_server(sim_env={"CURSOR_AGENT_SIM_FAULT": "auth"})
    with server.client() as c:
        chat = new_chat(c)
    page = open_ui(browser, server)
    open_chat(page, server, chat["id"])
    send(page, "list the files")
    expect(page.locator("#result-bar")).to_contain_text("Failed")
    error = page.locator(".msg.error")
    expect(error).to_contain_text("AuthenticationError")
    expect(error).to_have_count(1)  # the agent's error and the run's failure, said once
    expect(error).to_contain_text("Authentication required")
    expect(error.locator(".remedy")).to_contain_text("agent login")
    expect(page.locator("#result-bar")).to_contain_text("Failed")
    expect(page.locator(".chat-item .pill")).to_have_text("failed")
    shot(page, "failed")
