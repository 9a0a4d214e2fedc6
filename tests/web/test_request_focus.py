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
