"""A request card of an ACP run never takes the focus from the prompt box or Stop, and never
puts it on a button that answers (review of 2026-11-24: the first Space typed for the prompt
pressed "Allow once"). The card is announced in the status region instead."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect
from server_helpers import Server
from test_acp_steering import open_ui, send


def acp_chat(browser: Any, server: Server, mode: str = "agent") -> Page:
    with server.client() as c:
        chat = c.post("/api/chats", json={"workspace": "project", "options": {
            "trust": True, "transport": "acp", "mode": mode}}).json()
    page = open_ui(browser, server)
    page.goto(f"{server.url}/#/chat/{chat['id']}")
    expect(page.locator("#conn")).to_have_text("Live")
    return page


def test_typing_after_a_card_arrives_goes_to_the_prompt_and_answers_nothing(
    make_server: Any, browser: Any
) -> None:
    server = make_server()
    page = acp_chat(browser, server)
    send(page, "run `echo never-meant-to-approve`")
    card = page.locator(".card.request-permission").first
    expect(card).to_be_visible()
    box = page.get_by_label("Prompt")
    expect(box).to_be_focused()
    expect(page.locator("#announce")).to_contain_text("echo never-meant-to-approve")
    page.keyboard.type("wait a moment")  # spaces included: meant for the prompt box
    expect(box).to_have_value("wait a moment")
    expect(card).to_have_attribute("data-state", "pending")
    assert card.get_attribute("data-decision") is None
    # the person answers when they choose: Tab from the card reaches its buttons
    card.focus()
    page.keyboard.press("Tab")
    expect(card.get_by_role("button", name="Allow once")).to_be_focused()
    page.keyboard.press("Enter")
    expect(card).to_have_attribute("data-decision", "allow-once")
    assert page.errors == []  # type: ignore[attr-defined]


def test_enter_on_stop_stops_the_run_while_a_plan_waits(make_server: Any, browser: Any) -> None:
    server = make_server()
    page = acp_chat(browser, server, mode="plan")
    send(page, "create alpha.txt with hello")
    stop = page.locator("#stop-button")
    expect(stop).to_be_visible()
    stop.focus()
    card = page.locator(".card.request-plan").first
    expect(card).to_be_visible()
    expect(stop).to_be_focused()  # the card did not take it
    page.keyboard.press("Enter")
    expect(page.locator("#result-bar")).to_contain_text("Stopped")
    expect(card).not_to_have_attribute("data-decision", "accepted")
    assert not (server.root / "project" / "alpha.txt").exists()
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_card_arriving_while_the_focus_is_nowhere_takes_it_itself(
    make_server: Any, browser: Any
) -> None:
    server = make_server()
    page = acp_chat(browser, server)
    send(page, "run `echo from-nowhere`")
    page.evaluate("document.activeElement.blur()")
    card = page.locator(".card.request-permission").first
    expect(card).to_be_visible()
    # whether the card came before or after the blur, the focus is never on an answer button
    focused = page.evaluate(
        "document.activeElement.tagName + ':' + (document.activeElement.textContent || '')")
    assert not focused.startswith("BUTTON"), focused
    page.keyboard.press("Space")
    page.keyboard.press("Enter")
    expect(card).to_have_attribute("data-state", "pending")
    page.keyboard.press("Escape")  # Esc on the card (or Stop from nowhere) never approves
    expect(page.locator("#result-bar")).to_be_visible()
    assert card.get_attribute("data-decision") != "allow-once"
    assert page.errors == []  # type: ignore[attr-defined]


FOCUSED = """() => { const a = document.activeElement;
  if (a === document.body) return 'body';
  return a.closest('.card.request') ? 'card:' + a.tagName : a.id || a.tagName; }"""


def test_answering_by_keyboard_keeps_the_focus_on_the_card(make_server: Any, browser: Any) -> None:
    """Review of 2026-11-25: Enter on Allow once (or Answer) dropped the focus to <body>, so a
    keyboard or screen reader user was thrown to the top of the page."""
    server = make_server()
    page = acp_chat(browser, server)
    send(page, "run `echo kept-focus`")
    card = page.locator(".card.request-permission").first
    allow = card.get_by_role("button", name="Allow once")
    allow.focus()
    page.keyboard.press("Enter")
    expect(card).to_have_attribute("data-decision", "allow-once")
    assert page.evaluate(FOCUSED) == "card:ARTICLE"
    expect(page.locator("#result-bar")).to_contain_text("Done")
    expect(card).to_be_focused()  # still there once the run is over

    send(page, "ask me how to proceed")
    q = page.locator(".card.request-question").first
    q.get_by_label("Stop").check()
    q.get_by_role("button", name="Answer").focus()
    page.keyboard.press("Enter")
    expect(q).to_have_attribute("data-decision", "answered")
    expect(q).to_be_focused()
    assert page.errors == []  # type: ignore[attr-defined]


def test_an_answer_not_sent_leaves_the_focus_on_its_card(make_server: Any, browser: Any) -> None:
    server = make_server()
    page = acp_chat(browser, server)
    send(page, "run `echo not-sent-first`")
    card = page.locator(".card.request-permission").first
    refused: list[str] = []

    def refuse_once(route: Any) -> None:
        if refused:
            route.continue_()
        else:
            refused.append(route.request.url)
            route.fulfill(status=503, json={"detail": "try again"})

    page.route("**/api/runs/*/requests/*", refuse_once)
    card.get_by_role("button", name="Allow once").focus()
    page.keyboard.press("Enter")
    expect(card.locator(".request-error")).to_contain_text("Not sent")
    expect(card).to_be_focused()
    expect(card.get_by_role("button", name="Allow once")).to_be_enabled()
    page.keyboard.press("Tab")  # the buttons are reached again from the card
    expect(card.get_by_role("button", name="Allow once")).to_be_focused()
    page.keyboard.press("Enter")
    expect(card).to_have_attribute("data-decision", "allow-once")
    expect(card).to_be_focused()
    assert refused
