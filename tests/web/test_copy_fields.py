"""A tool card's copy buttons copy their own field. A card is updated in place (morph): a
button kept from the last drawing, now beside another field (the card has other fields), kept
what it was made for: "Copy stderr" said "Copied the stdout."."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect
from test_ui import open_ui

COPY_AFTER_REDRAW = """async ([first, second, name]) => {
  const { createCard, drawCard } = await import('/js/cards.js');
  const card = createCard();
  document.getElementById('main').append(card);
  drawCard(card, first);
  drawCard(card, second);
  const button = card.querySelector(`button[aria-label="Copy ${name}"]`);
  await navigator.clipboard.writeText('');
  button.click();
  while (button.textContent !== 'Copied') await new Promise((resolve) => setTimeout(resolve, 10));
  const copied = await navigator.clipboard.readText();
  card.remove();
  return { copied, said: document.getElementById('announce').textContent };
}"""

SHELL = {"kind": "shell", "command": "make", "status": "succeeded", "exit_code": 0,
         "stdout": "out\n"}


def copy_after_redraw(page: Any, first: dict[str, Any], second: dict[str, Any],
                      name: str) -> dict[str, str]:
    result: dict[str, str] = page.evaluate(COPY_AFTER_REDRAW, [first, second, name])
    return result


def test_a_copy_button_copies_its_own_field_after_the_card_changed_its_fields(
    make_server: Any, browser: Any
) -> None:
    server = make_server()
    browser.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    page = open_ui(browser, server)
    expect(page.locator("#welcome-view")).to_be_visible()
    # stdout, then (the same call drawn again) no stdout but a stderr: the button of the first
    # block is now stderr's
    failed = {**SHELL, "status": "failed", "exit_code": 2, "stdout": "", "stderr": "err\n"}
    assert copy_after_redraw(page, SHELL, failed, "stderr") == {
        "copied": "err\n", "said": "Copied the stderr."}
    assert page.errors == []  # type: ignore[attr-defined]
