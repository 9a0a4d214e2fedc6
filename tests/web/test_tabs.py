"""Several tabs, the keyboard and the browser's navigation (review "tabs", 2026-11-24): a prompt
waiting for a run to end goes to the chat it was typed in or nowhere; a list with "More chats"
shown drops a chat deleted elsewhere; a chat that failed to open opens on the next click; Esc
closes the Chats menu and leaves an input method's composition alone; the skip link keeps the
chat open; a sign-out in another tab shows the sign-in form; the page retries its settings."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect
from server_helpers import Server, new_chat
from test_ui import open_chat, open_ui, send

HELD = {"CURSOR_AGENT_SIM_FAULT": "silence"}
"""The agent: ``system/init``, then nothing until stopped (a run that stays running)."""
SIGNED_OUT = "You were signed out"


def item(chat_id: str) -> str:
    return f'#chat-list .chat-item[data-chat-id="{chat_id}"]'


def titled(c: Any, title: str) -> dict[str, Any]:
    chat = new_chat(c)
    assert c.patch(f"/api/chats/{chat['id']}", json={"title": title}).status_code == 200
    return {**chat, "title": title}


def prompts(c: Any, chat: dict[str, Any]) -> list[str]:
    return [r["prompt"] for r in c.get(f"/api/chats/{chat['id']}/runs").json()["runs"]]


def cancel_all(server: Server, *chats: dict[str, Any]) -> None:
    with server.client() as c:
        for chat in chats:
            for run in c.get(f"/api/chats/{chat['id']}/runs").json()["runs"]:
                if run["status"] in ("queued", "running"):
                    c.post(f"/api/runs/{run['id']}/cancel")


def test_a_prompt_waiting_for_a_run_is_not_sent_to_the_chat_opened_meanwhile(
    make_server: Any, browser: Any
) -> None:
    """It waited up to 3 s for the run to end, then went to whatever chat was open: Back sent
    it to the previous chat; New chat threw "Cannot read properties of null"."""
    server = make_server(sim_env=HELD)
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
    page = open_ui(browser, server)
    open_chat(page, server, y["id"])
    open_chat(page, server, x["id"])  # the history: Y, then X
    send(page, "first prompt for X")
    expect(page.locator("#stop-button")).to_be_visible()  # X's run goes on (held)
    send(page, "second prompt for X")  # waits for the run to end
    page.go_back()
    expect(page.locator("#chat-title")).to_have_text("chat Y")
    expect(page.locator("#alert")).to_contain_text("“chat X” was not sent")
    expect(page.get_by_label("Prompt")).to_have_value("")  # not in Y's box
    with server.client() as c:
        assert prompts(c, x) == ["first prompt for X"] and prompts(c, y) == []
    page.go_forward()  # back in X: the prompt is back in its box
    expect(page.locator("#chat-title")).to_have_text("chat X")
    expect(page.get_by_label("Prompt")).to_have_value("second prompt for X")

    page.get_by_label("Prompt").press("Enter")  # waits again; the user goes to New chat
    page.get_by_role("button", name="New chat").click()
    expect(page.locator("#new-view")).to_be_visible()
    expect(page.locator("#alert")).to_contain_text("“chat X” was not sent")
    with server.client() as c:
        assert prompts(c, x) == ["first prompt for X"] and prompts(c, y) == []
    assert page.errors == []  # type: ignore[attr-defined]
    cancel_all(server, x)


def test_allow_tools_runs_again_in_its_own_chat_when_the_page_left_it(
    make_server: Any, browser: Any
) -> None:
    """The offer sets the options, then sends the prompt again: to the open chat, which was
    another one if the page went there meanwhile."""
    server = make_server()
    with server.client() as c:
        x, y = titled(c, "chat X"), titled(c, "chat Y")
    page = open_ui(browser, server)
    open_chat(page, server, x["id"])
    send(page, "run `echo allowed`")
    offer = page.get_by_role("button", name="Allow tools for this chat and run again")
    held: list[Any] = []  # the PATCH of X's options, answered once the page is on Y
    page.route(f"**/api/chats/{x['id']}", lambda r: held.append(r) if r.request.method == "PATCH"
               else r.continue_())
    offer.click()
    open_chat(page, server, y["id"])
    expect(page.locator("#chat-title")).to_have_text("chat Y")
    assert len(held) == 1
    with page.expect_request(lambda r: r.method == "POST" and r.url.endswith("/runs")) as sent:
        held[0].continue_()
    assert f"/api/chats/{x['id']}/runs" in sent.value.url
    response = sent.value.response()
    assert response is not None and response.ok, response
    with server.client() as c:
        assert prompts(c, y) == []
        assert c.get(f"/api/chats/{x['id']}").json()["options"]["force"] is True
    assert page.errors == []  # type: ignore[attr-defined]
    cancel_all(server, x)
