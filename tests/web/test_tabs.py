"""Several tabs, the keyboard and the browser's navigation (review "tabs", 2026-11-24): a prompt
waiting for a run to end goes to the chat it was typed in or nowhere; a list with "More chats"
shown drops a chat deleted elsewhere; a chat that failed to open opens on the next click; Esc
closes the Chats menu and leaves an input method's composition alone; the skip link keeps the
chat open; a sign-out in another tab shows the sign-in form; the page retries its settings."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Page, expect
from server_helpers import Server, new_chat
from test_ui import goes_live, open_chat, open_ui, send

HELD = {"CURSOR_AGENT_SIM_FAULT": "silence"}
"""The agent: ``system/init``, then nothing until stopped (a run that stays running)."""
SIGNED_OUT = "You were signed out"


def item(chat_id: str) -> str:
    return f'#chat-list .chat-item[data-chat-id="{chat_id}"]'


def titled(c: Any, title: str) -> dict[str, Any]:
    chat = new_chat(c)
    assert c.patch(f"/api/chats/{chat['id']}", json={"title": title}).status_code == 200
    return {**chat, "title": title}


def prompts(c: Any, chat: dict[str, Any]) -> list[str]:
    return [r["prompt"] for r in c.get(f"/api/chats/{chat['id']}/runs").json()["runs"]]


def cancel_all(server: Server, *chats: dict[str, Any]) -> None:
    with server.client() as c:
        for chat in chats:
            for run in c.get(f"/api/chats/{chat['id']}/runs").json()["runs"]:
                if run["status"] in ("queued", "running"):
                    c.post(f"/api/runs/{run['id']}/cancel")


def test_a_prompt_waiting_for_a_run_is_not_sent_to_the_chat_opened_meanwhile(
    make_server: Any, browser: Any
) -> None:
    """It waited up to 3 s for the run to end, then went to whatever chat was open: Back sent
    it to the previous chat; New chat threw "Cannot read properties of null". (The page's
    clock runs when the test says: the 3 s never end before the test has left the chat.)"""
    server = make_server(sim_env=HELD)
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
    page = paused(browser, server)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    open_chat(page, server, y["id"])
    open_chat(page, server, x["id"])  # the history: Y, then X
    send(page, "first prompt for X")
    expect(page.locator("#stop-button")).to_be_visible()  # X's run goes on (held)
    send(page, "second prompt for X")  # waits for the run to end
    page.go_back()
    expect(page.locator("#chat-title")).to_have_text("chat Y")
    page.clock.run_for(100)  # the wait looks again (every 50 ms)
    expect(page.locator("#alert")).to_contain_text("“chat X” was not sent")
    expect(page.get_by_label("Prompt")).to_have_value("")  # not in Y's box
    with server.client() as c:
        assert prompts(c, x) == ["first prompt for X"] and prompts(c, y) == []
    page.go_forward()  # back in X: the prompt is back in its box
    expect(page.locator("#chat-title")).to_have_text("chat X")
    expect(page.get_by_label("Prompt")).to_have_value("second prompt for X")

    page.get_by_label("Prompt").press("Enter")  # waits again; the user goes to New chat
    page.get_by_role("button", name="New chat").click()
    expect(page.locator("#new-view")).to_be_visible()
    page.clock.run_for(100)
    expect(page.locator("#alert")).to_contain_text("“chat X” was not sent")
    with server.client() as c:
        assert prompts(c, x) == ["first prompt for X"] and prompts(c, y) == []
    assert errors == []
    cancel_all(server, x)


def test_allow_tools_runs_again_in_its_own_chat_when_the_page_left_it(
    make_server: Any, browser: Any
) -> None:
    """The offer sets the options, then sends the prompt again: to the open chat, which was
    another one if the page went there meanwhile."""
    server = make_server()
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
    page = open_ui(browser, server)
    open_chat(page, server, x["id"])
    send(page, "run `echo allowed`")
    offer = page.get_by_role("button", name="Allow tools for this chat and run again")
    held: list[Any] = []  # the PATCH of X's options, answered once the page is on Y
    page.route(f"**/api/chats/{x['id']}", lambda r: held.append(r) if r.request.method == "PATCH"
               else r.continue_())
    offer.click()
    open_chat(page, server, y["id"])
    expect(page.locator("#chat-title")).to_have_text("chat Y")
    assert len(held) == 1
    with page.expect_request(lambda r: r.method == "POST" and r.url.endswith("/runs")) as sent:
        held[0].continue_()
    assert f"/api/chats/{x['id']}/runs" in sent.value.url
    response = sent.value.response()
    assert response is not None and response.ok, response
    with server.client() as c:
        assert prompts(c, y) == []
        assert c.get(f"/api/chats/{x['id']}").json()["options"]["force"] is True
    assert page.errors == []  # type: ignore[attr-defined]
    cancel_all(server, x)


CHATS = 205  # more than a page of the list (200): "More chats" shows the rest


def paused(context: Any, server: Server, fragment: str = "") -> Page:
    """A page whose timers (the list's refresh) run only when the test says (the page loads
    without any: fetches are not timers)."""
    page: Page = context.new_page()
    page.clock.install()
    page.clock.pause_at(time.time() + 1)  # (Python: seconds) before the page has any timer
    page.goto(f"{server.url}/?token={server.token}{fragment}")
    expect(page.locator("#chat-list .chat-item").first).to_be_attached()
    return page


HEALTH_READ = r"""
(() => {
  const realFetch = window.fetch.bind(window);
  window.__healthRead = 0; // GET /api/health answers the page has read: a refresh's last request
  window.fetch = async (input, init) => {
    const response = await realFetch(input, init);
    if (!String(input instanceof Request ? input.url : input).endsWith("/api/health")) return response;
    const json = response.json.bind(response);
    response.json = async () => {
      try {
        return await json();
      } finally {
        window.__healthRead += 1;
      }
    };
    return response;
  };
})();
"""


def refreshed(page: Page, act: Callable[[], object]) -> None:
    """Do ``act`` (which refreshes the list), then wait until that refresh has read its health
    check, and so has set the timer of the next one (the same turn of the page's event loop):
    the list drawn is not enough, the page's clock moved before that timer is set fires none.
    Needs :data:`HEALTH_READ` (an init script)."""
    before = page.evaluate("() => window.__healthRead")
    act()
    page.wait_for_function("(n) => window.__healthRead > n", arg=before)


def test_an_expanded_list_drops_the_chats_deleted_in_another_tab(make_server: Any, browser: Any) -> None:
    """With "More chats" shown, a refresh kept the pages it did not fetch again as they were:
    a chat deleted elsewhere stayed listed for good, even after opening it said it was gone."""
    server = make_server()
    with server.client() as c:
        chats = [new_chat(c) for _ in range(CHATS)]
    newest, oldest, old = chats[-1], chats[0], chats[1]  # first listed; the last two
    browser.add_init_script(HEALTH_READ)
    page = paused(browser, server)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    expect(page.locator("#chat-list .chat-item")).to_have_count(200)
    page.wait_for_function("() => window.__healthRead >= 1")  # the load's own refresh is over
    refreshed(page, lambda: page.get_by_role("button", name="More chats").click())
    expect(page.locator("#chat-list .chat-item")).to_have_count(CHATS)

    with server.client() as c:  # another tab deletes one on each page
        for chat in (newest, oldest):
            assert c.delete(f"/api/chats/{chat['id']}").status_code == 204
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "/api/chats?" in r.url else None)
    refreshed(page, lambda: page.clock.run_for(11_000))  # the next refresh
    expect(page.locator("#chat-list .chat-item")).to_have_count(CHATS - 2)
    for chat in (newest, oldest):
        expect(page.locator(item(chat["id"]))).to_have_count(0)
    assert any("limit=1&" in u for u in asked)  # the one chat asked for, then every page again
    assert any("offset=200" in u for u in asked)

    asked.clear()  # nothing changed since: the first page and the one chat only
    refreshed(page, lambda: page.clock.run_for(11_000))
    expect(page.locator("#chat-list .chat-item")).to_have_count(CHATS - 2)
    assert [u.split("?")[1] for u in asked] == ["limit=200&offset=0", f"limit=1&offset={CHATS - 3}"]

    with server.client() as c:  # deleted elsewhere, opened here before any refresh
        assert c.delete(f"/api/chats/{old['id']}").status_code == 204
    page.locator(item(old["id"]) + " a").click()
    expect(page.locator("#alert")).to_have_text("That chat does not exist on this server.")
    expect(page.locator(item(old["id"]))).to_have_count(0)
    expect(page.locator("#chat-list .chat-item")).to_have_count(CHATS - 3)
    assert errors == []


def test_a_chat_that_failed_to_open_opens_on_the_next_click(make_server: Any, browser: Any) -> None:
    """Its address was already the chat's: a click changed nothing; and the alert that the
    server could not be reached stayed once it answered again."""
    server = make_server()
    with server.client() as c:
        chat = titled(c, "chat X")
    page = paused(browser, server)
    link = page.locator(item(chat["id"]) + " a")
    page.route("**/api/chats/**", lambda r: r.abort())  # the server cannot be reached
    link.click()
    expect(page.locator("#alert")).to_contain_text("cannot be reached")
    expect(page.locator("#welcome-view")).to_be_visible()
    page.unroute("**/api/chats/**")
    page.clock.run_for(11_000)  # the list's refresh: the server answers again
    expect(page.locator("#alert")).to_be_hidden()
    link.click()
    expect(page.locator("#chat-title")).to_have_text("chat X")

    page.route("**/api/chats/**", lambda r: r.abort())  # and by keyboard
    page.get_by_role("button", name="New chat").click()
    expect(page.locator("#new-view")).to_be_visible()  # X closed (else the link reopens it as open)
    link.click()
    expect(page.locator("#alert")).to_contain_text("cannot be reached")
    page.unroute("**/api/chats/**")
    link.focus()
    goes_live(page, lambda: page.keyboard.press("Enter"))  # (the title still says "chat X")
    expect(page.locator("#chat-title")).to_have_text("chat X")


STOPPING = "() => document.getElementById('run-state').textContent"
MENU_OPEN = re.compile(r"\bmenu-open\b")


def test_escape_for_an_input_method_or_the_chats_menu_does_not_stop_the_run(
    make_server: Any, browser: Any
) -> None:
    server = make_server(sim_env=HELD)
    with server.client() as c:
        chat = titled(c, "chat X")
    page = open_ui(browser, server)
    open_chat(page, server, chat["id"])
    send(page, "start")
    expect(page.locator("#run-state")).to_have_text("The agent is working…")
    page.get_by_label("Prompt").fill("にほんご")
    # the Esc that ends a composition (dispatched: Playwright has no input method)
    state = page.evaluate("""() => {
      document.getElementById('prompt').dispatchEvent(new KeyboardEvent('keydown',
        { key: 'Escape', isComposing: true, bubbles: true, cancelable: true }));
      return document.getElementById('run-state').textContent;
    }""")
    assert state == "The agent is working…"

    page.set_viewport_size({"width": 375, "height": 700})  # the list is a menu
    page.get_by_role("button", name="Chats").click()
    expect(page.locator("body")).to_have_class(MENU_OPEN)
    page.keyboard.press("Escape")
    expect(page.locator("body")).not_to_have_class(MENU_OPEN)
    expect(page.get_by_role("button", name="Chats")).to_be_focused()
    assert page.evaluate(STOPPING) == "The agent is working…"
    page.keyboard.press("Escape")  # now it stops the run
    expect(page.locator("#stop-button")).to_be_hidden()
    with server.client() as c:
        assert [r["status"] for r in c.get(f"/api/chats/{chat['id']}/runs").json()["runs"]] == ["cancelled"]
    assert page.errors == []  # type: ignore[attr-defined]


def test_the_skip_link_focuses_the_prompt_and_the_chat_stays_open(make_server: Any, browser: Any) -> None:
    server = make_server()
    with server.client() as c:
        chat = titled(c, "chat X")
    page = open_ui(browser, server)
    open_chat(page, server, chat["id"])
    page.get_by_label("Prompt").fill("a draft")
    page.get_by_role("link", name="Skip to the prompt").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_label("Prompt")).to_be_focused()
    expect(page.locator("#chat-view")).to_be_visible()
    assert page.evaluate("location.hash") == f"#/chat/{chat['id']}"
    expect(page.get_by_label("Prompt")).to_have_value("a draft")
    expect(page.locator("#conn")).to_have_text("Live")
    page.goto(f"{server.url}/#/new")  # no chat open: the view's first field
    expect(page.locator("#new-view")).to_be_visible()  # (the page goes there at its hash change)
    page.get_by_role("link", name="Skip to the prompt").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_label("Workspace root")).to_be_focused()
    assert page.evaluate("location.hash") == "#/new"
    assert page.errors == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("how", ["Sign out", "ended"])
def test_after_a_sign_out_in_another_tab_the_other_tabs_show_the_sign_in_form(
    make_server: Any, browser: Any, how: str
) -> None:
    # Sign out pressed in a tab: the others hear it (kept.js: its message) and show the sign-in
    # form at once; a session ended otherwise (signed out with the cookie by another browser's
    # tab, expired): at their next action
    from test_kept_prompts import signed_out_elsewhere_now

    server = make_server()
    with server.client() as c:
        chat = titled(c, "chat X")
    tab = open_ui(browser, server)
    # (their lists' refresh, which would show the sign-in form by itself, waits for the test)
    creating, opening = paused(browser, server, "#/new"), paused(browser, server)
    expect(creating.locator("#new-view")).to_be_visible()
    expect(opening.locator(item(chat["id"]))).to_be_visible()
    if how == "Sign out":
        tab.get_by_role("button", name="Sign out").click()
        expect(tab.locator("#login-view")).to_be_visible()
    else:
        signed_out_elsewhere_now(tab, server)
        creating.get_by_role("button", name="Create chat").click()
        opening.locator(item(chat["id"]) + " a").click()
    for page in (creating, opening):
        expect(page.locator("#login-view")).to_be_visible()
        expect(page.locator("#alert")).to_have_text(f"{SIGNED_OUT}: sign in again.")
        expect(page.locator("#new-view")).to_be_hidden()
        expect(page.locator("#sidebar")).to_be_hidden()
    with server.client() as c:
        assert [ch["id"] for ch in c.get("/api/chats").json()["chats"]] == [chat["id"]]  # (none created)


def test_the_page_tries_its_settings_again_when_they_fail_at_load(make_server: Any, browser: Any) -> None:
    server = make_server()
    with server.client() as c:
        chat = titled(c, "chat X")
    open_ui(browser, server)  # signed in (the context's cookie)
    page: Page = browser.new_page()
    page.add_init_script(ALERTS)
    calls: list[str] = []

    def first_fails(route: Any) -> None:  # the server restarting as the page loads
        calls.append(route.request.url)
        route.abort() if len(calls) == 1 else route.continue_()

    page.route("**/api/config", first_fails)
    page.goto(f"{server.url}/#/chat/{chat['id']}")
    expect(page.locator("#chat-title")).to_have_text("chat X")
    expect(page.locator("#conn")).to_have_text("Live")
    expect(page.locator("#alert")).to_be_hidden()
    assert len(calls) == 2
    said = page.evaluate("() => window.__alerts")
    assert any("Trying again in 1 s (or reload the page)" in a for a in said), said


ALERTS = """new MutationObserver(() => {
  const text = document.getElementById('alert')?.textContent;
  if (text) (window.__alerts ||= []).push(text);
}).observe(document, { subtree: true, childList: true, characterData: true });"""
