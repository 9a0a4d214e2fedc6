"""The top bar and a chat's header keep their places at every width (audit 5, F7): Sign out at
the top right in one row (at 900–960 px it wrapped to a second line at the left, the bar
46 -> 84 px), and a chat's Options beside its Delete at the right (it floated between a short
title and Delete: space-between on three children)."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect
from test_ui import open_chat, open_ui

PLACES = """() => {
  const box = (s) => document.querySelector(s).getBoundingClientRect();
  const bar = box('.topbar'), out = box('#sign-out-button'), brand = box('.brand');
  const options = box('#options-button'), del = box('#delete-chat-button'), title = box('#chat-title');
  return { barRight: bar.right, outRight: out.right, outMiddle: (out.top + out.bottom) / 2,
           brandMiddle: (brand.top + brand.bottom) / 2, gap: del.left - options.right,
           optionsTop: options.top, delTop: del.top, titleRight: title.right, optionsLeft: options.left,
           scrollWidth: document.documentElement.scrollWidth, width: window.innerWidth };
}"""


@pytest.mark.parametrize("width", [1100, 960, 900, 375, 320])
def test_sign_out_stays_top_right_and_options_beside_delete(
    make_server: Any, browser: Any, width: int
) -> None:
    server = make_server()  # --simulate: the top bar has its badge
    with server.client() as c:
        r = c.post("/api/chats", json={"workspace": "project", "title": "short", "options": {"trust": True}})
        assert r.status_code == 201, r.text
        chat = r.json()
    page = open_ui(browser, server)
    page.set_viewport_size({"width": width, "height": 700})
    open_chat(page, server, chat["id"])
    expect(page.locator("#sim-badge")).to_be_visible()
    at = page.evaluate(PLACES)
    assert abs(at["outMiddle"] - at["brandMiddle"]) < 4, at  # one row: Sign out beside the brand
    assert at["barRight"] - at["outRight"] < 24, at  # at the right
    assert at["scrollWidth"] <= at["width"], at  # nothing sideways
    assert 0 <= at["gap"] < 16 and at["optionsTop"] == at["delTop"], at  # Options beside Delete
    assert page.errors == []  # type: ignore[attr-defined]
