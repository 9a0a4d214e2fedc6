"""The page at 320 CSS px wide and 400% zoom (WCAG 1.4.10, Reflow): the conversation can be
read and a waiting card answered (review of 2026-11-25: at 320×256 the conversation was 19 px
tall, all padding; on a 320×568 phone an 80-character first prompt made an 8-line title and
left the conversation 29 px, the card's Allow and Reject out of view). Heights are measured
as a person sees them: the boxes the browser laid out, after scrolling as a person would."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect
from server_helpers import Server
from test_acp_steering import send
from test_ui import open_chat, open_ui

# A 1280×1024 window at 400% zoom is 320×256 CSS px.
ZOOM_400 = {"width": 320, "height": 256}
PHONE = {"width": 320, "height": 568}

BOX = """(id) => { const b = document.getElementById(id).getBoundingClientRect();
  return {top: b.top, bottom: b.bottom, height: b.height}; }"""


def new_chat(server: Server, **options: Any) -> str:
    with server.client() as c:
        chat = c.post("/api/chats", json={"workspace": "project", "options": {"trust": True, **options}})
        return str(chat.json()["id"])


def fully_in_view(page: Page, element_id: str) -> bool:
    return bool(page.evaluate(
        """(id) => { const b = document.getElementById(id).getBoundingClientRect();
          return b.top >= -0.5 && b.bottom <= innerHeight + 0.5
            && b.left >= -0.5 && b.right <= innerWidth + 0.5; }""",
        element_id))


def test_at_400_percent_zoom_the_conversation_is_nearly_a_screen_tall(
    make_server: Any, browser: Any, shot: Any
) -> None:
    server = make_server()
    page = open_ui(browser, server)
    page.set_viewport_size(ZOOM_400)
    open_chat(page, server, new_chat(server))
    send(page, "read notes.txt and explain it")
    expect(page.locator("#result-bar")).to_contain_text("Done")

    # scrolled to, the conversation shows most of the screen, and all of its own box
    page.locator("#timeline").scroll_into_view_if_needed()
    timeline = page.evaluate(BOX, "timeline")
    assert timeline["height"] >= 0.6 * ZOOM_400["height"], timeline
    assert fully_in_view(page, "timeline"), timeline
    shot(page, "timeline")
    # it still scrolls on its own: the answer at its end is what shows
    expect(page.locator(".msg.assistant").last).to_be_in_viewport()
    # the header above it and the prompt box below it are reached by scrolling the page
    for element_id in ("chat-title", "prompt", "send-button"):
        page.locator(f"#{element_id}").scroll_into_view_if_needed()
        assert fully_in_view(page, element_id), element_id
    # reflow: nothing needs scrolling sideways
    assert page.evaluate("document.scrollingElement.scrollWidth") <= ZOOM_400["width"]
    page.get_by_label("Prompt").fill("typed at 400%")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".msg.user").last).to_contain_text("typed at 400%")
    assert page.errors == []  # type: ignore[attr-defined]


def test_on_a_phone_a_long_title_takes_two_lines_and_the_card_stays_in_view(
    make_server: Any, browser: Any, shot: Any
) -> None:
    server = make_server()
    page = open_ui(browser, server)
    page.set_viewport_size(PHONE)
    open_chat(page, server, new_chat(server, transport="acp"))
    prompt = "Please run `npm test` in the web package and tell me which of the flaky scroll tests fail"
    send(page, prompt)
    title = page.locator("#chat-title")
    expect(title).to_contain_text("Please run `npm test`")
    card = page.locator(".card.request-permission").first
    allow = card.get_by_role("button", name="Allow once")
    expect(allow).to_be_visible()

    # the title shows two lines at most; its whole text is what a screen reader reads and
    # what its tooltip shows
    lines = page.evaluate("""() => { const t = document.getElementById('chat-title');
      return t.getBoundingClientRect().height / parseFloat(getComputedStyle(t).lineHeight); }""")
    assert lines <= 2.05, lines
    full = title.text_content() or ""
    assert len(full) >= 80
    expect(title).to_have_attribute("title", full)
    # the conversation has room, and the waiting card's buttons are in its visible part
    timeline = page.evaluate(BOX, "timeline")
    assert timeline["height"] >= 200, timeline
    for name in ("Allow once", "Reject"):
        b = card.get_by_role("button", name=name).bounding_box()
        assert b is not None
        assert timeline["top"] <= b["y"] and b["y"] + b["height"] <= timeline["bottom"], (name, b, timeline)
    assert fully_in_view(page, "prompt")
    shot(page, "card")
    allow.click()
    expect(card).to_have_attribute("data-decision", "allow-once")
    assert page.errors == []  # type: ignore[attr-defined]
