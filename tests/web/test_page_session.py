"""The page's own controls around the chats (review of 2026-11-24): Sign out, the chats list
(its refresh keeps the keyboard focus; "More chats" past the first 200), a chat that is
still loading when you go elsewhere, and a chat link that is not one."""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import expect
from server_helpers import new_chat
from test_ui import open_ui

TURNS_HANDLED = """() => ({ done: new Promise((resolve) => {
  // Resolved once the page's code that awaited a chat's turns (GET .../turns) has run: a task
  // queued when the answer's body is read runs after the awaiting code's microtasks.
  const json = Response.prototype.json;
  Response.prototype.json = function () {
    const body = json.call(this);
    if (/\\/turns(\\?|$)/.test(this.url)) {
      const after = () => setTimeout(() => { Response.prototype.json = json; resolve(true); });
      body.then(after, after);
    }
    return body;
  };
}) })"""
"""An object whose ``done`` is a promise resolved once the page has handled the answer to
its next ``/turns`` request: what a test checks then had its chance to go wrong."""


def titled(c: Any, title: str) -> dict[str, Any]:
    r = c.post("/api/chats", json={"workspace": "project", "title": title})
    assert r.status_code == 201, r.text
    return dict(r.json())


def test_sign_out_ends_the_session_and_shows_the_sign_in_form(make_server: Any, browser: Any) -> None:
    server = make_server()
    with server.client() as c:
        chat = new_chat(c)
    page = open_ui(browser, server, f"#/chat/{chat['id']}")
    expect(page.locator("#conn")).to_have_text("Live")
    page.get_by_role("button", name="Sign out").click()
    expect(page.locator("#login-view")).to_be_visible()
    expect(page.get_by_label("Token")).to_be_focused()
    expect(page.get_by_role("button", name="Sign out")).to_be_hidden()
    expect(page.locator("#sidebar")).to_be_hidden()
    # the session is gone on the server: the cookie gets 401
    assert page.evaluate("fetch('/api/chats').then((r) => r.status)") == 401
    assert page.errors == []  # type: ignore[attr-defined]


def test_the_lists_refresh_keeps_the_keyboard_focus(make_server: Any, browser: Any) -> None:
    server = make_server()
    with server.client() as c:
        chats = [titled(c, f"chat {i}") for i in range(3)]
    page = browser.new_page()
    page.clock.install()  # the list's refresh timer runs when the test says
    page.goto(f"{server.url}/?token={server.token}")
    expect(page.locator(".chat-item")).to_have_count(3)
    link = page.locator(f'.chat-item[data-chat-id="{chats[1]["id"]}"] a')
    link.focus()
    with server.client() as c:  # the list changes meanwhile: a new chat comes first
        titled(c, "a newer chat")
    page.clock.run_for(11_000)
    expect(page.locator(".chat-item")).to_have_count(4)
    expect(link).to_be_focused()


def test_more_chats_lists_the_older_ones(make_server: Any, browser: Any) -> None:
    server = make_server()
    with server.client() as c:
        oldest = titled(c, "the oldest chat")
        for i in range(204):
            titled(c, f"chat {i}")
    page = open_ui(browser, server)
    expect(page.locator(".chat-item")).to_have_count(200)
    expect(page.locator(f'.chat-item[data-chat-id="{oldest["id"]}"]')).to_have_count(0)
    more = page.locator("#sidebar").get_by_role("button", name="More chats")
    more.focus()
    more.press("Enter")  # by keyboard: the focus goes to the first chat it loaded (audit 5, F5)
    expect(page.locator(".chat-item")).to_have_count(205)
    expect(page.locator(f'.chat-item[data-chat-id="{oldest["id"]}"]')).to_contain_text("the oldest chat")
    expect(more).to_be_hidden()  # nothing older
    expect(page.locator(".chat-item").nth(200).locator("a")).to_be_focused()  # not <body>


def test_new_chat_while_a_chat_is_still_loading_wins(make_server: Any, browser: Any) -> None:
    server = make_server()
    with server.client() as c:
        chat = new_chat(c)
    page = open_ui(browser, server)
    expect(page.locator("#welcome-view")).to_be_visible()
    held: list[Any] = []
    page.route(re.compile(r".*/turns(\?.*)?$"), lambda route: held.append(route))  # (a page of them)
    page.evaluate(f"location.hash = '#/chat/{chat['id']}'")
    for _ in range(600):
        if held:
            break
        page.wait_for_timeout(50)
    page.get_by_role("button", name="New chat").click()
    expect(page.locator("#new-view")).to_be_visible()
    handled = page.evaluate_handle(TURNS_HANDLED)
    held[0].continue_()  # the chat's state arrives after the person went elsewhere
    # the page had its chance: its code after the answer ran (not a fixed wait, which a
    # loaded machine's server or browser can outlast: then nothing was checked)
    page.evaluate("(handled) => handled.done", handled)
    visible = page.evaluate(
        "['new-view', 'chat-view', 'welcome-view'].filter((id) => !document.getElementById(id).hidden)")
    assert visible == ["new-view"]
    assert page.evaluate("location.hash") == "#/new"


def test_a_chat_link_with_a_bad_escape_says_the_chat_does_not_exist(make_server: Any, browser: Any) -> None:
    server = make_server()
    page = open_ui(browser, server, "#/new")
    expect(page.locator("#new-view")).to_be_visible()
    page.evaluate("location.hash = '#/chat/%E0'")
    expect(page.locator("#alert")).to_have_text("That chat does not exist on this server.")
    expect(page.locator("#welcome-view")).to_be_visible()
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_used_link_says_how_to_get_a_new_one(make_server: Any, browser: Any) -> None:
    """The printed link works once: opened again (after Sign out), the page was told to "Open
    the link that `cursor-agent-api serve` printed last" -- that very link, refused again
    (audit 16). It says how to get a new one (POST /api/auth/codes with the token, as serve
    says under a link printed to a file) or to paste the token."""
    server = make_server()
    link = f"{server.url}/?code={server.login_code}"
    page = browser.new_page()
    page.goto(link)
    page.locator("#sign-out-button").click()
    expect(page.locator("#login-view")).to_be_visible()
    page.goto(link)  # the one link serve printed, used
    expect(page.locator("#login-view")).to_be_visible()
    said = page.locator("#alert")
    expect(said).to_contain_text("The link was refused")
    expect(said).to_contain_text("POST /api/auth/codes")
    expect(said).to_contain_text(f"{server.url}/api/auth/codes")
    expect(said).to_contain_text("Paste the server's token")
    expect(said).not_to_contain_text("printed last")
