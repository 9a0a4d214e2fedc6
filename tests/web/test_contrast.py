"""Button text is readable in both colour schemes (WCAG 1.4.3, 4.5:1): the contrast is computed
from the colours the browser applied, not from the CSS text. Review of 2026-11-25: in the dark
scheme Stop and Reject were white on #ff8a80, 2.28:1."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect
from test_acp_steering import send
from test_reflow import new_chat
from test_ui import open_chat, open_ui

# Each visible, enabled button: its text colour against the first opaque background behind it.
CONTRASTS = """() => {
  const rgb = (s) => (s.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => [r, g, b]
    .map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
    .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
  const backdrop = (el) => { for (let e = el; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor); if (c.length === 3 || c[3] === 1) return c; }
    return [255, 255, 255]; };
  const shown = [...document.querySelectorAll('button')].filter((b) => b.checkVisibility() && !b.disabled);
  return shown.map((b) => {
    const fg = lum(rgb(getComputedStyle(b).color)); const bg = lum(backdrop(b));
    return [b.textContent.trim(), (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05)]; });
}"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_stop_reject_and_every_other_button_have_readable_text(
    make_server: Any, browser: Any, scheme: str, shot: Any
) -> None:
    server = make_server()
    page = open_ui(browser, server)
    page.emulate_media(color_scheme=scheme)
    open_chat(page, server, new_chat(server, transport="acp"))
    send(page, "run `echo contrast`")
    card = page.locator(".card.request-permission").first
    expect(card.get_by_role("button", name="Reject")).to_be_visible()
    expect(page.locator("#stop-button")).to_be_visible()
    shot(page, scheme)
    contrasts = dict(page.evaluate(CONTRASTS))
    assert {"Stop", "Reject", "Allow once", "Send"} <= contrasts.keys(), contrasts
    low = {name: round(ratio, 2) for name, ratio in contrasts.items() if ratio < 4.5}
    assert not low, f"{scheme}: {low}"
    card.get_by_role("button", name="Reject").click()
    expect(card).to_have_attribute("data-decision", "reject")
