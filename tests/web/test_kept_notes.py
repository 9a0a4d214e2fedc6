"""What the page says of the prompts it keeps for chats (see test_kept_prompts.py): an alert
that says where a kept prompt is stays, as a note with its own Close button, when a later alert
comes while that is still true; after signing in again, every chat with a kept prompt is named;
a waiting prompt's box changed and changed back is no edit."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from playwright.sync_api import Page, expect
from server_helpers import wait_run
from test_kept_prompts import KEPT_FOR_X, keep_for_x, sign_in, signed_out_elsewhere, titled
from test_prompt_in_flight import HELD_RUN, go, paused_page, prompts
from test_ui import goes_live, open_chat, open_ui, send

DELETED_X = "The chat “chat X” was deleted, with a prompt of yours kept for it, never sent."


def orphaned_then_another_alert(c: Any, page: Page, x: dict[str, Any], y: dict[str, Any]) -> None:
    """A prompt kept for chat X, X deleted elsewhere while chat Y is open with text in its box:
    the alert says where X's prompt goes; then the page goes to a chat that does not exist, and
    the alert says so."""
    keep_for_x(c, page, x, y["id"])
    page.get_by_label("Prompt").fill("typed in Y")  # (X's prompt waits for an empty box)
    assert c.delete(f"/api/chats/{x['id']}").status_code == 204  # another tab, the CLI
    page.clock.run_for(11_000)  # the list's next refresh: X is gone
    expect(page.locator("#alert")).to_contain_text(DELETED_X)
    go(page, "no-such-chat")
    expect(page.locator("#alert")).to_have_text("That chat does not exist on this server.")


def test_a_later_alert_leaves_the_one_saying_where_a_deleted_chats_prompt_went(
    make_server: Any, browser: Any
) -> None:
    # the later alert replaced it: nothing on the page said where the prompt was any more
    server = make_server(sim_env=HELD_RUN)
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
        page, errors = paused_page(browser, server)
        orphaned_then_another_alert(c, page, x, y)
        notes = page.locator("#kept-notes li")
        expect(notes).to_have_count(1)
        expect(notes.first).to_contain_text(DELETED_X)
        expect(notes.first).to_contain_text("into the next chat's you open, not sent")
        expect(page.locator("#kept-notes")).to_have_attribute(
            "aria-label", "Notes on the text kept for chats")
        # it is true until a chat opens: then the prompt is in its box, and the alert says so
        goes_live(page, lambda: go(page, y["id"]))
        expect(page.get_by_label("Prompt")).to_have_value("more for X\n\ntyped in Y")
        expect(page.locator("#alert")).to_contain_text("it goes to this chat, “chat Y”")
        expect(notes).to_have_count(0)
        expect(page.locator("#kept-notes")).to_be_hidden()
        assert prompts(c, y["id"]) == []
        assert errors == []


def test_a_note_on_a_kept_prompt_goes_when_closed_and_shows_its_titles_as_text(
    make_server: Any, browser: Any
) -> None:
    server = make_server(sim_env=HELD_RUN)
    markup = "<img src=x onerror=\"window.__pwned = 1\">"
    with server.client() as c:
        x, y = titled(c, markup), titled(c, "chat Y")
        page, errors = paused_page(browser, server)
        # a prompt kept for X (its title is markup), then a later alert in chat Y
        keep_for_x(c, page, x, y["id"])
        alert = page.locator("#alert")
        page.get_by_label("Prompt").press("Enter")  # an empty box: a later alert
        expect(alert).to_have_text("Type a prompt first: the box is empty.")
        note = page.locator("#kept-notes li")
        expect(note).to_have_count(1)
        expect(note.locator("p")).to_have_text(
            f"Your prompt for “{markup}” was not sent: you left that chat while its run was going. "
            "It is back in that chat's prompt box when you open it again.")
        expect(note.locator("img")).to_have_count(0)  # text, not markup
        close = note.get_by_role("button", name="Close this note")
        close.click()
        expect(page.locator("#kept-notes li")).to_have_count(0)
        expect(page.locator("#kept-notes")).to_be_hidden()
        expect(page.get_by_label("Prompt")).to_be_focused()  # (the button went with the note)
        goes_live(page, lambda: go(page, x["id"]))  # closed, not dropped: the prompt is kept
        expect(page.get_by_label("Prompt")).to_have_value("more for X")
        assert page.evaluate("() => window.__pwned") is None
        assert errors == []


def test_a_note_on_a_kept_prompt_goes_once_its_chat_opens(make_server: Any, browser: Any) -> None:
    server = make_server(sim_env=HELD_RUN)
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
        page, errors = paused_page(browser, server)
        keep_for_x(c, page, x, y["id"])
        page.get_by_label("Prompt").press("Enter")  # an empty box: a later alert
        expect(page.locator("#alert")).to_have_text("Type a prompt first: the box is empty.")
        expect(page.locator("#kept-notes li p")).to_have_text([
            f"{KEPT_FOR_X} while its run was going. It is back in that chat's prompt box when you "
            "open it again."])
        goes_live(page, lambda: go(page, x["id"]))
        expect(page.get_by_label("Prompt")).to_have_value("more for X")
        expect(page.locator("#kept-notes li")).to_have_count(0)
        assert errors == []


def test_after_signing_in_again_the_first_alert_names_every_chat_with_a_kept_prompt(
    make_server: Any, browser: Any
) -> None:
    # it named the first one only: the others' prompts were back in their boxes unannounced
    server = make_server()
    with server.client() as c:
        x, y, z = titled(c, "chat X"), titled(c, "chat <b>Y</b>"), titled(c, "chat Z")
    page = open_ui(browser, server)
    open_chat(page, server, x["id"])
    page.get_by_label("Prompt").fill("for X")
    goes_live(page, lambda: go(page, y["id"]))
    page.get_by_label("Prompt").fill("for Y")
    goes_live(page, lambda: go(page, z["id"]))
    signed_out_elsewhere(page, server)
    sign_in(page, server.token)  # (the page comes back to chat Z, the last open)
    expect(page.locator("#chat-title")).to_have_text("chat Z")
    expect(page.locator("#alert")).to_have_text(
        "Your prompts for 2 chats, “chat X” and “chat <b>Y</b>”, were kept while you were signed "
        "out, not sent: each is back in its chat's prompt box when you open that chat.")
    expect(page.locator("#alert b")).to_have_count(0)
    goes_live(page, lambda: go(page, x["id"]))
    expect(page.get_by_label("Prompt")).to_have_value("for X")
    goes_live(page, lambda: go(page, y["id"]))
    expect(page.get_by_label("Prompt")).to_have_value("for Y")
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_waiting_prompt_changed_back_to_what_was_sent_is_kept_as_sent(
    make_server: Any, browser: Any
) -> None:
    # its edit kept as the chat was left, back in the box as it opened again, then undone: the
    # page still counted it an edit, and dropped the prompt as the chat was left again
    server = make_server(sim_env=HELD_RUN)
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
        held = c.post(f"/api/chats/{x['id']}/runs", json={"prompt": "hello X"}).json()
        page, errors = paused_page(browser, server)
        goes_live(page, lambda: go(page, x["id"]))
        expect(page.locator("#stop-button")).to_be_visible()
        send(page, "first version")  # waits for X's run (the page's clock stands still)
        box = page.get_by_label("Prompt")
        box.fill("first version, edited")  # not sent again
        goes_live(page, lambda: go(page, y["id"]))
        goes_live(page, lambda: go(page, x["id"]))
        expect(box).to_have_value("first version, edited")
        box.fill("first version")  # changed back: no edit
        goes_live(page, lambda: go(page, y["id"]))
        page.clock.run_for(100)  # the prompt looks again: its chat was left
        expect(page.locator("#alert")).to_contain_text(
            f"{KEPT_FOR_X} while its run was going. It is back in that chat's prompt box")
        assert c.post(f"/api/runs/{held['id']}/cancel").status_code == 200
        assert wait_run(c, held["id"])["status"] == "cancelled"
        goes_live(page, lambda: go(page, x["id"]))
        expect(box).to_have_value("first version")
        assert prompts(c, x["id"]) == ["hello X"]
        assert errors == []


def typed_in_each_then_signed_out(
    page: Page, server: Any, chats: list[dict[str, Any]], *, typed_in_last: bool = False
) -> None:
    """Text typed in each of ``chats`` but the last (unless ``typed_in_last``: "for <title>"),
    each left for the next; then the session ends (signed out in another tab) with the last one
    open."""
    open_chat(page, server, chats[0]["id"])
    for chat, following in itertools.pairwise(chats):
        page.get_by_label("Prompt").fill(f"for {chat['title']}")
        goes_live(page, lambda: go(page, following["id"]))  # noqa: B023 (called at once)
    if typed_in_last:
        page.get_by_label("Prompt").fill(f"for {chats[-1]['title']}")
    signed_out_elsewhere(page, server)


KEPT_XY = ("Your prompts for 2 chats, “chat X” and “chat Y”, were kept while you were signed out, "
           "not sent: each is back in its chat's prompt box when you open that chat.")


def test_after_signing_in_again_the_kept_chats_are_named_even_if_another_was_deleted(
    make_server: Any, browser: Any
) -> None:
    # the alert said where the deleted chat's text went, and nothing named X and Y: their text
    # came back in their boxes unannounced
    server = make_server()
    with server.client() as c:
        x, y, z, w = (titled(c, f"chat {n}") for n in "XYZW")
        page = open_ui(browser, server)
        typed_in_each_then_signed_out(page, server, [x, y, z, w])
        assert c.delete(f"/api/chats/{z['id']}").status_code == 204  # another tab, the CLI
    sign_in(page, server.token)  # (the page comes back to chat W, the last open)
    expect(page.locator("#chat-title")).to_have_text("chat W")
    expect(page.get_by_label("Prompt")).to_have_value("for chat Z")
    expect(page.locator("#alert")).to_contain_text("The chat “chat Z” was deleted")
    expect(page.locator("#alert")).to_contain_text("it goes to this chat, “chat W”")
    expect(page.locator("#kept-notes li p")).to_have_text([KEPT_XY])
    # the note was said, then replaced in the polite region by the chat opening: now both, once
    expect(page.locator("#announce")).to_have_text(f"{KEPT_XY} Opened chat W: no turns yet.")
    goes_live(page, lambda: go(page, y["id"]))
    expect(page.get_by_label("Prompt")).to_have_value("for chat Y")
    goes_live(page, lambda: go(page, x["id"]))
    expect(page.get_by_label("Prompt")).to_have_value("for chat X")
    expect(page.locator("#kept-notes li")).to_have_count(0)
    assert page.errors == []  # type: ignore[attr-defined]


def test_signing_in_again_onto_a_chat_with_a_kept_prompt_the_alert_names_the_others(
    make_server: Any, browser: Any
) -> None:
    # the page reopened onto X, itself kept: the alert naming X and Y was cleared as X opened,
    # into a silent note: nothing said that Y's text was kept
    server = make_server()
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
    page = open_ui(browser, server)
    typed_in_each_then_signed_out(page, server, [y, x], typed_in_last=True)
    sign_in(page, server.token)  # (the page comes back to chat X, the last open)
    expect(page.locator("#chat-title")).to_have_text("chat X")
    expect(page.get_by_label("Prompt")).to_have_value("for chat X")  # (X has opened)
    expect(page.get_by_role("alert")).to_have_text(
        "Your prompt for “chat X”, kept while you were signed out, goes back into its prompt box "
        "as it opens, not sent. Your prompt for “chat Y” was kept while you were signed out, not "
        "sent: it is back in that chat's prompt box when you open it.")
    expect(page.locator("#kept-notes li")).to_have_count(0)
    goes_live(page, lambda: go(page, y["id"]))
    expect(page.get_by_label("Prompt")).to_have_value("for chat Y")
    expect(page.locator("#alert")).to_be_hidden()
    expect(page.locator("#kept-notes li")).to_have_count(0)
    assert page.errors == []  # type: ignore[attr-defined]


def test_signing_in_again_onto_a_chat_that_does_not_open_its_kept_prompt_stays_named(
    make_server: Any, browser: Any
) -> None:
    # the alert about the others only (Y) became a note about Y as X's open failed, its text
    # naming X: as Y opened, the note went, and nothing named X's text, still kept
    server = make_server()
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
    page = open_ui(browser, server)
    typed_in_each_then_signed_out(page, server, [y, x], typed_in_last=True)
    page.route(f"**/api/chats/{x['id']}", lambda r: r.fulfill(status=500, json={"detail": "boom"}))
    sign_in(page, server.token)  # (the page comes back to chat X, the last open: it fails)
    expect(page.locator("#alert")).to_contain_text("The chat did not open: boom")
    expect(page.locator("#kept-notes li p")).to_have_text([
        "Your prompt for “chat X”, kept while you were signed out, goes back into its prompt box "
        "as it opens, not sent. Your prompt for “chat Y” was kept while you were signed out, not "
        "sent: it is back in that chat's prompt box when you open it."])
    page.unroute(f"**/api/chats/{x['id']}")
    goes_live(page, lambda: go(page, y["id"]))
    expect(page.get_by_label("Prompt")).to_have_value("for chat Y")
    expect(page.locator("#kept-notes li p")).to_have_text([
        "Your prompt for “chat X” was kept while you were signed out, not sent: it is back in "
        "that chat's prompt box when you open it."])
    goes_live(page, lambda: go(page, x["id"]))
    expect(page.get_by_label("Prompt")).to_have_value("for chat X")
    expect(page.locator("#kept-notes li")).to_have_count(0)
    assert page.errors == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("first", ["X", "Y"])
def test_a_note_about_several_chats_names_only_those_still_kept(
    make_server: Any, browser: Any, first: str
) -> None:
    # one of its chats opened (its text back in its box): the note still named it as kept (and
    # the alert, naming both, stayed as Y opened: it counted itself X's alone)
    server = make_server()
    with server.client() as c:
        chats = {n: titled(c, f"chat {n}") for n in "XYZ"}
    then = "Y" if first == "X" else "X"
    page = open_ui(browser, server)
    typed_in_each_then_signed_out(page, server, list(chats.values()))
    sign_in(page, server.token)
    expect(page.locator("#alert")).to_have_text(KEPT_XY)
    goes_live(page, lambda: go(page, chats[first]["id"]))  # the alert, still true, becomes a note
    expect(page.get_by_label("Prompt")).to_have_value(f"for chat {first}")
    expect(page.locator("#alert")).to_be_hidden()
    expect(page.locator("#kept-notes li p")).to_have_text([
        f"Your prompt for “chat {then}” was kept while you were signed out, not sent: it is back "
        "in that chat's prompt box when you open it."])
    goes_live(page, lambda: go(page, chats[then]["id"]))
    expect(page.get_by_label("Prompt")).to_have_value(f"for chat {then}")
    expect(page.locator("#kept-notes li")).to_have_count(0)
    assert page.errors == []  # type: ignore[attr-defined]


def test_each_notes_close_button_is_described_by_its_note(make_server: Any, browser: Any) -> None:
    # every button was "Close this note", nothing more: a screen reader could not tell them apart
    server = make_server(sim_env=HELD_RUN)
    with server.client() as c:
        x, z, w = titled(c, "chat X"), titled(c, "chat Z"), titled(c, "chat W")
        page, errors = paused_page(browser, server)
        keep_for_x(c, page, x, w["id"])
        keep_for_x(c, page, z, w["id"], "more for Z")  # (X's alert becomes a note)
        page.get_by_label("Prompt").press("Enter")  # an empty box: a later alert (Z's, a note)
        expect(page.locator("#alert")).to_have_text("Type a prompt first: the box is empty.")
        back = "while its run was going. It is back in that chat's prompt box when you open it again."
        said = [f"{KEPT_FOR_X} {back}", f"Your prompt for “chat Z” was not sent: you left that chat {back}"]
        expect(page.locator("#kept-notes li p")).to_have_text(said)
        buttons = page.locator("#kept-notes").get_by_role("button", name="Close this note")
        expect(buttons).to_have_count(2)
        for button, text in zip(buttons.all(), said, strict=True):
            expect(button).to_have_accessible_description(text)
        buttons.first.click()  # X's note goes, Z's stays, still described by its text
        expect(page.locator("#kept-notes li p")).to_have_text(said[1:])
        expect(buttons.first).to_have_accessible_description(said[1])
        assert errors == []
