"""Prompts the page keeps for a chat it left (not sent: see test_prompt_in_flight.py), in two
cases where one was lost: the chat deleted elsewhere (another tab, the command line) while a
prompt is kept for it, and the reload that follows signing in again after a 401."""

from __future__ import annotations

from typing import Any

import httpx
from playwright.sync_api import Page, expect
from server_helpers import wait_run
from test_prompt_in_flight import (
    HELD_RUN,
    go,
    held_page,
    paused_page,
    prompts,
    release,
    wait_held,
    wait_read,
)
from test_ui import goes_live, open_chat, open_ui, send

KEPT_FOR_X = "Your prompt for “chat X” was not sent: you left that chat"


def titled(c: Any, title: str) -> dict[str, Any]:
    r = c.post("/api/chats", json={"workspace": "project", "options": {"trust": True}, "title": title})
    assert r.status_code == 201, r.text
    return dict(r.json())


def keep_for_x(
    c: Any, page: Page, x: dict[str, Any], y_id: str | None, text: str = "more for X"
) -> None:
    """A prompt (``text``) typed in chat X while its run goes, then the page goes to ``y_id``
    (None: the welcome view): the prompt is kept for X (the page's clock stands still), and the
    alert says so (naming X by its title); X's run ends."""
    held = c.post(f"/api/chats/{x['id']}/runs", json={"prompt": "hello X"}).json()
    go(page, x["id"])
    expect(page.locator("#stop-button")).to_be_visible()
    send(page, text)  # waits for X's run
    if y_id:
        goes_live(page, lambda: go(page, y_id))  # (not X's "Live")
    else:
        go(page, None)
        expect(page.locator("#welcome-view")).to_be_visible()
    page.clock.run_for(100)  # the prompt looks again: its chat was left
    expect(page.locator("#alert")).to_contain_text(
        f"Your prompt for “{x['title']}” was not sent: you left that chat")
    assert c.post(f"/api/runs/{held['id']}/cancel").status_code == 200
    assert wait_run(c, held["id"])["status"] == "cancelled"


def test_a_prompt_kept_for_a_chat_deleted_elsewhere_goes_into_the_open_chats_box(
    make_server: Any, browser: Any
) -> None:
    # the alert kept promising "back in that chat's prompt box when you open it": the chat was
    # gone, and so was the prompt, without a word
    server = make_server(sim_env=HELD_RUN)
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
        page, errors = paused_page(browser, server)
        keep_for_x(c, page, x, y["id"])
        box = page.get_by_label("Prompt")
        box.fill("typed in Y")  # not sent
        assert c.delete(f"/api/chats/{x['id']}").status_code == 204  # another tab, the CLI
        page.clock.run_for(11_000)  # the list's next refresh: X is not listed
        alert = page.locator("#alert")
        expect(alert).to_contain_text("The chat “chat X” was deleted")
        # Review 3: not put in front of text being typed (an Enter meant for it sent both)
        expect(alert).to_contain_text("It goes into this chat's prompt box once it is empty")
        expect(box).to_have_value("typed in Y")
        box.fill("")  # the box is free: at the list's next refresh
        page.clock.run_for(11_000)
        expect(box).to_have_value("more for X")
        expect(alert).to_contain_text("now in this chat's prompt box: written for the deleted chat")
        expect(alert).to_contain_text("it goes to this chat, “chat Y”")
        expect(alert).not_to_contain_text("when you open it again")
        expect(page.locator(f'.chat-item[data-chat-id="{x["id"]}"]')).to_have_count(0)
        assert prompts(c, y["id"]) == []  # not sent
        assert errors == []


def test_a_prompt_kept_for_a_chat_found_deleted_on_opening_it_waits_for_a_chat_to_open(
    make_server: Any, browser: Any
) -> None:
    server = make_server(sim_env=HELD_RUN)
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
        page, errors = paused_page(browser, server)
        keep_for_x(c, page, x, None)
        assert c.delete(f"/api/chats/{x['id']}").status_code == 204
        go(page, x["id"])  # its link, before the list's refresh: 404
        alert = page.locator("#alert")
        expect(alert).to_contain_text("The chat “chat X” was deleted")
        expect(alert).to_contain_text("into the prompt box of the next chat you open")
        go(page, None)  # elsewhere: still true
        expect(page.locator("#welcome-view")).to_be_visible()
        expect(alert).to_contain_text("into the prompt box of the next chat you open")
        goes_live(page, lambda: go(page, y["id"]))
        expect(page.get_by_label("Prompt")).to_have_value("more for X")
        expect(alert).to_contain_text("now in this chat's prompt box")
        expect(alert).to_contain_text("it goes to this chat, “chat Y”")
        assert prompts(c, y["id"]) == []
        assert errors == []


def sign_in(page: Page, token: str) -> None:
    """The sign-in form, as a person fills it; the page reloads, signed in."""
    expect(page.locator("#login-view")).to_be_visible()
    page.get_by_label("Token").fill(token)
    with page.expect_navigation():
        page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#sidebar")).to_be_visible()


def test_prompts_not_sent_because_of_a_401_are_back_after_signing_in_again(
    make_server: Any, browser: Any
) -> None:
    # the first prompt answered 401, the second waiting behind it: both were lost with the
    # reload that follows signing in again
    server = make_server()
    with server.client() as c:
        x = titled(c, "chat X")
        page = held_page(browser, server, x["id"])
        page.route(f"**/api/chats/{x['id']}/runs", lambda route: route.fulfill(
            status=401, json={"detail": "not signed in"})
            if route.request.method == "POST" else route.continue_())
        send(page, "P1 for X")
        wait_held(page, 1)
        send(page, "P2 for X")  # waits for the first
        release(page)
        alert = page.locator("#alert")
        expect(alert).to_contain_text("You were signed out: sign in again.")
        expect(alert).to_contain_text("The prompt you sent after it was not sent either")
        page.unroute(f"**/api/chats/{x['id']}/runs")
        sign_in(page, server.token)
        expect(page.locator("#conn")).to_have_text("Live")  # the page comes back to chat X
        expect(page.get_by_label("Prompt")).to_have_value("P1 for X\n\nP2 for X")
        assert page.evaluate("() => sessionStorage.length") == 0  # kept across the reload only
        assert prompts(c, x["id"]) == []
        assert page.errors == []  # type: ignore[attr-defined]


def test_signing_out_drops_the_prompts_kept_for_chats(make_server: Any, browser: Any) -> None:
    # they would go to whoever signs in next in this tab
    server = make_server(sim_env=HELD_RUN)
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
        page, errors = paused_page(browser, server)
        keep_for_x(c, page, x, y["id"])
        page.get_by_label("Prompt").fill("typed in Y")
        page.get_by_role("button", name="Sign out").click()
        sign_in(page, server.token)
        assert page.evaluate("() => sessionStorage.length") == 0
        go(page, x["id"])
        expect(page.locator("#chat-title")).to_have_text("chat X")
        page.clock.run_for(100)
        expect(page.get_by_label("Prompt")).to_have_value("")
        assert errors == []


def test_a_session_ended_elsewhere_keeps_the_typed_prompt_for_its_chat(
    make_server: Any, browser: Any
) -> None:
    # typed, not sent, when the session ended (the stream closed 4401): lost with the reload
    server = make_server()
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
    page = held_page(browser, server, x["id"])
    page.get_by_label("Prompt").fill("a long thought for X")
    cookie = "; ".join(f"{k['name']}={k['value']}" for k in browser.cookies())
    assert httpx.post(f"{server.url}/api/auth/logout", headers={"Cookie": cookie}).status_code == 204
    expect(page.locator("#alert")).to_contain_text("You were signed out")
    go(page, y["id"])  # signing in comes back to chat Y: X's text is not in its box
    sign_in(page, server.token)
    expect(page.locator("#chat-title")).to_have_text("chat Y")
    expect(page.locator("#conn")).to_have_text("Live")
    box = page.get_by_label("Prompt")
    expect(box).to_have_value("")
    expect(page.locator("#alert")).to_contain_text("Your prompt for “chat X”")
    go(page, x["id"])
    expect(page.locator("#chat-title")).to_have_text("chat X")
    expect(box).to_have_value("a long thought for X")
    assert page.errors == []  # type: ignore[attr-defined]


def signed_out_elsewhere_now(page: Page, server: Any) -> None:
    """The page's session ended (signed out with its cookie, as another tab does), nothing asked
    of the page meanwhile."""
    cookie = "; ".join(f"{k['name']}={k['value']}" for k in page.context.cookies())
    assert httpx.post(f"{server.url}/api/auth/logout", headers={"Cookie": cookie}).status_code == 204


def signed_out_elsewhere(page: Page, server: Any) -> None:
    """The page's session ended (signed out in another tab): the page shows the sign-in form."""
    signed_out_elsewhere_now(page, server)
    expect(page.locator("#alert")).to_contain_text("You were signed out")


def signed_in_elsewhere(browser: Any, server: Any, *, close: bool = True) -> Page:
    """Another tab of the browser signs in (by the link the server printed): its cookie is the
    browser's, this page's too. The tab, closed unless ``close`` is False."""
    other = open_ui(browser, server)
    expect(other.locator("#sidebar")).to_be_visible()
    if close:
        other.close()
    return other


def test_a_prompt_on_its_way_at_sign_out_is_dropped_too(make_server: Any, browser: Any) -> None:
    # Review 3: it was kept again once Sign out had cleared the rest, its alert over "You signed
    # out.", and it came back in its chat's box for whoever signed in next in the tab
    server = make_server(sim_env=HELD_RUN)
    with server.client() as c:
        x = titled(c, "chat X")
        held = c.post(f"/api/chats/{x['id']}/runs", json={"prompt": "hello X"}).json()
        page, errors = paused_page(browser, server)
        goes_live(page, lambda: go(page, x["id"]))
        expect(page.locator("#stop-button")).to_be_visible()
        send(page, "secret for X")  # waits for X's run (the page's clock stands still)
        page.get_by_role("button", name="Sign out").click()
        expect(page.locator("#login-view")).to_be_visible()
        page.clock.run_for(100)  # the prompt looks again: the page left its chat
        expect(page.locator("#alert")).to_have_text("You signed out.")
        sign_in(page, server.token)
        expect(page.locator("#chat-title")).to_have_text("chat X")
        expect(page.locator("#conn")).to_have_text("Live")
        page.clock.run_for(100)
        expect(page.get_by_label("Prompt")).to_have_value("")
        assert prompts(c, x["id"]) == ["hello X"]
        assert errors == []
        assert c.post(f"/api/runs/{held['id']}/cancel").status_code == 200
        wait_run(c, held["id"])


def test_a_prompt_on_its_way_at_sign_out_is_dropped_after_signing_in_again_elsewhere(
    make_server: Any, browser: Any
) -> None:
    # Review 10: signed in again in another tab, a chat opened here made the page a signed-in
    # page again (prompts kept again from then on): the prompt that was on its way at Sign out
    # was then kept for its chat, and came back in its box for whoever signed in
    server = make_server(sim_env=HELD_RUN)
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
        held = c.post(f"/api/chats/{x['id']}/runs", json={"prompt": "hello X"}).json()
        page, errors = paused_page(browser, server)
        goes_live(page, lambda: go(page, x["id"]))
        expect(page.locator("#stop-button")).to_be_visible()
        send(page, "secret for X")  # waits for X's run (the page's clock stands still)
        page.get_by_role("button", name="Sign out").click()
        expect(page.locator("#login-view")).to_be_visible()
        signed_in_elsewhere(browser, server)  # someone signs in, in another tab
        go(page, y["id"])  # this tab goes to chat Y: it opens, a signed-in page again
        expect(page.locator("#chat-title")).to_have_text("chat Y")
        expect(page.get_by_label("Prompt")).to_be_editable()
        page.clock.run_for(100)  # the prompt looks again: the page left its chat
        goes_live(page, lambda: go(page, x["id"]))
        expect(page.locator("#chat-title")).to_have_text("chat X")
        expect(page.get_by_label("Prompt")).to_be_editable()
        page.clock.run_for(100)
        expect(page.get_by_label("Prompt")).to_have_value("")
        expect(page.locator("#alert")).to_be_hidden()
        assert prompts(c, x["id"]) == ["hello X"]
        assert errors == []
        assert c.post(f"/api/runs/{held['id']}/cancel").status_code == 200
        wait_run(c, held["id"])


def test_signing_in_again_by_the_link_keeps_the_prompts_too(make_server: Any, browser: Any) -> None:
    # Review 3: only the form's reload kept them; the link serve printed (opened in the tab)
    # lost them without a word
    server = make_server()
    with server.client() as c:
        x = titled(c, "chat X")
    page = open_ui(browser, server)
    open_chat(page, server, x["id"])
    page.get_by_label("Prompt").fill("a long thought for X")
    signed_out_elsewhere(page, server)
    page.goto(f"{server.url}/?token={server.token}#/chat/{x['id']}")
    expect(page.locator("#chat-title")).to_have_text("chat X")
    expect(page.get_by_label("Prompt")).to_have_value("a long thought for X")
    assert page.evaluate("() => sessionStorage.length") == 0  # read back and removed
    assert page.errors == []  # type: ignore[attr-defined]


def test_prompts_of_a_deleted_chat_crossing_the_reload_are_said(make_server: Any, browser: Any) -> None:
    # Review 3: with only such prompts kept, the reloaded page said nothing of them
    server = make_server()
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
        page = open_ui(browser, server)
        open_chat(page, server, x["id"])
        page.get_by_label("Prompt").fill("typed for X")
        signed_out_elsewhere(page, server)
        assert c.delete(f"/api/chats/{x['id']}").status_code == 204  # meanwhile, elsewhere
        page.goto(f"{server.url}/?token={server.token}")
        alert = page.locator("#alert")
        expect(alert).to_contain_text("The chat “chat X” was deleted")
        expect(alert).to_contain_text("into the prompt box of the next chat you open")
        open_chat(page, server, y["id"])
        expect(page.get_by_label("Prompt")).to_have_value("typed for X")
        expect(alert).to_contain_text("it goes to this chat, “chat Y”")
        assert prompts(c, y["id"]) == []
        assert page.errors == []  # type: ignore[attr-defined]


def test_a_kept_prompt_and_text_typed_elsewhere_each_stay_their_chats(make_server: Any, browser: Any) -> None:
    # Review 3: with text in the box as X opened, X's kept prompt stayed hidden (the box was the
    # page's, and its text went on to X: an Enter sent it there)
    server = make_server(sim_env=HELD_RUN)
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
        page, errors = paused_page(browser, server)
        keep_for_x(c, page, x, y["id"])
        box = page.get_by_label("Prompt")
        box.fill("typed in Y")
        goes_live(page, lambda: go(page, x["id"]))
        expect(box).to_have_value("more for X")
        goes_live(page, lambda: go(page, y["id"]))
        expect(box).to_have_value("typed in Y")
        assert prompts(c, x["id"]) == ["hello X"] and prompts(c, y["id"]) == []
        assert errors == []


def test_text_typed_in_a_chat_is_not_sent_to_the_next(make_server: Any, browser: Any) -> None:
    # (stale-waits helper) the box kept its text from chat to chat: typed in Y, sent to X
    server = make_server()
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
        page = open_ui(browser, server)
        open_chat(page, server, y["id"])
        box = page.get_by_label("Prompt")
        box.fill("typed in Y")
        open_chat(page, server, x["id"])
        expect(box).to_have_value("")
        box.press("Enter")
        expect(page.locator("#alert")).to_contain_text("Type a prompt first")
        open_chat(page, server, y["id"])
        expect(box).to_have_value("typed in Y")
        assert prompts(c, x["id"]) == [] and prompts(c, y["id"]) == []
        assert page.errors == []  # type: ignore[attr-defined]


def test_text_typed_in_a_chat_deleted_here_goes_with_it(make_server: Any, browser: Any) -> None:
    server = make_server()
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
        page = open_ui(browser, server)
        page.on("dialog", lambda dialog: dialog.accept())
        open_chat(page, server, x["id"])
        box = page.get_by_label("Prompt")
        box.fill("half a thought for X")
        page.get_by_role("button", name="Delete").click()
        expect(page.locator("#welcome-view")).to_be_visible()
        open_chat(page, server, y["id"])
        expect(box).to_have_value("")
        expect(page.locator("#alert")).to_be_hidden()
        assert page.errors == []  # type: ignore[attr-defined]


def test_a_kept_prompt_is_not_joined_to_a_prompt_waiting_for_another_chat(
    make_server: Any, browser: Any
) -> None:
    # Review 4: X's kept prompt went in front of "for Y", still in the box as it waited for Y's
    # run: Y's prompt was then both kept for Y and in X's box (an Enter sent it to X)
    server = make_server(sim_env=HELD_RUN)
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
        page, errors = paused_page(browser, server)
        keep_for_x(c, page, x, y["id"])  # "more for X" kept for X, the page in Y
        held = c.post(f"/api/chats/{y['id']}/runs", json={"prompt": "hello Y"}).json()
        expect(page.locator("#stop-button")).to_be_visible()
        send(page, "for Y")  # waits for Y's run (the page's clock stands still)
        box = page.get_by_label("Prompt")
        goes_live(page, lambda: go(page, x["id"]))
        expect(box).to_have_value("more for X")
        page.clock.run_for(100)  # Y's prompt looks again: its chat was left
        expect(page.locator("#alert")).to_contain_text("Your prompt for “chat Y” was not sent")
        expect(box).to_have_value("more for X")
        goes_live(page, lambda: go(page, y["id"]))
        expect(box).to_have_value("for Y")  # Y's own: X's stays X's
        goes_live(page, lambda: go(page, x["id"]))
        expect(box).to_have_value("more for X")
        assert prompts(c, x["id"]) == ["hello X"]
        assert c.post(f"/api/runs/{held['id']}/cancel").status_code == 200
        wait_run(c, held["id"])
        assert errors == []


def test_text_typed_once_signed_in_again_elsewhere_is_not_kept_for_the_chat_left(
    make_server: Any, browser: Any
) -> None:
    # Review 4: the page stayed 'signed out' (its body's class) after another tab signed in and
    # it opened chat Y: what was typed in Y crossed a reload as X's, and came back in X's box
    server = make_server()
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
    page = open_ui(browser, server)
    open_chat(page, server, x["id"])
    signed_out_elsewhere(page, server)
    signed_in_elsewhere(browser, server, close=False)  # another tab signs in (the browser's cookie)
    goes_live(page, lambda: go(page, y["id"]))  # a link, or Back, in the signed-out tab
    box = page.get_by_label("Prompt")
    box.fill("typed in Y")
    page.reload()
    expect(page.locator("#chat-title")).to_have_text("chat Y")
    expect(box).to_have_value("")  # a reload while signed in keeps nothing (as before)
    expect(page.locator("#alert")).to_be_hidden()
    goes_live(page, lambda: go(page, x["id"]))
    expect(box).to_have_value("")
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_401_after_sign_out_leaves_its_words(make_server: Any, browser: Any) -> None:
    # Review 4: a prompt's request answered 401 after Sign out replaced "You signed out." by
    # "You were signed out: sign in again."
    server = make_server()
    with server.client() as c:
        y = titled(c, "chat Y")
        page = held_page(browser, server, y["id"])
        page.route(f"**/api/chats/{y['id']}/runs", lambda route: route.fulfill(
            status=401, json={"detail": "not signed in"})
            if route.request.method == "POST" else route.continue_())
        send(page, "secret P")
        wait_held(page, 1)
        page.get_by_role("button", name="Sign out").click()
        alert = page.locator("#alert")
        expect(alert).to_have_text("You signed out.")
        release(page)
        wait_read(page, 1)  # the page has read the 401, and done what it does with it
        expect(alert).to_have_text("You signed out.")
        page.unroute(f"**/api/chats/{y['id']}/runs")
        sign_in(page, server.token)
        expect(page.get_by_label("Prompt")).to_have_value("")
        assert prompts(c, y["id"]) == []
        assert page.errors == []  # type: ignore[attr-defined]


def test_text_typed_in_one_chat_is_kept_even_if_another_chat_has_it_on_its_way(
    make_server: Any, browser: Any
) -> None:
    # Review 5: "yes" typed in Y was dropped as Y was left, because "yes" was on its way to X
    server = make_server(sim_env=HELD_RUN)
    with server.client() as c:
        x, y, z = titled(c, "chat X"), titled(c, "chat Y"), titled(c, "chat Z")
        held = c.post(f"/api/chats/{x['id']}/runs", json={"prompt": "hello X"}).json()
        page, errors = paused_page(browser, server)
        goes_live(page, lambda: go(page, x["id"]))
        expect(page.locator("#stop-button")).to_be_visible()
        send(page, "yes")  # waits for X's run (the page's clock stands still)
        box = page.get_by_label("Prompt")
        goes_live(page, lambda: go(page, y["id"]))
        box.fill("yes")  # typed in Y: the same words
        goes_live(page, lambda: go(page, z["id"]))
        expect(box).to_have_value("")
        goes_live(page, lambda: go(page, y["id"]))
        expect(box).to_have_value("yes")
        assert c.post(f"/api/runs/{held['id']}/cancel").status_code == 200
        wait_run(c, held["id"])
        assert errors == []


def test_a_chat_deleted_here_drops_its_text_even_once_left(make_server: Any, browser: Any) -> None:
    # Review 5: left before the server answered the delete, its text went to the next chat's box
    server = make_server()
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
        page = open_ui(browser, server)
        page.on("dialog", lambda dialog: dialog.accept())
        held: list[Any] = []
        page.route(f"**/api/chats/{x['id']}",
                   lambda r: held.append(r) if r.request.method == "DELETE" else r.continue_())
        open_chat(page, server, x["id"])
        box = page.get_by_label("Prompt")
        box.fill("half a thought for X")
        page.get_by_role("button", name="Delete").click()
        while not held:  # (the route's handler runs during the test's calls)
            page.wait_for_timeout(50)
        goes_live(page, lambda: go(page, y["id"]))
        held[0].continue_()
        # out of the list: in the same turn as what the page does with what was kept for it
        expect(page.locator(f'.chat-item[data-chat-id="{x["id"]}"]')).to_have_count(0)
        expect(box).to_have_value("")
        expect(page.locator("#alert")).not_to_contain_text("was deleted")
        assert page.errors == []  # type: ignore[attr-defined]


def test_the_box_takes_no_typing_while_a_chat_loads(make_server: Any, browser: Any) -> None:
    # Review 5: typed while a chat loaded (under the chat before's header), the text belonged to
    # no chat: the load failing, it showed in the next chat's box
    server = make_server()
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
        page = open_ui(browser, server)
        held: list[Any] = []
        page.route("**/api/chats/nope**", lambda r: held.append(r))
        open_chat(page, server, x["id"])
        box = page.get_by_label("Prompt")
        go(page, "nope")
        while len(held) < 2:  # the chat and its turns: both asked
            page.wait_for_timeout(50)
        expect(box).not_to_be_editable()
        for r in held:
            r.fulfill(status=404, json={"detail": "no such chat"})
        expect(page.locator("#welcome-view")).to_be_visible()
        open_chat(page, server, y["id"])
        expect(box).to_be_editable()
        expect(box).to_have_value("")
        assert page.errors == []  # type: ignore[attr-defined]


def test_sign_out_in_another_tab_drops_this_tabs_kept_prompts(make_server: Any, browser: Any) -> None:
    # Review 15: Sign out dropped the prompts kept in its own tab only: another tab of the page
    # showed the sign-in form (its stream closed), kept its prompts (what was typed in its open
    # chat's box included) across the sign-in's reload, and put them back in their chats' boxes
    # for whoever signed in next on that computer
    server = make_server()
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
    page = open_ui(browser, server)
    open_chat(page, server, y["id"])
    page.get_by_label("Prompt").fill("secret typed in Y")
    goes_live(page, lambda: go(page, x["id"]))  # (kept for Y)
    page.get_by_label("Prompt").fill("secret typed in X")
    other = open_ui(browser, server)
    expect(other.locator("#sidebar")).to_be_visible()
    other.get_by_role("button", name="Sign out").click()
    expect(other.locator("#alert")).to_have_text("You signed out.")
    expect(page.locator("#login-view")).to_be_visible()
    expect(page.locator("#alert")).to_have_text("You were signed out: sign in again.")
    sign_in(page, server.token)  # (the form reloads the page: it comes back to chat X)
    expect(page.locator("#chat-title")).to_have_text("chat X")
    expect(page.locator("#conn")).to_have_text("Live")
    expect(page.get_by_label("Prompt")).to_have_value("")
    goes_live(page, lambda: go(page, y["id"]))
    expect(page.locator("#chat-title")).to_have_text("chat Y")
    expect(page.get_by_label("Prompt")).to_have_value("")
    expect(page.locator("#alert")).to_be_hidden()
    assert page.evaluate("() => sessionStorage.length") == 0
    assert page.errors == []  # type: ignore[attr-defined]
    assert other.errors == []  # type: ignore[attr-defined]


def test_a_waiting_prompt_edited_in_the_box_then_left_is_kept_as_edited(
    make_server: Any, browser: Any
) -> None:
    # Review 15: a prompt waiting for its chat's run, edited in the box (not sent again), then
    # the chat left: both versions were kept, one after the other ("edited\n\nfirst"), and came
    # back in the box so. The edit is what the user wants: it alone is kept
    server = make_server(sim_env=HELD_RUN)
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
        held = c.post(f"/api/chats/{x['id']}/runs", json={"prompt": "hello X"}).json()
        page, errors = paused_page(browser, server)
        goes_live(page, lambda: go(page, x["id"]))
        expect(page.locator("#stop-button")).to_be_visible()
        send(page, "first version")  # waits for X's run (the page's clock stands still)
        page.get_by_label("Prompt").fill("edited version")  # not sent again
        goes_live(page, lambda: go(page, y["id"]))
        page.clock.run_for(100)  # the prompt looks again: its chat was left
        expect(page.locator("#alert")).to_contain_text(KEPT_FOR_X)
        # (Review 17: "It is back in that chat's prompt box": the edit is, not the prompt)
        expect(page.locator("#alert")).to_contain_text(
            "What you edited it into is back in that chat's prompt box")
        assert c.post(f"/api/runs/{held['id']}/cancel").status_code == 200
        assert wait_run(c, held["id"])["status"] == "cancelled"
        goes_live(page, lambda: go(page, x["id"]))
        expect(page.get_by_label("Prompt")).to_have_value("edited version")
        assert prompts(c, x["id"]) == ["hello X"]
        assert errors == []


def test_sign_out_in_another_tab_takes_back_the_alert_that_promised_a_kept_prompt(
    make_server: Any, browser: Any
) -> None:
    # Review 17: signed out (the session ended), a prompt kept for its chat, the alert saying
    # it is back in that chat's box after signing in; another tab's Sign out then dropped the
    # prompt, and the alert kept promising it
    server = make_server(sim_env=HELD_RUN)
    with server.client() as c:
        x = titled(c, "chat X")
        held = c.post(f"/api/chats/{x['id']}/runs", json={"prompt": "hello X"}).json()
        page, errors = paused_page(browser, server)
        goes_live(page, lambda: go(page, x["id"]))
        expect(page.locator("#stop-button")).to_be_visible()
        send(page, "more for X")  # waits for X's run (the page's clock stands still)
        signed_out_elsewhere(page, server)
        page.clock.run_for(100)  # the prompt looks again: the page left its chat
        alert = page.locator("#alert")
        expect(alert).to_contain_text("back in that chat's prompt box when you open it after signing in")
        other = open_ui(browser, server)  # another tab signs in, then out
        expect(other.locator("#sidebar")).to_be_visible()
        other.get_by_role("button", name="Sign out").click()
        expect(other.locator("#alert")).to_have_text("You signed out.")
        expect(alert).to_have_text("You were signed out: sign in again. The prompts this page kept "
                                   "for chats are gone: Sign out was pressed in another tab.")
        assert c.post(f"/api/runs/{held['id']}/cancel").status_code == 200
        wait_run(c, held["id"])
        sign_in(page, server.token)
        expect(page.locator("#chat-title")).to_have_text("chat X")
        expect(page.locator("#conn")).to_have_text("Live")
        page.clock.run_for(100)
        expect(page.get_by_label("Prompt")).to_have_value("")
        assert prompts(c, x["id"]) == ["hello X"]
        assert errors == []
        assert other.errors == []  # type: ignore[attr-defined]


def test_two_waiting_prompts_the_second_edited_then_left_are_kept_in_their_order(
    make_server: Any, browser: Any
) -> None:
    # Review 17: P1 waiting for the chat's run, P2 waiting for P1, P2 edited in the box, the
    # chat left: the box came back as "P2 edited\n\nP1" (the edit was kept as the chat was left,
    # P1 joined after it). P1 came first; and the alert said P2 was "back in the box" (its
    # edit is)
    server = make_server(sim_env=HELD_RUN)
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
        held = c.post(f"/api/chats/{x['id']}/runs", json={"prompt": "hello X"}).json()
        page, errors = paused_page(browser, server)
        goes_live(page, lambda: go(page, x["id"]))
        expect(page.locator("#stop-button")).to_be_visible()
        send(page, "P1")  # waits for X's run (the page's clock stands still)
        send(page, "P2")  # waits for P1
        page.get_by_label("Prompt").fill("P2 edited")  # not sent again
        goes_live(page, lambda: go(page, y["id"]))
        page.clock.run_for(100)  # the prompts look again: their chat was left
        expect(page.locator("#alert")).to_contain_text(
            "It is back in that chat's prompt box when you open it again. The prompt you sent after "
            "it was not sent either: what you edited it into is kept for that chat too, after it.")
        assert c.post(f"/api/runs/{held['id']}/cancel").status_code == 200
        assert wait_run(c, held["id"])["status"] == "cancelled"
        goes_live(page, lambda: go(page, x["id"]))
        expect(page.get_by_label("Prompt")).to_have_value("P1\n\nP2 edited")
        assert prompts(c, x["id"]) == ["hello X"]
        assert errors == []
