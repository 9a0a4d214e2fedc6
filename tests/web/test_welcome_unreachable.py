"""The welcome view (no chat open) while the server cannot be reached. It showed nothing, and
said nothing: the list's refresh failed in silence (a chat's stream says "Reconnecting…" in
the top bar, but with no chat open there is no stream). Now the page's alert says that the
server cannot be reached and when the page tries again, and goes once the list is fetched."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect
from server_helpers import new_chat
from test_tabs import paused

API = "**/api/**"


def test_the_welcome_view_says_when_the_server_cannot_be_reached_and_that_it_tries_again(
    make_server: Any, browser: Any
) -> None:
    server = make_server()
    with server.client() as c:
        new_chat(c)
    page = paused(browser, server)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    expect(page.locator("#welcome-view")).to_be_visible()
    alert = page.locator("#alert")
    expect(alert).to_be_hidden()
    page.route(API, lambda route: route.abort())  # the server goes away
    page.clock.run_for(10_000)  # the list's refresh
    expect(alert).to_contain_text("The chats could not be loaded: the server cannot be reached")
    expect(alert).to_contain_text("Trying again in 10 s")
    page.locator("#welcome-new-link").click()  # still true on the new-chat form
    expect(page.locator("#new-view")).to_be_visible()
    expect(alert).to_contain_text("the server cannot be reached")
    page.unroute(API)  # back
    page.clock.run_for(10_000)
    expect(alert).to_be_hidden()
    assert errors == []


def test_the_welcome_view_says_so_when_the_list_fails_as_the_page_loads(
    make_server: Any, browser: Any
) -> None:
    server = make_server()
    with server.client() as c:
        new_chat(c)
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.clock.install()
    page.route("**/api/chats?**", lambda route: route.abort())  # the settings load, the list not
    page.goto(f"{server.url}/?token={server.token}")
    expect(page.locator("#welcome-view")).to_be_visible()
    alert = page.locator("#alert")
    expect(alert).to_contain_text("the server cannot be reached")
    expect(alert).to_contain_text("Trying again in")
    page.unroute("**/api/chats?**")
    page.clock.run_for(10_000)
    expect(page.locator("#chat-list .chat-item")).to_have_count(1)
    expect(alert).to_be_hidden()
    assert errors == []
