"""A prompt refused because the chat's run goes on says so ("The agent is still working on the
previous prompt…"); once that run has ended the alert goes (audit 5, F2: it stayed, no longer
true). The run is held by an ACP permission request, answered when the test chooses."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect
from test_request_cards import acp_chat
from test_ui import open_chat, open_ui, send

BUSY = "The agent is still working on the previous prompt"


def test_the_busy_alert_goes_once_the_run_has_ended(make_server: Any, browser: Any) -> None:
    server = make_server()
    with server.client() as c:
        chat = acp_chat(c)
    page = open_ui(browser, server)
    open_chat(page, server, chat["id"])
    send(page, "run `echo hello`")
    allow = page.get_by_role("button", name="Allow once")
    expect(allow).to_be_visible()  # the run waits for the answer
    send(page, "second prompt")
    expect(page.locator("#alert")).to_contain_text(BUSY)
    expect(page.get_by_label("Prompt")).to_have_value("second prompt")  # kept in the box
    allow.click()
    expect(page.locator("#result-bar")).to_have_attribute("data-status", "succeeded")
    expect(page.locator("#alert")).to_be_hidden()
    assert page.errors == []  # type: ignore[attr-defined]
