"""The chats list is updated in place, never drawn again from scratch: opening a chat with
many runs does not rebuild it (it once did twice per run: a 400-run chat froze the tab for
seconds), and a refresh keeps each chat's item (a click across a refresh is not lost)."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect
from server_helpers import new_chat, wait_run
from test_ui import open_ui

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
