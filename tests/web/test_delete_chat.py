"""The chat's Delete action: asks first (dismissed: nothing happens); confirmed, the chat is
deleted on the server, the page goes to the welcome view and the list drops it; another tab
that follows the chat says it was deleted. Disabled while a run is active."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect
from server_helpers import new_chat, wait_run
from test_ui import open_chat, open_ui

HELD = {"CURSOR_AGENT_SIM_FAULT": "silence"}


def _item(chat_id: str) -> str:
    return f'#chat-list .chat-item[data-chat-id="{chat_id}"]'


def test_delete_asks_then_deletes_and_the_list_drops_the_chat(make_server: Any, browser: Any) -> None:
    server = make_server()
    with server.client() as c:
        chat, other = new_chat(c), new_chat(c)
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "reply with exactly: hi"}).json()
        wait_run(c, run["id"])
    page = open_ui(browser, server)
    follower = open_ui(browser, server)
    open_chat(page, server, chat["id"])
    open_chat(follower, server, chat["id"])
    expect(page.locator(_item(chat["id"]))).to_have_count(1)

    asked: list[str] = []
    page.once("dialog", lambda d: (asked.append(d.message), d.dismiss()))
    page.locator("#delete-chat-button").click()
    expect(page.locator("#chat-view")).to_be_visible()
    assert asked and "cannot be undone" in asked[0]
    with server.client() as c:
        assert c.get(f"/api/chats/{chat['id']}").status_code == 200

    page.once("dialog", lambda d: d.accept())
    page.locator("#delete-chat-button").focus()  # by keyboard
    page.keyboard.press("Enter")
    expect(page.locator("#welcome-view")).to_be_visible()
    # the focus was on Delete, gone with the chat: it goes to the welcome view's link
    expect(page.get_by_role("link", name="new chat", exact=True)).to_be_focused()
    expect(page.locator(_item(chat["id"]))).to_have_count(0)
    expect(page.locator(_item(other["id"]))).to_have_count(1)
    with server.client() as c:
        assert c.get(f"/api/chats/{chat['id']}").status_code == 404
    expect(follower.locator("#conn")).to_contain_text("was deleted")
    assert page.errors == [] and follower.errors == []  # type: ignore[attr-defined]


def test_delete_is_disabled_while_a_run_is_active(make_server: Any, browser: Any) -> None:
    server = make_server(sim_env=HELD)
    with server.client() as c:
        chat = new_chat(c)
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hello"}).json()
    page = open_ui(browser, server)
    open_chat(page, server, chat["id"])
    expect(page.locator("#delete-chat-button")).to_be_disabled()
    with server.client() as c:
        assert c.post(f"/api/runs/{run['id']}/cancel").status_code == 200
    expect(page.locator("#delete-chat-button")).to_be_enabled()


def test_a_chat_deleted_with_more_than_a_page_listed_leaves_the_list(
        make_server: Any, browser: Any) -> None:
    """With "More chats" shown (more than the list's page of 200), a refresh keeps the pages it
    does not fetch again as they were: the deleted chat must not come back from them."""
    server = make_server()
    with server.client() as c:
        chats = [new_chat(c) for _ in range(205)]
    doomed = chats[-1]  # the newest: first in the list
    page = open_ui(browser, server)
    expect(page.locator("#chat-list .chat-item")).to_have_count(200)
    page.get_by_role("button", name="More chats").click()
    expect(page.locator("#chat-list .chat-item")).to_have_count(205)
    open_chat(page, server, doomed["id"])
    page.once("dialog", lambda d: d.accept())
    # the list drops the chat at once, then is refreshed: what counts is the list after that
    # refresh (the health check follows the list's drawing: the refresh's end)
    with page.expect_request(lambda r: r.url.endswith("/api/health")):
        page.locator("#delete-chat-button").click()
    expect(page.locator("#welcome-view")).to_be_visible()
    expect(page.locator(_item(doomed["id"]))).to_have_count(0)
    expect(page.locator("#chat-list .chat-item")).to_have_count(204)
    assert page.errors == []  # type: ignore[attr-defined]
