"""The tests' ``open_chat`` and ``goes_live`` return once the chat they name is open and live,
not on the "Live" the chat open before it still shows.

CI of 2026-11-25 failed ``test_announce``'s lost-connection test this way: the page moved
from chat "second" to "first" while "second"'s "Live" still showed, the test went on at
once and cut the network under "first"'s opening, which then failed (the status empty, no
"Reconnecting…"). The page goes to a chat on the next turn of its event loop (a hash change)
and shows it once the server has answered, so a wait on the text alone can end early."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect
from test_announce import titled_chat
from test_ui import goes_live, open_chat, open_ui

SLOW_CHAT_FETCH = r"""
(() => {
  const realFetch = window.fetch.bind(window);
  window.fetch = async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input), location.href);
    if ((init?.method || "GET") === "GET" && /^\/api\/chats\/[^/]+$/.test(url.pathname)) {
      await new Promise((resolve) => setTimeout(resolve, 1500));
    }
    return realFetch(input, init);
  };
})();
"""
"""Each chat's own GET (what the page asks before it shows a chat) answered 1.5 s late."""

LATE_HASHCHANGE = r"""
(() => {
  const add = window.addEventListener.bind(window);
  window.addEventListener = (type, listener, options) => add(type,
    type === "hashchange" ? (ev) => setTimeout(() => listener(ev), 300) : listener, options);
})();
"""
"""The page's hash-change handler run 300 ms late, as on a loaded machine (where CI's page
went on a later turn of its event loop than the test's next step)."""


def slow_page(make_server: Any, browser: Any) -> tuple[Any, Page, str, str]:
    """A server with chats "first" and "second", and a page slow to go to a chat."""
    server = make_server()
    with server.client() as c:
        first = titled_chat(c, "first")["id"]
        second = titled_chat(c, "second")["id"]
    browser.add_init_script(SLOW_CHAT_FETCH)
    browser.add_init_script(LATE_HASHCHANGE)
    return server, open_ui(browser, server), first, second


def test_open_chat_returns_once_the_chat_it_names_is_shown_and_live(make_server: Any, browser: Any) -> None:
    server, page, first, second = slow_page(make_server, browser)
    open_chat(page, server, first)
    assert page.locator("#chat-title").inner_text() == "first"
    open_chat(page, server, second)
    assert page.locator("#chat-title").inner_text() == "second"  # read at once: no wait
    assert page.locator("#conn").inner_text() == "Live"
    open_chat(page, server, second)  # the chat already open: returns
    expect(page.locator("#conn")).to_have_text("Live")


def test_goes_live_waits_for_a_chat_opened_from_the_list(make_server: Any, browser: Any) -> None:
    _, page, first, second = slow_page(make_server, browser)
    for chat, title in ((first, "first"), (second, "second"), (first, "first")):
        goes_live(page, page.locator(f"#chat-list li[data-chat-id='{chat}'] a").click)
        assert page.locator("#chat-title").inner_text() == title
