"""ACP chats in the page (issue 14 point 5): a person approves a shell command on its card and
sees its output, rejects another and sees it rejected, answers a question — by keyboard and
mouse — and the decisions are still shown after a reload. No "run with --force" dead end."""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import Page, expect
from server_helpers import poll
from test_ui import open_ui, shows_result


def send(page: Page, prompt: str) -> None:
    expect(page.locator("#stop-button")).to_be_hidden()
    box = page.get_by_label("Prompt")
    box.fill(prompt)
    box.press("Enter")


def test_approve_reject_and_answer_on_the_cards(make_server: Any, browser: Any, shot: Any) -> None:
    server = make_server()
    page = open_ui(browser, server)
    page.get_by_role("button", name="New chat").click()
    page.get_by_label("Folder inside it (optional)").fill("project")
    page.get_by_label("How the agent runs").select_option("acp")
    page.get_by_role("button", name="Create chat").click()
    expect(page.locator("#conn")).to_have_text("Live")
    expect(page.locator("#chat-meta")).to_contain_text("ACP")

    # 1. Approve, by keyboard: the card is announced (the focus stays in the prompt box);
    #    Shift+Tab from the box reaches the card's buttons; Enter presses "Allow once".
    send(page, "run `echo approved-by-a-person`")
    card = page.locator(".card.request-permission").first
    expect(card.locator(".card-kind")).to_contain_text("Shell command")
    expect(card.locator(".request-what")).to_have_text("echo approved-by-a-person")
    allow = card.get_by_role("button", name="Allow once")
    expect(page.get_by_label("Prompt")).to_be_focused()
    expect(page.locator("#announce")).to_contain_text("echo approved-by-a-person")
    for _ in range(3):  # Reject, Always allow, Allow once
        page.keyboard.press("Shift+Tab")
    expect(allow).to_be_focused()
    expect(card.get_by_role("button", name="Always allow")).to_be_visible()
    shot(page, "permission")
    page.keyboard.press("Enter")
    expect(card).to_have_attribute("data-decision", "allow-once")
    expect(card.locator(".request-decision")).to_have_text("Allowed once")
    expect(card.get_by_role("button")).to_have_count(0)
    shell = page.locator(".card.tool-shell").first
    expect(shell).to_have_attribute("data-status", "succeeded")
    expect(shell.locator("details.card-output").first).to_contain_text("approved-by-a-person")
    expect(page.locator("#result-bar")).to_contain_text("Done")

    # 2. Reject with the mouse: the call does not run; no "allow tools and run again" offer.
    send(page, "run `echo must-not-run`")
    card2 = page.locator(".card.request-permission").nth(1)
    card2.get_by_role("button", name="Reject").click()
    expect(card2).to_have_attribute("data-decision", "reject")
    expect(card2.locator(".request-decision")).to_have_text("Rejected")
    shell2 = page.locator(".card.tool-shell").nth(1)
    expect(shell2).not_to_have_attribute("data-status", "running")
    expect(shell2).not_to_have_attribute("data-status", "succeeded")
    expect(page.locator("#result-bar")).to_be_visible()
    expect(page.locator(".offer")).to_have_count(0)
    assert not any("must-not-run" in t for t in shell2.locator("pre").all_text_contents())

    # 3. A question: pick the second option, Answer.
    send(page, "ask me how to proceed")
    q = page.locator(".card.request-question")
    expect(q.locator("legend")).to_have_text("How should I proceed?")
    q.get_by_label("Stop").check()
    q.get_by_role("button", name="Answer").click()
    expect(q).to_have_attribute("data-decision", "answered")
    expect(q.locator(".request-decision")).to_have_text("Answered: Stop")
    expect(page.locator("#stop-button")).to_be_hidden()
    shot(page, "answered")

    # 4. After a reload the chat opens with its cards and their decisions.
    page.reload()
    expect(page.locator("#conn")).to_have_text("Live")
    expect(page.locator(".card.request")).to_have_count(3)
    decisions = page.eval_on_selector_all(".card.request", "cs => cs.map(c => c.dataset.decision)")
    assert decisions == ["allow-once", "reject", "answered"]
    expect(page.locator(".card.request .request-actions")).to_have_count(0)
    assert page.errors == []  # type: ignore[attr-defined]


def test_escape_rejects_and_the_header_names_the_mode(make_server: Any, browser: Any) -> None:
    server = make_server()
    with server.client() as c:
        chat = c.post("/api/chats", json={"workspace": "project",
                                           "options": {"trust": True, "transport": "acp"}}).json()
    page = open_ui(browser, server)
    page.goto(f"{server.url}/#/chat/{chat['id']}")
    expect(page.locator("#conn")).to_have_text("Live")
    expect(page.locator("#chat-meta")).to_contain_text(re.compile("ACP"))
    send(page, "run `echo escape-me`")
    card = page.locator(".card.request-permission")
    expect(card).to_be_visible()
    card.focus()
    page.keyboard.press("Escape")  # answers the card; it does not stop the run
    expect(card).to_have_attribute("data-decision", "reject")
    expect(page.locator("#result-bar")).to_contain_text("Done")
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_request_arriving_before_the_prompt_is_answered_is_announced(
    make_server: Any, browser: Any
) -> None:
    """The server's answer to the prompt's POST can come after the run's first request has
    arrived over the WebSocket (seen under load). The box must already be empty then (the
    prompt went); the new card is announced and the focus stays in the box (a card never takes
    it from there). Here the POST's answer is held until the card shows."""
    server = make_server()
    with server.client() as c:
        chat = c.post("/api/chats", json={"workspace": "project", "options": {
            "trust": True, "transport": "acp", "mode": "plan"}}).json()
    page = open_ui(browser, server)
    page.goto(f"{server.url}/#/chat/{chat['id']}")
    expect(page.locator("#conn")).to_have_text("Live")
    expect(page.locator("#chat-meta")).to_contain_text("plan mode")

    card = page.locator(".card.request-plan").first
    held: list[tuple[Any, Any]] = []

    def hold_the_answer(route: Any) -> None:
        # the run starts on the server; its answer reaches the page only when the test says
        held.append((route, route.fetch()))

    page.route(re.compile(r".*/api/chats/[^/]+/runs$"), hold_the_answer)
    send(page, "create alpha.txt with hello")
    expect(card).to_be_visible()
    expect(page.locator("#announce")).to_contain_text("The agent proposes a plan")
    expect(page.get_by_label("Prompt")).to_be_focused()
    expect(page.get_by_label("Prompt")).to_have_value("")
    for _ in range(600):  # the server's answer may reach the test after the card did
        if held:
            break
        page.wait_for_timeout(50)
    ((route, answer),) = held
    route.fulfill(response=answer)
    page.unroute_all(behavior="ignoreErrors")
    card.focus()
    page.keyboard.press("Escape")
    expect(card).to_have_attribute("data-decision", "rejected")
    assert not page.errors  # type: ignore[attr-defined]


def test_plan_mode_accept_one_plan_and_reject_another(make_server: Any, browser: Any, shot: Any) -> None:
    server = make_server()
    page = open_ui(browser, server)
    page.get_by_role("button", name="New chat").click()
    page.get_by_label("Folder inside it (optional)").fill("project")
    mode = page.get_by_label("Session mode (ACP)")
    expect(mode).to_be_disabled()  # print mode has no session mode
    page.get_by_label("How the agent runs").select_option("acp")
    mode.select_option("plan")
    page.get_by_role("button", name="Create chat").click()
    expect(page.locator("#conn")).to_have_text("Live")
    expect(page.locator("#chat-meta")).to_contain_text("plan mode")

    # 1. A plan: its steps on the card; Accept.
    send(page, "create alpha.txt with hello")
    card = page.locator(".card.request-plan").first
    expect(card.locator(".card-kind")).to_have_text("Plan")
    expect(card.locator(".request-plan")).to_contain_text("alpha.txt")
    accept = card.get_by_role("button", name="Accept")
    expect(accept).to_be_visible()
    expect(accept).not_to_be_focused()
    shot(page, "plan")
    accept.click()
    expect(card).to_have_attribute("data-decision", "accepted")
    expect(card.locator(".request-decision")).to_have_text("Accepted")
    expect(page.locator("#result-bar")).to_contain_text("Done")
    expect(page.locator("#timeline")).to_contain_text("was accepted")

    # 2. Another plan: Reject, by keyboard (Escape on the card).
    send(page, "create beta.txt with bye")
    card2 = page.locator(".card.request-plan").nth(1)
    expect(card2.get_by_role("button", name="Accept")).to_be_visible()
    card2.focus()
    page.keyboard.press("Escape")
    expect(card2).to_have_attribute("data-decision", "rejected")
    expect(card2.locator(".request-decision")).to_have_text("Rejected")
    expect(page.locator("#stop-button")).to_be_hidden()
    expect(page.locator(".offer")).to_have_count(0)

    # plan mode wrote nothing; the options form shows the mode; back to agent mode
    project = server.root / "project"
    assert not (project / "alpha.txt").exists() and not (project / "beta.txt").exists()
    page.get_by_role("button", name="Options", exact=True).click()
    expect(page.locator("#copt-mode")).to_have_value("plan")
    page.locator("#copt-mode").select_option("agent")
    page.get_by_role("button", name="Save options").click()
    expect(page.locator("#chat-meta")).not_to_contain_text("plan mode")
    # (the stop button hidden and the two plan cards were so before the run: its end is waited for)
    shows_result(page, lambda: send(page, "create alpha.txt with hello"))
    poll(lambda: (project / "alpha.txt").exists())  # agent mode: the edit is made
    expect(page.locator("#stop-button")).to_be_hidden()
    expect(page.locator(".card.request-plan")).to_have_count(2)
    assert page.errors == []  # type: ignore[attr-defined]
