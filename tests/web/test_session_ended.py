"""Every 401 the page gets (its session ended: signed out in another tab, expired, the server
restarted with a new token) leads to the same sign-in form, saying "You were signed out: sign in
again." once, whichever request got it (api.js decides it for all of them; the sign-in
requests' own 401 means something else). The stream's repeated failures (its check of the
session) showed the form without a word, and Stop answered 401 said "Could not stop the run"
over the chat as if nothing had ended.

A session that ends with a request of the list on its way, and a 401 after Sign out and Back,
are tested at the end. Other paths are tested where they live: a prompt (test_kept_prompts), "Show all"
(test_card_fields), creating and opening a chat (test_tabs), the stream closed with 4401
(test_signed_out_stream)."""

from __future__ import annotations

from typing import Any

import pytest
from live_regions import announced, record
from playwright.sync_api import Page, Route, expect
from server_helpers import new_chat, wait_run
from test_kept_prompts import (
    sign_in,
    signed_in_elsewhere,
    signed_out_elsewhere,
    signed_out_elsewhere_now,
    titled,
)
from test_prompt_in_flight import HELD_RUN, go, paused_page
from test_request_focus import acp_chat
from test_tabs import paused
from test_ui import goes_live, open_chat, open_ui, send

SIGNED_OUT = "You were signed out: sign in again."


def counting_reads(counter: str, counted: str) -> str:
    """An init script: ``window[counter]`` counts the answers the page has read (their JSON;
    its handling of each over in the same turn) among those for which the JavaScript expression
    ``counted`` (of ``response`` and ``input``) is true."""
    return r"""
(() => {
  const realFetch = window.fetch.bind(window);
  window.COUNTER = 0;
  window.fetch = async (input, init) => {
    const response = await realFetch(input, init);
    if (!(COUNTED)) return response;
    const json = response.json.bind(response);
    response.json = async () => {
      try {
        return await json();
      } finally {
        window.COUNTER += 1;
      }
    };
    return response;
  };
})();
""".replace("COUNTER", counter).replace("COUNTED", counted)


COUNT_401_READ = counting_reads("__read401", "response.status === 401")
"""Answers 401 the page has read: ``window.__read401``."""

COUNT_LISTS_READ = counting_reads("__listsRead", 'String(input).includes("/api/chats?")')
"""Chats lists the page has read: ``window.__listsRead``."""



def answer_401(page: Any, pattern: str, method: str = "") -> None:
    """Requests to ``pattern`` (of ``method``, if given) answered 401, as for an ended session
    (``page``: a page, or a browser context: its pages from their first load)."""

    def handle(route: Route) -> None:
        if method and route.request.method != method:
            route.continue_()
        else:
            route.fulfill(status=401, json={"detail": "authentication required"})

    page.route(pattern, handle)


def expect_signed_out(page: Page, *, recorded: bool = True) -> None:
    """The sign-in form, its token field focused, saying why: said once since ``record``
    (unless not ``recorded``)."""
    expect(page.locator("#login-view")).to_be_visible()
    expect(page.locator("#alert")).to_have_text(SIGNED_OUT)
    expect(page.get_by_label("Token")).to_be_focused()
    expect(page.locator("#chat-view")).to_be_hidden()
    if not recorded:
        return
    heard = [h for h in announced(page) if "signed out" in h.lower() or "sign in" in h.lower()]
    assert heard == [SIGNED_OUT], heard


def test_a_server_restarted_with_a_new_token_shows_the_sign_in_form_saying_why(
    make_server: Any, browser: Any
) -> None:
    # the stream's reconnections are refused (401 at the upgrade); after three, the page asks
    # GET /api/health, which says 401: the sign-in form showed, with no word of why
    first = make_server()
    with first.client() as c:
        chat = new_chat(c)
    page = paused(browser, first)  # (its timers run when the test says: the stream's backoff)
    goes_live(page, lambda: go(page, chat["id"]))
    record(page)
    conn = page.locator("#conn")
    first.stop()
    expect(conn).to_have_attribute("title", "reconnecting in 0.3 s")  # (the socket it had closed)
    second = make_server(args=["--port", str(first.port)])
    assert second.token != first.token
    for wait, next_title in ((250, "reconnecting in 0.5 s"), (500, "reconnecting in 1 s")):
        page.clock.run_for(wait)
        expect(conn).to_have_attribute("title", next_title)  # one more refused reconnection
    page.clock.run_for(1000)  # the third: the page checks its session
    expect_signed_out(page)
    assert page.evaluate("() => document.body.classList.contains('signed-out')")


def test_stop_answered_401_shows_the_sign_in_form(make_server: Any, browser: Any) -> None:
    server = make_server(sim_env=HELD_RUN)
    with server.client() as c:
        chat = new_chat(c)
        page = open_ui(browser, server)
        open_chat(page, server, chat["id"])
        send(page, "list the files")
        stop = page.get_by_role("button", name="Stop")
        expect(stop).to_be_visible()
        answer_401(page, "**/api/runs/*/cancel")
        record(page)
        stop.click()
        expect_signed_out(page)
        assert "Could not stop" not in (page.locator("#alert").text_content() or "")
        run = c.get(f"/api/chats/{chat['id']}/runs").json()["runs"][0]
        assert c.post(f"/api/runs/{run['id']}/cancel").status_code == 200
        assert wait_run(c, run["id"])["status"] == "cancelled"
        assert page.errors == []  # type: ignore[attr-defined]


def test_an_answer_to_an_approval_answered_401_shows_the_sign_in_form(
    make_server: Any, browser: Any
) -> None:
    server = make_server()
    page = acp_chat(browser, server)
    page.get_by_label("Prompt").fill("run `echo approve-me`")
    page.get_by_label("Prompt").press("Enter")
    card = page.locator(".card.request-permission").first
    expect(card).to_be_visible()
    answer_401(page, "**/api/runs/*/requests/*")
    record(page)
    card.get_by_role("button", name="Reject").click()
    expect_signed_out(page)
    with server.client() as c:
        (chat,) = c.get("/api/chats").json()["chats"]
        run = c.get(f"/api/chats/{chat['id']}/runs").json()["runs"][0]
        assert c.post(f"/api/runs/{run['id']}/cancel").status_code == 200
        assert wait_run(c, run["id"])["status"] == "cancelled"
    assert page.errors == []  # type: ignore[attr-defined]


def test_show_earlier_turns_answered_401_shows_the_sign_in_form(make_server: Any, browser: Any) -> None:
    # it said "Could not load earlier turns (authentication required): try again"
    server = make_server()
    with server.client() as c:
        chat = new_chat(c)
    page = open_ui(browser, server)

    def more_than_shown(route: Route) -> None:
        if "before_run=" in route.request.url:
            route.fulfill(status=401, json={"detail": "authentication required"})
            return
        turns = route.fetch().json()  # the chat's first page, said to have more before it
        route.fulfill(json={**turns, "has_more": True, "next_before_run": "r-earlier"})

    page.route(f"**/api/chats/{chat['id']}/turns*", more_than_shown)
    open_chat(page, server, chat["id"])
    earlier = page.get_by_role("button", name="Show earlier turns")
    expect(earlier).to_be_visible()
    record(page)
    earlier.click()
    expect_signed_out(page)
    assert page.errors == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("action", ["delete", "options"])
def test_the_open_chats_own_actions_answered_401_show_the_sign_in_form(
    make_server: Any, browser: Any, action: str
) -> None:
    server = make_server()
    with server.client() as c:
        chat = new_chat(c)
    page = open_ui(browser, server)
    open_chat(page, server, chat["id"])
    answer_401(page, f"**/api/chats/{chat['id']}", "DELETE" if action == "delete" else "PATCH")
    record(page)
    if action == "delete":
        page.once("dialog", lambda d: d.accept())
        page.get_by_role("button", name="Delete").click()
    else:
        page.get_by_role("button", name="Options").click()
        page.get_by_role("button", name="Save options").click()
    expect_signed_out(page)
    with server.client() as c:
        assert c.get(f"/api/chats/{chat['id']}").status_code == 200  # (not deleted)
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_chat_whose_two_requests_are_answered_401_says_it_once(make_server: Any, browser: Any) -> None:
    # the chat and its turns are asked for at once: both answers are 401, one sign-in form
    server = make_server()
    with server.client() as c:
        chat = new_chat(c)
    browser.add_init_script(COUNT_401_READ)
    page = open_ui(browser, server)
    expect(page.locator("#welcome-view")).to_be_visible()
    answer_401(page, f"**/api/chats/{chat['id']}")
    answer_401(page, f"**/api/chats/{chat['id']}/turns*")
    record(page)
    go(page, chat["id"])
    page.wait_for_function("() => window.__read401 >= 2")  # (the page has read both, and done with them)
    expect_signed_out(page)
    assert page.evaluate("() => window.__read401") == 2
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_session_ending_as_the_page_loads_leaves_the_sign_in_form(
    make_server: Any, browser: Any
) -> None:
    # the settings came, then the chats list was answered 401: the sign-in form showed, and the
    # page went on to its route, which put the welcome view over it with no word
    server = make_server()
    answer_401(browser, "**/api/chats?*")
    page = open_ui(browser, server)
    expect_signed_out(page, recorded=False)
    expect(page.locator("#welcome-view")).to_be_hidden()
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_list_asked_before_the_session_ended_and_answered_after_keeps_the_box_for_the_sign_in(
    make_server: Any, browser: Any
) -> None:
    # A refresh of the list, let in just before another tab signed out, answered after the
    # stream's 4401 showed the sign-in form: its answer said "signed in" again, so the text typed
    # in the open chat's box was not kept across the sign-in's reload (review 6 of the one 401
    # path; on the code before, a later refresh's 401 mended it within 10 s, unless one signed
    # in first)
    server = make_server()
    with server.client() as c:
        x = titled(c, "chat X")
    browser.add_init_script(COUNT_LISTS_READ)
    page, errors = paused_page(browser, server)
    goes_live(page, lambda: go(page, x["id"]))
    page.get_by_label("Prompt").fill("typed for X, not sent")
    held: list[Any] = []

    def hold(route: Route) -> None:
        if held:
            route.continue_()
        else:
            held.append((route, route.fetch()))  # answered while the session is good

    page.route("**/api/chats?*", hold)
    read = page.evaluate("() => window.__listsRead")
    page.clock.run_for(11_000)  # the next refresh of the list
    for _ in range(1200):  # (the handler runs while the page is waited on: fetched, held)
        if held:
            break
        page.wait_for_timeout(50)
    assert held, "the list's refresh did not come"
    with server.client() as c:  # another tab signs out: the server deletes the page's session
        cookie = "; ".join(f"{k['name']}={k['value']}" for k in page.context.cookies())
        assert c.post("/api/auth/logout", headers={"Cookie": cookie}).status_code == 204
    expect(page.locator("#alert")).to_have_text(SIGNED_OUT)  # the stream's 4401
    route, response = held[0]
    route.fulfill(response=response)
    page.wait_for_function("n => window.__listsRead > n", arg=read)  # the old answer read, handled
    page.unroute("**/api/chats?*")
    sign_in(page, server.token)
    expect(page.locator("#conn")).to_have_text("Live")  # back in chat X (its address)
    expect(page.get_by_label("Prompt")).to_have_value("typed for X, not sent")
    assert errors == []


def hash_handled(page: Page, fragment: str) -> None:
    """The page's address to ``fragment`` (as Back or a link takes it), once the page has
    handled it (its own handler, added at its load, runs before this one's timer)."""
    page.evaluate("""(fragment) => new Promise((done) => {
      addEventListener("hashchange", () => setTimeout(done, 0), { once: true });
      location.hash = fragment;
    })""", fragment)


def test_after_sign_out_back_and_links_leave_the_sign_in_form_saying_why(
    make_server: Any, browser: Any
) -> None:
    # After Sign out, Back to the welcome view or to the new-chat form showed them (no request
    # asked for: no 401), with the alert cleared, under a page with no list; their Create then
    # did nothing at all (review 6). While signed out only the sign-in form shows.
    server = make_server()
    with server.client() as c:
        x = titled(c, "chat X")
    page = open_ui(browser, server)
    open_chat(page, server, x["id"])
    page.get_by_role("button", name="Sign out").click()
    expect(page.locator("#alert")).to_have_text("You signed out.")
    for fragment in ("#/", "#/new", f"#/chat/{x['id']}", "#/new"):
        hash_handled(page, fragment)
        if "chat" in fragment:  # a chat is asked for: its 401 (read) keeps the form as it is
            page.wait_for_load_state("networkidle")
        expect(page.locator("#login-view")).to_be_visible()
        for view in ("#welcome-view", "#new-view", "#chat-view"):
            expect(page.locator(view)).to_be_hidden()
        expect(page.locator("#alert")).to_have_text("You signed out.")
    assert page.errors == []  # type: ignore[attr-defined]


COUNT_FAILED_FETCHES = r"""
(() => {
  const realFetch = window.fetch.bind(window);
  window.__fetchFailed = 0;
  window.fetch = async (input, init) => {
    try {
      return await realFetch(input, init);
    } catch (err) {
      window.__fetchFailed += 1; // (the page's handling of it is over in the same turn)
      throw err;
    }
  };
})();
"""
"""Requests of the page that got no answer at all: ``window.__fetchFailed``."""


@pytest.mark.parametrize("out", ["Sign out", "elsewhere"])
@pytest.mark.parametrize("answer", ["opens", "404"])
def test_a_chat_answered_while_signed_out_makes_the_page_a_signed_in_page_again(
    make_server: Any, browser: Any, answer: str, out: str
) -> None:
    # Signed out, then signed in again in another tab: a chat's address answered 404 (deleted
    # meanwhile) showed the welcome view under a page that still counted itself signed out (no
    # list, and Back kept what showed), and one that opened showed it without the list, under
    # "You were signed out". The chat or a 404 says the page is signed in: it is a
    # signed-in page again, its list refreshed.
    server = make_server()
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
    page = open_ui(browser, server)
    open_chat(page, server, x["id"])
    if out == "Sign out":
        page.get_by_role("button", name="Sign out").click()
        expect(page.locator("#alert")).to_have_text("You signed out.")
    else:
        signed_out_elsewhere(page, server)
    expect(page.locator("#sidebar")).to_be_hidden()
    signed_in_elsewhere(browser, server)  # another tab signs in (the browser's cookie)
    with server.client() as c:
        w = titled(c, "chat W")  # new since the page's list was fetched
        if answer == "404":
            assert c.delete(f"/api/chats/{y['id']}").status_code == 204
    listed = [w, x] if answer == "404" else [w, y, x]
    if answer == "opens":
        goes_live(page, lambda: go(page, y["id"]))
        expect(page.locator("#chat-title")).to_have_text("chat Y")
        expect(page.locator("#alert")).to_be_hidden()
    else:
        go(page, y["id"])
        expect(page.locator("#alert")).to_have_text("That chat does not exist on this server.")
        expect(page.locator("#welcome-view")).to_be_visible()
    expect(page.locator("#login-view")).to_be_hidden()
    expect(page.locator("#sidebar")).to_be_visible()  # the list, refreshed
    expect(page.locator(".chat-item")).to_have_count(len(listed))
    expect(page.locator(".chat-item-title")).to_have_text([chat["title"] for chat in listed])
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    if answer == "opens":  # what is typed and left is kept for its chat again (Sign out dropped it)
        page.get_by_label("Prompt").fill("typed in Y")
        goes_live(page, lambda: go(page, x["id"]))
        expect(page.get_by_label("Prompt")).to_have_value("")
        goes_live(page, lambda: go(page, y["id"]))
        expect(page.get_by_label("Prompt")).to_have_value("typed in Y")
    else:
        goes_live(page, page.go_back)  # Back: chat X, the address before
        expect(page.locator("#chat-title")).to_have_text("chat X")
        expect(page.locator("#alert")).to_be_hidden()
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_chat_that_gets_no_answer_while_signed_out_leaves_the_sign_in_form(
    make_server: Any, browser: Any
) -> None:
    # signed out, a chat's address that got no answer (the server unreachable) showed the
    # welcome view saying the chat did not open, under a page with no list: no answer says
    # nothing of the session, so only the sign-in form shows, saying why
    server = make_server()
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
    browser.add_init_script(COUNT_FAILED_FETCHES)
    page = open_ui(browser, server)
    open_chat(page, server, x["id"])
    record(page)
    signed_out_elsewhere(page, server)
    expect_signed_out(page)
    page.route(f"**/api/chats/{y['id']}**", lambda route: route.abort())
    go(page, y["id"])
    page.wait_for_function("() => window.__fetchFailed >= 2")  # the chat and its turns
    expect_signed_out(page)
    for view in ("#welcome-view", "#new-view"):
        expect(page.locator(view)).to_be_hidden()
    assert page.errors == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("out", ["Sign out", "elsewhere"])
@pytest.mark.parametrize("status", [403, 502, 503])
def test_a_chat_answered_with_an_error_while_signed_out_leaves_the_sign_in_form(
    make_server: Any, browser: Any, status: int, out: str
) -> None:
    # Signed out, a chat's address answered 502 (a proxy in front of a server down), 503 (the
    # server's session store unavailable: it answers before it knows the cookie is dead) or 403
    # (its host check) made the page a signed-in page again: the chats list of whoever signed out
    # showed, with no sign-in form. Every /api path asks for a session first: only a 2xx or a 404
    # proves one.
    server = make_server()
    with server.client() as c:
        x, y = titled(c, "secret chat X"), titled(c, "secret chat Y")
    y_path = f"/api/chats/{y['id']}"
    browser.add_init_script(counting_reads("__readY", f'String(input).includes("{y_path}")'))
    page = open_ui(browser, server)
    open_chat(page, server, x["id"])
    if out == "Sign out":
        page.get_by_role("button", name="Sign out").click()
        said = "You signed out."
    else:
        signed_out_elsewhere(page, server)
        said = SIGNED_OUT
    expect(page.locator("#alert")).to_have_text(said)
    expect(page.locator("#sidebar")).to_be_hidden()
    page.route("**/api/**", lambda route: route.fulfill(status=status, body="Bad Gateway"))
    go(page, y["id"])
    page.wait_for_function("() => window.__readY >= 2")  # the chat and its turns, read
    expect(page.locator("#login-view")).to_be_visible()
    expect(page.locator("#alert")).to_have_text(said)
    for hidden in ("#sidebar", "#welcome-view", "#chat-view", "#new-view"):
        expect(page.locator(hidden)).to_be_hidden()
    assert page.evaluate("document.body.classList.contains('signed-out')")
    assert page.errors == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("elsewhere", [False, True])
def test_a_list_refresh_across_the_session_end_leaves_no_refresh_behind(
    make_server: Any, browser: Any, elsewhere: bool
) -> None:
    # A refresh of the list whose check of the server (health) was answered 401 showed the form,
    # then set the next refresh all the same: 10 s later, signed in again in another tab, its
    # list counted the page signed in under the form, and the prompt kept for the chat was lost
    # at the form's sign-in (only a signed-out page keeps them across the reload).
    from test_chat_opening import until_held

    server = make_server()
    with server.client() as c:
        x = titled(c, "chat X")
    browser.add_init_script(COUNT_LISTS_ASKED)
    browser.add_init_script(counting_reads("__heldRead", 'response.headers.get("x-held")'))
    page, errors = paused_page(browser, server)
    goes_live(page, lambda: go(page, x["id"]))
    page.get_by_label("Prompt").fill("kept for X")
    held: list[Route] = []
    page.route("**/api/health", lambda route: held.append(route) if not held else route.continue_())
    page.clock.run_for(10_500)  # the list's refresh: the list, then the health check (held)
    until_held(page, held)
    signed_out_elsewhere_now(page, server)
    held[0].fulfill(status=401, headers={"x-held": "1"}, json={"detail": "authentication required"})
    page.wait_for_function("() => window.__heldRead >= 1")  # that 401 read, the refresh over
    expect(page.locator("#login-view")).to_be_visible()
    if elsewhere:
        signed_in_elsewhere(browser, server)  # signed in again in another tab
    asked = page.evaluate("window.__listsAsked")
    page.clock.run_for(30_500)  # three refreshes' time (a timer's request is asked as it fires)
    assert page.evaluate("window.__listsAsked") == asked  # none
    assert page.evaluate("document.body.classList.contains('signed-out')")
    sign_in(page, server.token)
    expect(page.locator("#chat-title")).to_have_text("chat X")
    expect(page.get_by_label("Prompt")).to_be_editable()
    expect(page.get_by_label("Prompt")).to_have_value("kept for X")
    assert errors == []


def test_a_401_asked_before_the_page_signed_in_again_leaves_it_signed_in(
    make_server: Any, browser: Any
) -> None:
    # Signed out, chat Z asked for (slow), then signed in again in another tab and chat Y opened
    # here: Z's 401, answered before that sign-in and read after it, signed the page out again
    from test_chat_opening import hold, until_held

    server = make_server()
    with server.client() as c:
        x, y, z = titled(c, "chat X"), titled(c, "chat Y"), titled(c, "chat Z")
    browser.add_init_script(counting_reads("__heldRead", 'response.headers.get("x-held")'))
    page = open_ui(browser, server)
    open_chat(page, server, x["id"])
    signed_out_elsewhere(page, server)
    held = hold(page, f"**/api/chats/{z['id']}")  # Z's state, asked for while signed out
    go(page, z["id"])
    until_held(page, held)
    signed_in_elsewhere(browser, server)  # another tab signs in
    goes_live(page, lambda: go(page, y["id"]))  # Y opens: a signed-in page again
    expect(page.locator("#sidebar")).to_be_visible()
    held[0].fulfill(status=401, headers={"x-held": "1"}, json={"detail": "authentication required"})
    page.wait_for_function("() => window.__heldRead >= 1")  # read (its handling over)
    expect(page.locator("#login-view")).to_be_hidden()
    expect(page.locator("#chat-title")).to_have_text("chat Y")
    expect(page.locator("#conn")).to_have_text("Live")
    expect(page.locator("#alert")).to_be_hidden()
    assert page.errors == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("status", [401, 503])
def test_a_prompt_on_its_way_at_sign_out_answered_after_signing_in_again_is_not_kept(
    make_server: Any, browser: Any, status: int
) -> None:
    # Review 14: a prompt whose POST /runs was on its way as Sign out was pressed, answered with
    # an error only once the page was signed in again (another tab, then a chat opened here),
    # went back into its chat's kept prompt: back in its box for whoever signed in
    from test_chat_opening import hold, until_held

    server = make_server()
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
    browser.add_init_script(counting_reads("__heldRead", 'response.headers.get("x-held")'))
    page = open_ui(browser, server)
    open_chat(page, server, x["id"])
    runs = hold(page, f"**/api/chats/{x['id']}/runs")
    send(page, "secret for X")
    until_held(page, runs)
    page.get_by_role("button", name="Sign out").click()
    expect(page.locator("#login-view")).to_be_visible()
    signed_in_elsewhere(browser, server)  # another tab signs in
    goes_live(page, lambda: go(page, y["id"]))  # Y opens: a signed-in page again
    expect(page.locator("#sidebar")).to_be_visible()
    runs[0].fulfill(status=status, headers={"x-held": "1"}, json={"detail": "no"})
    page.wait_for_function("() => window.__heldRead >= 1")  # read (its handling over)
    goes_live(page, lambda: go(page, x["id"]))
    expect(page.locator("#chat-title")).to_have_text("chat X")
    expect(page.get_by_label("Prompt")).to_be_editable()
    expect(page.get_by_label("Prompt")).to_have_value("")
    expect(page.locator("#alert")).to_be_hidden()
    with server.client() as c:
        assert c.get(f"/api/chats/{x['id']}/turns?limit=10").json().get("runs", []) == []
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_list_answered_401_for_the_session_before_signing_in_again_is_asked_again(
    make_server: Any, browser: Any
) -> None:
    # Review 14: a list refresh asked before the session ended, answered 401 only once the page
    # was signed in again (another tab, then a 404 here), said "The chats could not be loaded:
    # …" on a signed-in page, until the next refresh. That answer tells of the old session: the
    # list is asked again at once, and nothing is said
    import re

    from test_chat_opening import until_held

    server = make_server()
    with server.client() as c:
        x, gone = titled(c, "chat X"), titled(c, "chat gone")
        assert c.delete(f"/api/chats/{gone['id']}").status_code == 204
    browser.add_init_script(COUNT_LISTS_ASKED)
    browser.add_init_script(counting_reads("__heldRead", 'response.headers.get("x-held")'))
    page, errors = paused_page(browser, server)
    goes_live(page, lambda: go(page, x["id"]))
    held: list[Route] = []
    page.route(re.compile(r".*/api/chats\?limit=.*"),
               lambda route: held.append(route) if not held else route.continue_())
    page.clock.run_for(10_500)  # the list's refresh (held)
    until_held(page, held)
    signed_out_elsewhere(page, server)
    signed_in_elsewhere(browser, server)  # another tab signs in
    go(page, gone["id"])  # its 404: a signed-in page again (its list asked and shown)
    expect(page.locator("#alert")).to_have_text("That chat does not exist on this server.")
    go(page, None)
    expect(page.locator("#alert")).to_be_hidden()
    asked = page.evaluate("() => window.__listsAsked")
    held[0].fulfill(status=401, headers={"x-held": "1"}, json={"detail": "authentication required"})
    page.wait_for_function("() => window.__heldRead >= 1")
    # asked again at once (the page's clock stands still: no refresh comes on its own)
    page.wait_for_function(f"() => window.__listsAsked > {asked}", timeout=15_000)
    expect(page.locator("#login-view")).to_be_hidden()
    expect(page.locator("#sidebar")).to_be_visible()
    expect(page.locator("#alert")).to_be_hidden()
    assert errors == []



COUNT_LISTS_ASKED = r"""
(() => {
  const realFetch = window.fetch.bind(window);
  window.__listsAsked = 0;
  window.fetch = (input, init) => {
    if (String(input).includes("/api/chats?")) window.__listsAsked += 1;
    return realFetch(input, init);
  };
})();
"""
"""Chats lists the page has asked for: ``window.__listsAsked`` (counted as the request goes)."""


COUNT_DONE_READ = counting_reads(
    "__doneRead", '(init?.method || "GET") !== "GET" && response.ok && !response.headers.get("x-held")')
"""Answers to the page's actions (not GETs) read, successful: ``window.__doneRead``."""


def held_action(page: Page, pattern: str, method: str) -> list[Route]:
    """``method`` requests to ``pattern`` kept until the test lets them go on (others go)."""
    held: list[Route] = []
    page.route(pattern, lambda route: held.append(route)
               if route.request.method == method else route.continue_())
    return held


def asked_again_or_said(page: Page, held: list[Route]) -> None:
    """Until the held action is asked a second time, or the page says something instead."""
    alert = page.locator("#alert")
    for _ in range(1200):
        if len(held) >= 2:
            return
        if alert.is_visible():
            raise AssertionError(f"not asked again; said: {alert.text_content()!r}")
        page.wait_for_timeout(50)
    raise AssertionError("not asked again, and nothing said")


def an_action_held(make_server: Any, browser: Any, action: str, prompt: str,
                   counting: str) -> tuple[Any, Page, dict[str, Any], dict[str, Any],
                                           dict[str, Any] | None, list[Route]]:
    """A page that asked for ``action`` on chat X (``create``: a new chat from the new-chat
    view; ``prompt``: ``prompt`` sent), its request held (``held``), with ``counting`` (an init
    script) added: the server, the page, chats X and Y, X's running run (``stop``), ``held``."""
    from test_chat_opening import until_held

    server = make_server(sim_env=HELD_RUN)
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
        run = None
        if action == "stop":  # (a run that stays running until stopped)
            run = c.post(f"/api/chats/{x['id']}/runs", json={"prompt": "hello X"}).json()
    browser.add_init_script(counting_reads("__heldRead", 'response.headers.get("x-held")'))
    browser.add_init_script(counting)
    page = open_ui(browser, server, "#/new" if action == "create" else "")
    if action != "create":
        open_chat(page, server, x["id"])
    if action == "stop":
        held = held_action(page, "**/api/runs/*/cancel", "POST")
        expect(page.get_by_role("button", name="Stop")).to_be_visible()
        page.get_by_role("button", name="Stop").click()
    elif action == "options":
        held = held_action(page, f"**/api/chats/{x['id']}", "PATCH")
        page.get_by_role("button", name="Options").click()
        page.locator("#copt-force").check()
        page.get_by_role("button", name="Save options").click()
    elif action == "delete":
        held = held_action(page, f"**/api/chats/{x['id']}", "DELETE")
        page.once("dialog", lambda d: d.accept())
        page.get_by_role("button", name="Delete").click()
    elif action == "prompt":
        held = held_action(page, f"**/api/chats/{x['id']}/runs", "POST")
        send(page, prompt)
    else:
        expect(page.locator("#new-view")).to_be_visible()
        held = held_action(page, "**/api/chats", "POST")
        page.locator("#new-title-input").fill("chat late")
        page.get_by_role("button", name="Create chat").click()
    until_held(page, held)
    return server, page, x, y, run, held


@pytest.mark.parametrize("action", ["stop", "options", "delete", "prompt", "create"])
def test_an_action_answered_401_for_the_session_before_signing_in_again_is_asked_again(
    make_server: Any, browser: Any, action: str
) -> None:
    # Review 15: an action asked under the session that ended, answered 401 only once the page
    # was signed in again (another tab, then a chat opened here), said the server's 401 text
    # ("Could not stop the run: authentication required"). The server did nothing: the action
    # is asked once more, under the session the page has now, and goes; nothing is said.
    server, page, x, y, run, held = an_action_held(make_server, browser, action, "late prompt for X",
                                                   COUNT_DONE_READ)
    if action == "create":  # (no stream open: the page hears of it at its next request)
        signed_out_elsewhere_now(page, server)
        go(page, x["id"])
        expect(page.locator("#alert")).to_have_text(SIGNED_OUT)
    else:
        signed_out_elsewhere(page, server)  # (the open chat's stream closes: 4401)
    signed_in_elsewhere(browser, server)  # another tab signs in
    goes_live(page, lambda: go(page, y["id"]))  # Y opens: a signed-in page again
    held[0].fulfill(status=401, headers={"x-held": "1"}, json={"detail": "authentication required"})
    page.wait_for_function("() => window.__heldRead >= 1")  # read (its handling over)
    asked_again_or_said(page, held)
    held[1].continue_()
    if action == "delete":
        expect(page.locator(f'.chat-item[data-chat-id="{x["id"]}"]')).to_have_count(0)
    else:
        page.wait_for_function("() => window.__doneRead >= 1")
    with server.client() as c:
        if action == "stop":
            assert run is not None
            assert wait_run(c, run["id"])["status"] == "cancelled"
        elif action == "options":
            assert c.get(f"/api/chats/{x['id']}").json()["options"]["force"] is True
        elif action == "delete":
            assert c.get(f"/api/chats/{x['id']}").status_code == 404
        elif action == "prompt":
            (sent,) = c.get(f"/api/chats/{x['id']}/runs").json()["runs"]
            assert sent["prompt"] == "late prompt for X"
            assert c.post(f"/api/runs/{sent['id']}/cancel").status_code == 200
            assert wait_run(c, sent["id"])["status"] == "cancelled"
        else:
            (late,) = [ch for ch in c.get("/api/chats").json()["chats"] if ch["title"] == "chat late"]
            # listed; the page stays in chat Y, where the user went meanwhile (it went to the
            # new chat, as if nothing had been done since)
            expect(page.locator(f'.chat-item[data-chat-id="{late["id"]}"]')).to_be_visible()
    expect(page.locator("#login-view")).to_be_hidden()
    expect(page.locator("#sidebar")).to_be_visible()
    expect(page.locator("#chat-title")).to_have_text("chat Y")
    expect(page.locator("#alert")).to_be_hidden()
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_chat_answered_404_while_signed_out_leaves_the_focus_on_the_view_shown(
    make_server: Any, browser: Any
) -> None:
    # Review 15: the focus stayed on the token field, hidden with the sign-in form as the
    # welcome view showed (document.activeElement fell to the body)
    server = make_server()
    with server.client() as c:
        x, gone = titled(c, "chat X"), titled(c, "chat gone")
        assert c.delete(f"/api/chats/{gone['id']}").status_code == 204
    page = open_ui(browser, server)
    open_chat(page, server, x["id"])
    signed_out_elsewhere(page, server)
    expect(page.get_by_label("Token")).to_be_focused()
    signed_in_elsewhere(browser, server)  # another tab signs in
    go(page, gone["id"])
    expect(page.locator("#alert")).to_have_text("That chat does not exist on this server.")
    expect(page.locator("#welcome-view")).to_be_visible()
    expect(page.get_by_role("heading", name="Watch and steer agents")).to_be_focused()
    assert page.evaluate("() => document.activeElement.tagName") == "H2"
    # signed in, a 404 leaves the focus where the user has it (Review 17: not covered)
    goes_live(page, lambda: go(page, x["id"]))
    page.get_by_role("button", name="Sign out").focus()
    go(page, f"{gone['id']}-again")
    expect(page.locator("#alert")).to_have_text("That chat does not exist on this server.")
    expect(page.get_by_role("button", name="Sign out")).to_be_focused()
    assert page.errors == []  # type: ignore[attr-defined]


COUNT_ACTIONS_ASKED = r"""
(() => {
  const realFetch = window.fetch.bind(window);
  window.__actionsAsked = 0;
  window.fetch = (input, init) => {
    if ((init?.method || "GET") !== "GET") window.__actionsAsked += 1;
    return realFetch(input, init);
  };
})();
"""
"""The page's actions (not GETs) asked for: ``window.__actionsAsked`` (counted as each goes)."""


@pytest.mark.parametrize("action", ["stop", "options", "delete", "prompt", "create"])
def test_an_action_on_its_way_at_sign_out_in_another_tab_is_dropped_after_signing_in_again(
    make_server: Any, browser: Any, action: str
) -> None:
    # Review 17: only this page's own Sign out dropped what was on its way; one pressed in
    # another tab (heard: the sign-in form at once) did not, and an action on its way then,
    # answered 401 once someone had signed in again (another tab, then a chat opened here), was
    # asked again under their session: "secret for X" was sent for whoever signed in next.
    # docs/web.md: Sign out drops it in every tab that hears of it.
    server, page, x, y, run, held = an_action_held(make_server, browser, action, "secret for X",
                                                   COUNT_ACTIONS_ASKED)
    assert page.evaluate("() => window.__actionsAsked") == 1
    other = open_ui(browser, server)  # another tab, signed in: its Sign out
    expect(other.locator("#sidebar")).to_be_visible()
    other.get_by_role("button", name="Sign out").click()
    expect(other.locator("#alert")).to_have_text("You signed out.")
    expect(page.locator("#login-view")).to_be_visible()  # (heard at once)
    signed_in_elsewhere(browser, server)  # someone signs in, in another tab
    goes_live(page, lambda: go(page, y["id"]))  # Y opens: a signed-in page again
    expect(page.locator("#chat-title")).to_have_text("chat Y")
    held[0].fulfill(status=401, headers={"x-held": "1"}, json={"detail": "authentication required"})
    page.wait_for_function("() => window.__heldRead >= 1")  # read (its handling over)
    asked = page.evaluate("() => window.__actionsAsked")
    for route in held[1:]:
        route.abort()
    assert asked == 1  # not asked again: dropped
    with server.client() as c:
        if action == "stop":
            assert run is not None
            assert c.get(f"/api/chats/{x['id']}/runs").json()["runs"][0]["status"] == "running"
            assert c.post(f"/api/runs/{run['id']}/cancel").status_code == 200
            assert wait_run(c, run["id"])["status"] == "cancelled"
        elif action == "options":
            assert c.get(f"/api/chats/{x['id']}").json()["options"]["force"] is False
        elif action == "delete":
            assert c.get(f"/api/chats/{x['id']}").status_code == 200
        elif action == "prompt":
            assert c.get(f"/api/chats/{x['id']}/runs").json()["runs"] == []
        else:
            assert "chat late" not in [ch["title"] for ch in c.get("/api/chats").json()["chats"]]
    expect(page.locator("#chat-title")).to_have_text("chat Y")
    expect(page.locator("#alert")).to_be_hidden()  # (nothing said of it)
    goes_live(page, lambda: go(page, x["id"]))
    expect(page.get_by_label("Prompt")).to_be_editable()
    expect(page.get_by_label("Prompt")).to_have_value("")  # (nor kept)
    assert page.errors == []  # type: ignore[attr-defined]
    assert other.errors == []  # type: ignore[attr-defined]


def test_a_chat_answered_401_while_signed_out_opens_once_signed_in_again(
    make_server: Any, browser: Any
) -> None:
    # Review 17: a chat asked for while signed out and answered 401 stayed "opening" (its
    # answer's SessionEnded returned before the opening was over): asked for again once signed
    # in again, it was taken for a click on a chat still loading, and never asked for again
    server = make_server()
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
    browser.add_init_script(COUNT_401_READ)
    page = open_ui(browser, server)
    open_chat(page, server, y["id"])
    signed_out_elsewhere(page, server)  # (the stream closes: 4401, the sign-in form)
    go(page, x["id"])  # Forward to X while signed out: its two requests answered 401
    page.wait_for_function("() => window.__read401 >= 2")
    expect(page.locator("#login-view")).to_be_visible()
    hash_handled(page, "#/")  # Back: nothing is asked while signed out
    signed_in_elsewhere(browser, server)  # another tab signs in
    goes_live(page, lambda: go(page, x["id"]))  # Forward to X again: it opens
    expect(page.locator("#chat-title")).to_have_text("chat X")
    expect(page.locator("#login-view")).to_be_hidden()
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_sign_out_in_another_tab_as_the_page_loads_leaves_it_signed_out(
    make_server: Any, browser: Any
) -> None:
    # Review 17: the settings asked for before another tab's Sign out and answered after it
    # made the page a signed-in one under the sign-in form (the list, New chat and Sign out
    # showing), and its address was no longer followed (hashchange never bound)
    from test_chat_opening import until_held

    server = make_server()
    with server.client() as c:
        x = titled(c, "chat X")
    other = open_ui(browser, server)
    expect(other.locator("#sidebar")).to_be_visible()
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    held: list[Route] = []
    page.route("**/api/config", lambda route: held.append(route))
    page.goto(f"{server.url}/")
    until_held(page, held)
    answer = held[0].fetch()  # (asked under the session signed in then)
    assert answer.status == 200
    other.get_by_role("button", name="Sign out").click()
    expect(page.locator("#login-view")).to_be_visible()  # (heard: the sign-in form at once)
    held[0].fulfill(response=answer)
    page.wait_for_function("() => document.body.classList.contains('simulated')")  # (settings read)
    expect(page.locator("#login-view")).to_be_visible()
    expect(page.locator("#alert")).to_have_text(SIGNED_OUT)
    for hidden in ("#sidebar", "#new-chat-button", "#sign-out-button", "#welcome-view"):
        expect(page.locator(hidden)).to_be_hidden()
    signed_in_elsewhere(browser, server)  # another tab signs in: a chat's address opens it
    goes_live(page, lambda: go(page, x["id"]))
    expect(page.locator("#chat-title")).to_have_text("chat X")
    expect(page.locator("#sidebar")).to_be_visible()
    assert errors == []
