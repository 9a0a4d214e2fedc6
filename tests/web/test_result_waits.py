"""The tests' ``shows_result`` returns once the run it started has ended on the page, not on
the result of the run before, which the result bar still holds.

A wait for "Done" after a second prompt ended at once on the first run's "Done": the bar keeps
its text (hidden once the new run is queued), and the page hears of the new run over its
WebSocket, after the prompt went. test_rough_edges' scroll test then sent its third prompt
while the second ran (the server refuses it: 409), and other tests read a page that had not
shown their run yet. Here each WebSocket message reaches the page 300 ms late, as on a loaded
machine."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect
from server_helpers import new_chat
from test_ui import open_chat, open_ui, send, send_after_done, shows_result

LATE_RECORDS = r"""
(() => {
  const Real = window.WebSocket;
  window.WebSocket = class extends Real {
    set onmessage(fn) { super.onmessage = fn ? (ev) => setTimeout(() => fn.call(this, ev), 300) : fn; }
    get onmessage() { return super.onmessage; }
  };
})();
"""
"""Each message of the page's WebSocket handled 300 ms late (in order)."""


def test_shows_result_waits_for_the_run_it_started_not_the_one_before(
    make_server: Any, browser: Any
) -> None:
    server = make_server()
    with server.client() as c:
        chat = new_chat(c)
    browser.add_init_script(LATE_RECORDS)
    page = open_ui(browser, server)
    open_chat(page, server, chat["id"])
    shows_result(page, lambda: send(page, "read notes.txt"))
    assert page.locator(".msg.user").count() == 1
    shows_result(page, lambda: send_after_done(page, "list the files"))
    assert page.locator(".msg.user").count() == 2  # read at once: no wait
    assert page.locator(".card.tool-ls").count() == 1
    assert page.locator("#stop-button").is_hidden()
    expect(page.locator("#result-bar .result-status")).to_have_count(1)


def test_shows_result_waits_for_the_label_it_names(make_server: Any, browser: Any) -> None:
    server = make_server(sim_env={"CURSOR_AGENT_SIM_FAULT": "silence"})
    with server.client() as c:
        chat = new_chat(c)
    browser.add_init_script(LATE_RECORDS)
    page = open_ui(browser, server)
    open_chat(page, server, chat["id"])
    send(page, "list the files")
    stop = page.get_by_role("button", name="Stop")
    expect(stop).to_be_visible()
    shows_result(page, stop.click, "Stopped")
    assert page.locator(".notice.cancelled").count() == 1
