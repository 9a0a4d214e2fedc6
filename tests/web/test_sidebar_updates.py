"""The chats list is updated in place, never drawn again from scratch: opening a chat with
many runs does not rebuild it (it once did twice per run: a 400-run chat froze the tab for
seconds), and a refresh keeps each chat's item (a click across a refresh is not lost)."""

from __future__ import annotations

import re
import time
from typing import Any

from playwright.sync_api import Page, expect
from server_helpers import new_chat, poll, wait_run
from test_ui import open_ui, shows_result

# Counts the changes of the list's children (items added, removed or moved) from now on.
WATCH_LIST = """() => {
  window.__listChanges = 0;
  new MutationObserver((records) => {
    for (const r of records) window.__listChanges += r.addedNodes.length + r.removedNodes.length;
  }).observe(document.getElementById("chat-list"), { childList: true });
}"""


def item(chat_id: str) -> str:
    return f'#chat-list .chat-item[data-chat-id="{chat_id}"]'


def test_opening_a_chat_with_many_runs_does_not_rebuild_the_list(make_server: Any, browser: Any) -> None:
    server = make_server()
    with server.client() as c:
        chat = new_chat(c)
        for n in range(6):
            run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": f"say hello {n}"}).json()
            wait_run(c, run["id"])
        other = new_chat(c)
    page = open_ui(browser, server)
    expect(page.locator("#chat-list .chat-item")).to_have_count(2)
    page.evaluate(WATCH_LIST)
    page.evaluate(f"() => {{ window.__other = document.querySelector('{item(other['id'])}'); }}")

    page.goto(f"{server.url}/#/chat/{chat['id']}")
    expect(page.locator(".msg.user")).to_have_count(6)
    expect(page.locator("#result-bar .result-status")).to_have_text("Done")
    expect(page.locator(item(chat["id"]) + " a")).to_have_attribute("aria-current", "page")
    expect(page.locator(item(chat["id"]) + " .pill")).to_have_text("succeeded")
    # No item was added, removed or moved: the open chat's item changed in place.
    assert page.evaluate("() => window.__listChanges") == 0
    assert page.evaluate("() => window.__other.isConnected")
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_refresh_updates_the_items_in_place(make_server: Any, browser: Any) -> None:
    server = make_server()
    with server.client() as c:
        chat = new_chat(c)
        newer = new_chat(c)  # the most recently active: listed first
    page = open_ui(browser, server, f"#/chat/{chat['id']}")
    expect(page.locator("#conn")).to_have_text("Live")
    ids = "() => [...document.querySelectorAll('#chat-list .chat-item')].map((li) => li.dataset.chatId)"
    assert page.evaluate(ids) == [newer["id"], chat["id"]]
    page.evaluate(f"""() => {{
      window.__mine = document.querySelector('{item(chat['id'])}');
      window.__newer = document.querySelector('{item(newer['id'])}');
    }}""")
    page.get_by_label("Prompt").fill("read notes.txt")
    page.get_by_label("Prompt").press("Enter")
    expect(page.locator("#result-bar .result-status")).to_have_text("Done")
    # The refreshes after the run (the server's title, order and status) kept both items,
    # the open chat's moved to the top.
    expect(page.locator(item(chat["id"]) + " .chat-item-title")).to_have_text("read notes.txt")
    expect(page.locator(item(chat["id"]) + " .pill")).to_have_text("succeeded")
    assert page.evaluate(ids) == [chat["id"], newer["id"]]
    assert page.evaluate(f"() => window.__mine === document.querySelector('{item(chat['id'])}')")
    assert page.evaluate(f"() => window.__newer === document.querySelector('{item(newer['id'])}')")
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_long_chat_opens_with_its_newest_turns_and_shows_earlier_ones_on_demand(
    make_server: Any, browser: Any
) -> None:
    server = make_server()
    with server.client() as c:
        chat = new_chat(c)
        for n in range(5):
            run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": f"say hello {n}"}).json()
            wait_run(c, run["id"])
    page = open_ui(browser, server)
    asked: list[str] = []

    def two_per_page(route: Any) -> None:  # the page asks for 30 runs a page: 2 here
        url = re.sub(r"limit=\d+", "limit=2", route.request.url)
        asked.append(url)
        route.continue_(url=url)

    page.route(re.compile(r".*/turns\?.*"), two_per_page)
    prompts = "() => [...document.querySelectorAll('.msg.user')].map((m) => m.textContent)"
    page.goto(f"{server.url}/#/chat/{chat['id']}")
    expect(page.locator("#conn")).to_have_text("Live")
    expect(page.locator(".msg.user")).to_have_count(2)
    assert page.evaluate(prompts) == ["You: say hello 3", "You: say hello 4"]
    earlier = page.get_by_role("button", name="Show earlier turns")
    earlier.click()
    expect(page.locator(".msg.user")).to_have_count(4)
    earlier.click()
    expect(page.locator(".msg.user")).to_have_count(5)
    expect(earlier).to_have_count(0)  # the first run is shown
    assert page.evaluate(prompts) == [f"You: say hello {n}" for n in range(5)]
    assert len(asked) == 3 and "before_run" in asked[-1]
    # the result bar is the newest run's; the stream goes on after the newest run, once
    expect(page.locator("#result-bar .result-status")).to_have_count(1)
    page.get_by_label("Prompt").fill("say hello 5")
    shows_result(page, lambda: page.get_by_label("Prompt").press("Enter"))  # (not run 4's Done)
    expect(page.locator(".msg.user")).to_have_count(6)
    expect(page.locator("#result-bar .result-status")).to_have_count(1)
    assert page.evaluate(prompts)[-1] == "You: say hello 5"
    assert page.errors == []  # type: ignore[attr-defined]


HELD = {"CURSOR_AGENT_SIM_FAULT": "silence"}
"""The agent: ``system/init``, then nothing until stopped (a run that stays running)."""
CHATS = 205  # more than a page of the list (200): "More chats" shows the rest


def next_refresh(page: Page, asked: list[str]) -> None:
    """Move the page's clock on, a quarter second at a time, until it refreshes the list's
    first page (its timer is set once the previous refresh is drawn: moving the clock by the
    whole period at once could come before that). The bound is real time: the previous
    refresh may still be on its way (a loaded server), and the clock's moves are quick."""
    refreshes = sum("limit=200&offset=0" in u for u in asked)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        page.clock.run_for(250)
        if sum("limit=200&offset=0" in u for u in asked) > refreshes:
            return
    raise AssertionError(f"no refresh of the list in 60 s: {asked}")


def test_a_refresh_while_a_chat_runs_fetches_only_what_can_have_changed(
    make_server: Any, browser: Any
) -> None:
    """Review "scale", 2026-11-24: with "More chats" shown, each refresh of the list (every
    2 s while a chat runs) fetched every page already shown again. Every change of a chat
    makes it the most recently active, so a refresh now fetches the first page only while
    that page ends with a chat unchanged since; a chat of the second page that runs moves to
    the top, and its end shows."""
    server = make_server(sim_env=HELD)
    with server.client() as c:
        chats = [new_chat(c) for _ in range(CHATS)]
    oldest = chats[0]  # listed last: on the second page
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.clock.install()  # the list's refresh timers fire when the test moves the clock
    page.goto(f"{server.url}/?token={server.token}")
    expect(page.locator("#chat-list .chat-item")).to_have_count(200)
    with page.expect_request(lambda r: "/api/chats?limit=200&offset=200" in r.url):
        page.get_by_role("button", name="More chats").click()
    expect(page.locator("#chat-list .chat-item")).to_have_count(CHATS)
    expect(page.locator(item(oldest["id"]))).to_be_attached()

    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "/api/chats?" in r.url else None)
    with server.client() as c:
        run = c.post(f"/api/chats/{oldest['id']}/runs", json={"prompt": "count"}).json()
        # running on the server before the page's clock moves: its refreshes come as fast as
        # the test moves the clock, and the list draws what the server says at each of them
        poll(lambda: c.get(f"/api/runs/{run['id']}").json()["status"] == "running", 60)
    first = "() => document.querySelector('#chat-list .chat-item').dataset.chatId"
    # the next refreshes (10 s, then every 2 s once the run shows): three of them, each made
    # by moving the page's clock on until its timer fires
    for _ in range(3):
        next_refresh(page, asked)
    expect(page.locator(item(oldest["id"]) + " .pill")).to_have_text("running")
    assert page.evaluate(first) == oldest["id"]  # moved to the top
    expect(page.locator("#chat-list .chat-item")).to_have_count(CHATS)
    assert [u for u in asked if "offset=200" in u] == [], asked

    with server.client() as c:
        assert c.post(f"/api/runs/{run['id']}/cancel").status_code == 200
        assert wait_run(c, run["id"])["status"] == "cancelled"
    next_refresh(page, asked)
    expect(page.locator(item(oldest["id"]) + " .pill")).to_have_text("cancelled")
    expect(page.locator("#chat-list .chat-item")).to_have_count(CHATS)
    assert page.evaluate(first) == oldest["id"]
    assert [u for u in asked if "offset=200" in u] == [], asked
    assert errors == []
