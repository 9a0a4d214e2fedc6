"""A chat that is opening (its folded state asked for, a slow or large chat): the page goes
to it at once. It showed the chat before's header and conversation until the server
answered, so for a moment chat A's turns stood under chat B's address (and the box looked like
A's). Now the chat view says "Loading…" under the chat's title (the list's, if it lists it),
with nothing of the chat before, the box taking no typing and Send, Options and Delete off until
the chat is open; and an answer for a chat the page has left since paints nothing.

The chat's own GET is held with Playwright's ``route`` (its handler keeps the route, and the
test lets it go on), not with sleeps."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import Page, Route, expect
from server_helpers import wait_run
from test_kept_prompts import titled
from test_prompt_in_flight import go, paused_page, prompts
from test_session_ended import counting_reads
from test_ui import goes_live


def with_turn(c: Any, title: str) -> dict[str, Any]:
    """A chat titled ``title`` with one turn over, whose prompt is "hello <title>"."""
    chat = titled(c, title)
    run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": f"hello {title}"}).json()
    assert wait_run(c, run["id"])["status"] == "succeeded"
    return chat


def hold(page: Page, pattern: str | re.Pattern[str]) -> list[Route]:
    """Requests to ``pattern`` kept (not answered) until the test lets them go on: the list
    they are added to."""
    held: list[Route] = []
    page.route(pattern, lambda route: held.append(route))
    return held


def until_held(page: Page, held: list[Route], count: int = 1) -> None:
    """Until ``count`` requests are held (the route's handler runs while the page is waited on)."""
    for _ in range(1200):
        if len(held) >= count:
            return
        page.wait_for_timeout(50)
    raise AssertionError(f"{len(held)} of {count} requests held")


def expect_opening(page: Page, title: str, chat_id: str) -> None:
    """The chat view says the chat ``chat_id`` is loading, under ``title``; nothing of another chat
    shows, and nothing can be sent, changed or deleted yet."""
    expect(page.locator("#chat-view")).to_be_visible()
    for view in ("#welcome-view", "#new-view", "#login-view"):
        expect(page.locator(view)).to_be_hidden()
    expect(page.locator("#chat-title")).to_have_text(title)
    expect(page.locator("#timeline")).to_have_text("Loading the conversation…")
    expect(page.locator("#chat-meta")).to_have_text("")
    expect(page.locator("#result-bar")).to_be_hidden()
    expect(page.locator("#conn")).to_have_text("")
    expect(page.get_by_label("Prompt")).not_to_be_editable()
    for name in ("Send", "Options", "Delete"):
        expect(page.locator("#chat-view").get_by_role("button", name=name)).to_be_disabled()
    expect(page.locator(f'.chat-item[data-chat-id="{chat_id}"] a')).to_have_attribute("aria-current", "page")
    expect(page.locator('.chat-item a[aria-current="page"]')).to_have_count(1)


def expect_open(page: Page, title: str) -> None:
    """The chat titled ``title`` is open: its turn shown, the box and its buttons usable."""
    expect(page.locator("#chat-title")).to_have_text(title)
    expect(page.locator("#timeline .msg.user")).to_have_text([f"You: hello {title}"])
    expect(page.locator("#timeline")).not_to_contain_text("Loading")
    expect(page.get_by_label("Prompt")).to_be_editable()
    for name in ("Send", "Options", "Delete"):
        expect(page.locator("#chat-view").get_by_role("button", name=name)).to_be_enabled()


def test_a_chat_opening_shows_at_once_loading_with_nothing_of_the_chat_before(
    make_server: Any, browser: Any
) -> None:
    server = make_server()
    with server.client() as c:
        x, y = with_turn(c, "chat X"), with_turn(c, "chat Y")
        page, errors = paused_page(browser, server)  # (the list is not refreshed: Z is not in it)
        goes_live(page, lambda: go(page, x["id"]))
        expect_open(page, "chat X")
        z = with_turn(c, "chat Z")  # created elsewhere since the list was fetched

        held = hold(page, f"**/api/chats/{y['id']}")  # Y's folded state comes when the test says
        go(page, y["id"])
        until_held(page, held)
        expect_opening(page, "chat Y", y["id"])  # its title from the list; X's turn gone
        assert page.title() == "chat Y — cursor-agent-api"
        page.get_by_label("Prompt").press("Enter")  # nothing to send, to X or anywhere
        held[0].continue_()
        expect(page.locator("#conn")).to_have_text("Live")
        expect_open(page, "chat Y")

        held = hold(page, f"**/api/chats/{z['id']}")
        go(page, z["id"])
        until_held(page, held)
        expect(page.locator("#chat-title")).to_have_text("Loading…")  # not listed: no title yet
        expect(page.locator("#timeline")).to_have_text("Loading the conversation…")
        expect(page.get_by_label("Prompt")).not_to_be_editable()
        assert page.title() == "cursor-agent-api"
        held[0].continue_()
        expect(page.locator("#conn")).to_have_text("Live")
        expect_open(page, "chat Z")
        assert page.title() == "chat Z — cursor-agent-api"
        for chat, title in ((x, "chat X"), (y, "chat Y"), (z, "chat Z")):
            assert prompts(c, chat["id"]) == [f"hello {title}"]
    assert errors == []


@pytest.mark.parametrize("answer", ["the chat", "404"])
def test_an_answer_for_a_chat_left_while_it_opened_paints_nothing(
    make_server: Any, browser: Any, answer: str
) -> None:
    # A, held, then B (opened at once): A's answer, arriving after B is open, must not show A
    # (or, for a 404, the welcome view saying A does not exist) over B
    server = make_server()
    with server.client() as c:
        x, a, b = with_turn(c, "chat X"), with_turn(c, "chat A"), with_turn(c, "chat B")
    browser.add_init_script(counting_reads("__readA", f'String(input).includes("/api/chats/{a["id"]}")'))
    page, errors = paused_page(browser, server)
    goes_live(page, lambda: go(page, x["id"]))
    held = hold(page, re.compile(rf".*/api/chats/{a['id']}(/turns\?.*)?$"))  # its state and turns
    go(page, a["id"])
    until_held(page, held, 2)
    expect_opening(page, "chat A", a["id"])
    goes_live(page, lambda: go(page, b["id"]))
    expect_open(page, "chat B")
    for route in held:
        if answer == "404":
            route.fulfill(status=404, json={"detail": "no such chat"})
        else:
            route.continue_()
    page.wait_for_function("() => window.__readA >= 2")  # A's answers read, and handled
    expect_open(page, "chat B")
    expect(page.locator("#chat-view")).to_be_visible()
    expect(page.locator("#alert")).to_be_hidden()
    expect(page.locator("#conn")).to_have_text("Live")
    expect(page.locator(f'.chat-item[data-chat-id="{b["id"]}"] a')).to_have_attribute("aria-current", "page")
    expect(page.locator(f'.chat-item[data-chat-id="{a["id"]}"]')).to_have_count(1)  # (not dropped)
    assert page.evaluate("location.hash") == f"#/chat/{b['id']}"
    assert errors == []


@pytest.mark.parametrize("how", ["404", "500", "no answer"])
def test_a_chat_that_did_not_open_leaves_neither_its_title_nor_its_place_in_the_list(
    make_server: Any, browser: Any, how: str
) -> None:
    # The chat showed as it opened (its title in the tab, its item the list's current page); once
    # it failed, the tab still named it, and after a 500 or no answer its item stayed current.
    server = make_server()
    with server.client() as c:
        x, y = with_turn(c, "chat X"), with_turn(c, "chat Y")
    page, errors = paused_page(browser, server)
    goes_live(page, lambda: go(page, x["id"]))
    held = hold(page, f"**/api/chats/{y['id']}")
    go(page, y["id"])
    until_held(page, held)
    expect_opening(page, "chat Y", y["id"])
    assert page.title() == "chat Y — cursor-agent-api"
    if how == "no answer":
        held[0].abort()
    else:
        held[0].fulfill(status=int(how), json={"detail": "boom"})
    expect(page.locator("#welcome-view")).to_be_visible()
    expect(page.locator("#alert")).to_have_text(
        "That chat does not exist on this server." if how == "404" else re.compile("^The chat did not open: ")
    )
    assert page.title() == "cursor-agent-api"
    expect(page.locator(".chat-item a[aria-current]")).to_have_count(0)
    assert errors == []


COUNT_CHAT_GETS = r"""
(() => {
  const realFetch = window.fetch.bind(window);
  window.__chatGets = {};
  window.fetch = (input, init) => {
    const path = new URL(String(input), location.href).pathname;
    const m = path.match(/^\/api\/chats\/([^/]+)$/);
    if (m && (init?.method || "GET") === "GET") {
      const id = decodeURIComponent(m[1]);
      window.__chatGets[id] = (window.__chatGets[id] || 0) + 1;
    }
    return realFetch(input, init);
  };
})();
"""
"""The GETs of each chat's state the page has asked for, as it asks: ``window.__chatGets[id]``."""


def test_a_chat_clicked_again_while_it_opens_is_asked_for_once(make_server: Any, browser: Any) -> None:
    # Review 15: a click on the list entry of a chat still loading asked for it again (a second
    # GET while the first was on its way): it is already opening, nothing happens
    server = make_server()
    with server.client() as c:
        x, y = with_turn(c, "chat X"), with_turn(c, "chat Y")
    browser.add_init_script(COUNT_CHAT_GETS)
    page, errors = paused_page(browser, server)
    goes_live(page, lambda: go(page, x["id"]))
    held = hold(page, f"**/api/chats/{y['id']}")
    link = page.locator(f'.chat-item[data-chat-id="{y["id"]}"] a')
    link.click()
    until_held(page, held)
    expect_opening(page, "chat Y", y["id"])
    link.click()  # (its handler runs in the click: a GET would be counted as it returns)
    link.press("Enter")
    assert page.evaluate(f"() => window.__chatGets['{y['id']}']") == 1
    expect_opening(page, "chat Y", y["id"])
    for route in held:
        route.continue_()
    expect(page.locator("#conn")).to_have_text("Live")
    expect_open(page, "chat Y")
    assert page.evaluate(f"() => window.__chatGets['{y['id']}']") == 1
    assert len(held) == 1
    assert errors == []
