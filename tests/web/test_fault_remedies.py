"""What the page says for each of the agent's failures (audit 16): one error line, with a
remedy a person in a browser can follow, per fault. A busy chat ("may still be running in
another agent process") was told to start a new chat (one remedy for every SessionError),
and the error lines carried the Python library's advice ("pass trust=True …",
"AgentConfig(api_key=...)", "client.list_models()", "check the chat id"), which means nothing
in a browser."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect
from server_helpers import new_chat
from test_ui import open_chat, open_ui, send

LIBRARY_ONLY = ("AgentConfig(", "trust=True", "force_approve", "list_models()", "check the chat id",
                "--resume", "sessions list")

# fault: (the error's type, words of its message, words of the page's remedy)
FAULTS = {
    "auth": ("AuthenticationError", "Authentication required", "agent login"),
    "trust": ("WorkspaceTrustError", "Workspace Trust Required", "Trust the workspace"),
    "invalid-model": ("InvalidModelError", "Cannot use this model", "another model"),
    "usage-limit": ("UsageLimitError", "usage limit", "Wait for the usage limit to reset"),
    "bad-resume": ("SessionError", "must be a UUID", "start a new chat"),
    "chat-busy": ("SessionError", "may still be running in another agent process",
                  "wait for it to end, or stop it, then send the prompt again"),
    "crash": ("AgentProcessError", "terminated unexpectedly", "send the prompt again"),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_each_fault_has_its_own_remedy_and_no_library_advice(
    make_server: Any, browser: Any, fault: str
) -> None:
    error_type, said, remedy = FAULTS[fault]
    server = make_server(sim_env={"CURSOR_AGENT_SIM_FAULT": fault})
    with server.client() as c:
        chat = new_chat(c)
    page = open_ui(browser, server)
    open_chat(page, server, chat["id"])
    send(page, "hello")
    expect(page.locator("#result-bar")).to_contain_text("Failed")
    error = page.locator(".msg.error")
    expect(error).to_have_count(1)
    expect(error.locator("strong")).to_have_text(f"Error ({error_type}): ")
    expect(error.locator(".error-text")).to_contain_text(said)
    expect(error.locator(".remedy")).to_contain_text(remedy)
    text = page.locator("#timeline").inner_text()
    assert not [w for w in LIBRARY_ONLY if w in text], text
    if fault == "chat-busy":
        assert "start a new chat" not in error.locator(".remedy").inner_text()
    page.reload()  # the same once the chat is opened again (its folded state)
    expect(page.locator(".msg.error")).to_have_count(1)
    expect(page.locator(".msg.error .remedy")).to_contain_text(remedy)
    text = page.locator("#timeline").inner_text()
    assert not [w for w in LIBRARY_ONLY if w in text], text
    assert page.errors == []  # type: ignore[attr-defined]
