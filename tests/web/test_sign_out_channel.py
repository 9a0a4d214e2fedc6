"""Sign out pressed in one tab, heard by this server's other tabs (kept.js: a BroadcastChannel,
localStorage's storage event as the fallback): where the browser refuses localStorage, and in
a tab restored from the back-forward cache. (See test_kept_prompts.py for the plain case.)"""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect
from test_kept_prompts import sign_in, signed_out_elsewhere_now, titled
from test_prompt_in_flight import go
from test_ui import goes_live, open_chat, open_ui

REFUSE_LOCAL_STORAGE = """
Object.defineProperty(window, "localStorage", {
  configurable: true,
  get() { throw new DOMException("The browser refuses storage here.", "SecurityError"); },
});
"""
"""Every page of the context: localStorage refused (private mode, a policy)."""

SIGNED_OUT_KEY = "cursor-agent-api:signed-out"


def typed_in_two_chats(page: Page, server: Any, x: dict[str, Any], y: dict[str, Any]) -> None:
    """Text typed in chat Y's box (kept for Y as the page goes to X), then in X's."""
    open_chat(page, server, y["id"])
    page.get_by_label("Prompt").fill("secret typed in Y")
    goes_live(page, lambda: go(page, x["id"]))
    page.get_by_label("Prompt").fill("secret typed in X")


def nothing_kept_after_signing_in(page: Page, server: Any, y: dict[str, Any]) -> None:
    """Signed in again (the form's reload comes back to chat X): neither box holds its text."""
    sign_in(page, server.token)
    expect(page.locator("#chat-title")).to_have_text("chat X")
    expect(page.locator("#conn")).to_have_text("Live")
    expect(page.get_by_label("Prompt")).to_have_value("")
    goes_live(page, lambda: go(page, y["id"]))
    expect(page.locator("#chat-title")).to_have_text("chat Y")
    expect(page.get_by_label("Prompt")).to_have_value("")
    assert page.evaluate("() => sessionStorage.length") == 0


def test_a_sign_out_in_another_tab_is_heard_where_local_storage_is_refused(
    make_server: Any, browser: Any
) -> None:
    # the storage event was the only way: with localStorage refused the other tab kept its
    # chat open and its prompts, for whoever signed in next on that computer
    server = make_server()
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
    browser.add_init_script(REFUSE_LOCAL_STORAGE)
    page = open_ui(browser, server)
    refused = "() => { try { localStorage.length; return 'kept'; } catch { return 'refused'; } }"
    assert page.evaluate(refused) == "refused"
    typed_in_two_chats(page, server, x, y)
    other = open_ui(browser, server)
    expect(other.locator("#sidebar")).to_be_visible()
    other.get_by_role("button", name="Sign out").click()
    expect(other.locator("#alert")).to_have_text("You signed out.")
    expect(page.locator("#login-view")).to_be_visible()
    expect(page.locator("#alert")).to_have_text("You were signed out: sign in again.")
    nothing_kept_after_signing_in(page, server, y)
    assert page.errors == []  # type: ignore[attr-defined]
    assert other.errors == []  # type: ignore[attr-defined]


def test_a_tab_back_from_the_cache_after_a_sign_out_elsewhere_drops_its_kept_prompts(
    make_server: Any, browser: Any
) -> None:
    # A tab in the back-forward cache hears neither the channel nor the storage event. Headless
    # Chromium under Playwright keeps no page in that cache (Playwright turns it off: a page
    # going back is loaded again), so the tab's return is its pageshow event (persisted), with
    # the Sign out's mark written meanwhile in localStorage, as another tab writes it.
    server = make_server()
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
    page = open_ui(browser, server)
    typed_in_two_chats(page, server, x, y)
    page.evaluate(f"() => localStorage.setItem({SIGNED_OUT_KEY!r}, 'a Sign out in another tab')")
    signed_out_elsewhere_now(page, server)  # (that Sign out ended the session)
    expect(page.locator("#login-view")).to_be_visible()  # (the stream closed: 4401)
    page.evaluate("() => window.dispatchEvent(new PageTransitionEvent('pageshow', { persisted: true }))")
    expect(page.locator("#alert")).to_have_text("You were signed out: sign in again.")
    nothing_kept_after_signing_in(page, server, y)
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_tab_back_from_the_cache_with_no_sign_out_meanwhile_keeps_its_prompts(
    make_server: Any, browser: Any
) -> None:
    # (the mark it heard, or the one there as it loaded, is not a new Sign out)
    server = make_server()
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
    page = open_ui(browser, server)
    page.evaluate(f"() => localStorage.setItem({SIGNED_OUT_KEY!r}, 'an old Sign out')")
    page.reload()  # (loaded with that mark there)
    typed_in_two_chats(page, server, x, y)
    signed_out_elsewhere_now(page, server)  # the session ended, not by Sign out
    expect(page.locator("#login-view")).to_be_visible()
    page.evaluate("() => window.dispatchEvent(new PageTransitionEvent('pageshow', { persisted: true }))")
    sign_in(page, server.token)
    expect(page.locator("#chat-title")).to_have_text("chat X")
    expect(page.locator("#conn")).to_have_text("Live")
    expect(page.get_by_label("Prompt")).to_have_value("secret typed in X")
    goes_live(page, lambda: go(page, y["id"]))
    expect(page.get_by_label("Prompt")).to_have_value("secret typed in Y")
    assert page.errors == []  # type: ignore[attr-defined]
