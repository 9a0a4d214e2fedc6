"""New chat, slow to answer, while the user goes elsewhere: the chat is created and listed, and
the page stays where the user is (it went to the new chat before, taking them from the chat
they had opened meanwhile). See test_session_ended.py for the same after a late 401."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, Route, expect
from test_chat_opening import hold, until_held
from test_kept_prompts import titled
from test_prompt_in_flight import go
from test_tabs import item
from test_ui import goes_live, open_ui


def slow_new_chat(make_server: Any, browser: Any) -> tuple[Any, Page, dict[str, Any], list[Route]]:
    """A server with a chat "chat Y", and a page whose New chat "chat slow" is on its way, held:
    the server, the page, chat Y, the held request (``held[0].continue_()`` lets it go on)."""
    server = make_server()
    with server.client() as c:
        y = titled(c, "chat Y")
    page = open_ui(browser, server, "#/new")
    expect(page.locator("#new-view")).to_be_visible()
    held = hold(page, "**/api/chats")  # (POST only: the list is asked at /api/chats?limit=…)
    page.locator("#new-title-input").fill("chat slow")
    page.get_by_role("button", name="Create chat").click()
    until_held(page, held)
    return server, page, y, held


def test_a_slow_new_chat_leaves_the_page_where_the_user_went_meanwhile(
    make_server: Any, browser: Any
) -> None:
    server, page, y, held = slow_new_chat(make_server, browser)
    goes_live(page, lambda: go(page, y["id"]))  # the user opens another chat meanwhile
    page.get_by_label("Prompt").fill("typed in Y")
    held[0].continue_()
    with server.client() as c:
        for _ in range(1200):  # (until the server has it; the page then lists it)
            created = [ch for ch in c.get("/api/chats").json()["chats"] if ch["title"] == "chat slow"]
            if created:
                break
            page.wait_for_timeout(50)
    (chat,) = created
    expect(page.locator(item(chat["id"]))).to_be_visible()
    expect(page.locator("#announce")).to_have_text(
        "The new chat “chat slow” was created: it is in the list.")
    expect(page.locator("#chat-title")).to_have_text("chat Y")
    assert page.url.endswith(f"#/chat/{y['id']}")
    expect(page.get_by_label("Prompt")).to_have_value("typed in Y")
    expect(page.locator("#alert")).to_be_hidden()
    page.evaluate("() => { location.hash = '#/new'; }")  # the form, emptied: its chat was made
    expect(page.locator("#new-title-input")).to_have_value("")
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_slow_new_chat_leaves_the_new_chat_form_the_user_is_filling_in(
    make_server: Any, browser: Any
) -> None:
    # the form was emptied as the slow one was made: what the user had typed since went
    server, page, y, held = slow_new_chat(make_server, browser)
    goes_live(page, lambda: go(page, y["id"]))
    page.evaluate("() => { location.hash = '#/new'; }")  # back to New chat, for another one
    expect(page.locator("#new-view")).to_be_visible()
    page.locator("#new-title-input").fill("chat next")
    page.get_by_label("Folder inside it (optional)").fill("next")
    held[0].continue_()
    expect(page.locator("#announce")).to_have_text(  # (said once the page is done with it)
        "The new chat “chat slow” was created: it is in the list.")
    with server.client() as c:
        (chat,) = [ch for ch in c.get("/api/chats").json()["chats"] if ch["title"] == "chat slow"]
    expect(page.locator(item(chat["id"]))).to_be_visible()
    expect(page.locator("#new-view")).to_be_visible()
    expect(page.locator("#new-title-input")).to_have_value("chat next")
    expect(page.get_by_label("Folder inside it (optional)")).to_have_value("next")
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_slow_new_chat_opens_when_the_user_stayed(make_server: Any, browser: Any) -> None:
    _, page, _, held = slow_new_chat(make_server, browser)
    held[0].continue_()
    expect(page.locator("#chat-title")).to_have_text("chat slow")
    expect(page.locator("#conn")).to_have_text("Live")
    page.evaluate("() => { location.hash = '#/new'; }")  # the form, emptied
    expect(page.locator("#new-title-input")).to_have_value("")
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_second_submit_while_a_new_chat_is_on_its_way_makes_no_second_chat(
    make_server: Any, browser: Any
) -> None:
    # the form was emptied only once the chat was made: Enter again meanwhile sent it again
    server, page, _, held = slow_new_chat(make_server, browser)
    page.locator("#new-title-input").press("Enter")  # the same form again, the first still held
    expect(page.locator("#announce")).to_have_text("This chat is already being created.")
    expect(page.locator("#new-status")).to_be_visible()  # (seen too, not only heard)
    expect(page.locator("#new-status")).to_have_text("This chat is already being created.")
    held[0].continue_()
    expect(page.locator("#chat-title")).to_have_text("chat slow")
    expect(page.locator("#conn")).to_have_text("Live")
    assert len(held) == 1  # (the first only: no second request was made)
    page.evaluate("() => { location.hash = '#/new'; }")  # the form again: the line went with its chat
    expect(page.locator("#new-view")).to_be_visible()
    expect(page.locator("#new-status")).to_be_hidden()
    with server.client() as c:
        titles = [ch["title"] for ch in c.get("/api/chats").json()["chats"]]
    assert titles.count("chat slow") == 1
    assert page.errors == []  # type: ignore[attr-defined]
