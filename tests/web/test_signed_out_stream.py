"""A chat open in the page when its session is signed out elsewhere (another tab, a replayed
cookie's owner signing out): the server closes the page's WebSocket (4401) and the page shows
the sign-in form, saying why, instead of reconnecting to a stream it may no longer read."""

from __future__ import annotations

from typing import Any

import httpx
from live_regions import announced, record
from playwright.sync_api import expect
from server_helpers import new_chat
from test_ui import open_chat, open_ui


def test_a_signed_out_session_closes_the_open_chat_and_asks_to_sign_in(
    make_server: Any, browser: Any
) -> None:
    server = make_server()
    page = open_ui(browser, server)
    with server.client() as c:
        chat = new_chat(c)
    open_chat(page, server, chat["id"])
    cookie = "; ".join(f"{c['name']}={c['value']}" for c in browser.cookies())
    assert httpx.post(f"{server.url}/api/auth/logout", headers={"Cookie": cookie}).status_code == 204
    expect(page.locator("#login-view")).to_be_visible()
    expect(page.locator("#alert")).to_contain_text("signed out")
    assert not page.errors, page.errors  # type: ignore[attr-defined]


def test_a_signed_out_session_is_said_once(make_server: Any, browser: Any) -> None:
    """The sign-in form's alert says why; the closed stream does not say it again ("Stream
    error: signed out" was announced too)."""
    server = make_server()
    page = open_ui(browser, server)
    with server.client() as c:
        chat = new_chat(c)
    open_chat(page, server, chat["id"])
    record(page)
    cookie = "; ".join(f"{c['name']}={c['value']}" for c in browser.cookies())
    assert httpx.post(f"{server.url}/api/auth/logout", headers={"Cookie": cookie}).status_code == 204
    expect(page.locator("#login-view")).to_be_visible()
    expect(page.locator("#alert")).to_contain_text("signed out")
    heard = [h for h in announced(page) if "signed out" in h.lower()]
    assert heard == ["You were signed out: sign in again."], heard
