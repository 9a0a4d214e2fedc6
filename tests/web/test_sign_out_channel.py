"""Sign out pressed in one tab, heard by this server's other tabs (kept.js: a BroadcastChannel,
localStorage's storage event as the fallback): where the browser refuses localStorage, and in
a tab restored from the back-forward cache. (See test_kept_prompts.py for the plain case.)"""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from browser_launch import BROWSER_MARKER_ENV, CHROMIUM_ARGS, TIMEOUT_MS, browser_processes
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


@pytest.fixture
def caching_browser(chromium: str, chromium_browser: Any) -> Iterator[Any]:
    """A context of a Chromium of its own with the back-forward cache on (Playwright turns it off
    by default: ``--disable-back-forward-cache``), launched by the module's Playwright (one runs
    in a thread at a time); no process of it is left at the end."""

    marker = uuid.uuid4().hex
    launched = chromium_browser.browser_type.launch(
        executable_path=chromium, headless=True, args=CHROMIUM_ARGS, timeout=TIMEOUT_MS,
        ignore_default_args=["--disable-back-forward-cache"],
        env={**os.environ, BROWSER_MARKER_ENV: marker},
    )
    try:
        context = launched.new_context(viewport={"width": 1100, "height": 800})
        context.set_default_timeout(TIMEOUT_MS)
        yield context
        context.close()
    finally:
        launched.close()
    leftover = browser_processes(marker)
    for pid in leftover:
        os.kill(pid, signal.SIGKILL)
    assert not leftover, f"browser processes outlived the test: {leftover}"


@pytest.mark.parametrize("how", ["Sign out", "its mark only"])
def test_a_tab_gone_back_to_after_a_sign_out_elsewhere_keeps_nothing(
    make_server: Any, caching_browser: Any, how: str
) -> None:
    # The tab is left (another address), Sign out is pressed in another tab, the tab goes back.
    # "Sign out": Chromium drops a cached page a channel message is sent to, and loads it again.
    # "its mark only": the other tab's Sign out reaches this one by its mark in localStorage
    # alone (its message lost), and the page comes back from the cache (pageshow, persisted):
    # it finds the mark. Either way: the sign-in form, nothing kept for whoever signs in next.
    # (The page before the channel passed both too: Chromium gave the restored page the storage
    # event it missed. The check at pageshow is tested by itself above, with that event gone.)
    server = make_server()
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
    page = open_ui(caching_browser, server)
    typed_in_two_chats(page, server, x, y)
    go(page, None)  # (the welcome view: no stream open, which would keep the page out of the cache)
    expect(page.locator("#welcome-view")).to_be_visible()
    page.evaluate("() => { window.__beforeLeaving = true; }")
    page.goto("about:blank")
    other = open_ui(caching_browser, server)
    expect(other.locator("#sidebar")).to_be_visible()
    if how == "Sign out":
        other.get_by_role("button", name="Sign out").click()
        expect(other.locator("#alert")).to_have_text("You signed out.")
    else:
        other.evaluate(f"() => localStorage.setItem({SIGNED_OUT_KEY!r}, 'a Sign out, its message lost')")
        signed_out_elsewhere_now(other, server)
    page.go_back(wait_until="commit")
    expect(page.locator("#login-view")).to_be_visible()
    if how != "Sign out":  # (the list's refresh would have found the session ended, in 10 s)
        assert page.evaluate("() => window.__beforeLeaving === true")  # from the cache
        expect(page.locator("#alert")).to_have_text("You were signed out: sign in again.")
    sign_in(page, server.token)
    for chat in (x, y):
        goes_live(page, lambda chat=chat: go(page, chat["id"]))
        expect(page.locator("#chat-title")).to_have_text(chat["title"])
        expect(page.get_by_label("Prompt")).to_have_value("")
    assert page.evaluate("() => sessionStorage.length") == 0
    assert page.errors == []  # type: ignore[attr-defined]
    assert other.errors == []  # type: ignore[attr-defined]
