"""A prompt sent while the one before it is still being sent (its POST not answered yet), and
what that answer clears. The page ignored such a prompt without a word, and the answer cleared
whatever alert was shown meanwhile; under load the run's Stop button shows before that answer,
so a prompt typed during a run could fall in that gap.

The answer is held by the page itself, not by Playwright (a ``page.route`` handler that holds
an answer blocks the sync API's dispatch): an init script wraps ``window.fetch`` so the
prompt's POST, answered by the server (the run started), reaches the page only once the test
calls ``release``. ``asked`` counts the prompts the page has sent; ``answers_read`` says
how many such answers the page has read: the page's
own handling of an answer runs in the same turn of its event loop, so once the test sees the
count go up, that handling is over."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect
from server_helpers import new_chat, wait_run
from test_tabs import paused
from test_ui import goes_live, open_chat, open_ui, send

HELD_RUN = {"CURSOR_AGENT_SIM_FAULT": "silence"}
"""The agent: ``system/init``, then nothing until stopped (a run that stays running)."""

HOLD_PROMPT_ANSWERS = r"""
(() => {
  const realFetch = window.fetch.bind(window);
  let release;
  const gate = new Promise((resolve) => { release = resolve; });
  window.__promptAnswers = { asked: 0, held: 0, read: 0, release: () => release() };
  window.fetch = async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input), location.href);
    const prompt = (init?.method || "GET") === "POST" && /^\/api\/chats\/[^/]+\/runs$/.test(url.pathname);
    if (prompt) window.__promptAnswers.asked += 1;
    const response = await realFetch(input, init);
    if (!prompt) return response;
    window.__promptAnswers.held += 1;
    await gate;
    const json = response.json.bind(response);
    response.json = async () => {
      const data = await json();
      window.__promptAnswers.read += 1;
      return data;
    };
    return response;
  };
})();
"""


def held_page(browser: Any, server: Any, chat_id: str) -> Page:
    """The chat open in a page whose prompt answers wait for ``release``."""
    browser.add_init_script(HOLD_PROMPT_ANSWERS)
    page = open_ui(browser, server)
    open_chat(page, server, chat_id)
    return page


def wait_held(page: Page, count: int) -> None:
    """Until the server has answered ``count`` prompts (their runs started), held from the page."""
    page.wait_for_function(f"() => window.__promptAnswers.held >= {count}")


def release(page: Page) -> None:
    page.evaluate("() => window.__promptAnswers.release()")


def wait_read(page: Page, count: int) -> None:
    """Until the page has read ``count`` prompt answers, and done what it does with them."""
    page.wait_for_function(f"() => window.__promptAnswers.read >= {count}")


def prompts(c: Any, chat_id: str) -> list[str]:
    return [r["prompt"] for r in c.get(f"/api/chats/{chat_id}/runs").json()["runs"]]


def refuse_prompts(page: Page, chat_id: str) -> None:
    """The chat's prompts answered 503 "the database is locked" (its other requests go)."""
    page.route(f"**/api/chats/{chat_id}/runs", lambda route: route.fulfill(
        status=503, json={"detail": "the database is locked"})
        if route.request.method == "POST" else route.continue_())


def go(page: Page, chat_id: str | None) -> None:
    """The page to that chat (``None``: the welcome view), as a link or Back takes it."""
    target = f"#/chat/{chat_id}" if chat_id else "#/"
    page.evaluate(f"() => {{ location.hash = '{target}'; }}")


def paused_page(browser: Any, server: Any) -> tuple[Page, list[str]]:
    """A page whose clock stands still (:func:`test_tabs.paused`), and its script errors."""
    page = paused(browser, server)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    return page, errors


def test_a_prompt_sent_while_the_one_before_is_being_sent_goes_once_that_is_answered(
    make_server: Any, browser: Any
) -> None:
    server = make_server()
    with server.client() as c:
        chat = new_chat(c)
        page = held_page(browser, server, chat["id"])
        send(page, "read notes.txt")
        wait_held(page, 1)
        first = c.get(f"/api/chats/{chat['id']}/runs").json()["runs"][0]
        assert wait_run(c, first["id"])["status"] == "succeeded"
        expect(page.locator("#result-bar")).to_contain_text("Done")  # the page saw it end
        expect(page.locator("#stop-button")).to_be_hidden()
        send(page, "list the files")  # its answer not in yet: was ignored without a word
        expect(page.get_by_label("Prompt")).to_have_value("list the files")  # it waits in the box
        page.get_by_label("Prompt").press("Enter")  # again: still the one prompt
        assert prompts(c, chat["id"]) == ["read notes.txt"]
        release(page)
        expect(page.locator(".msg.user")).to_have_count(2)
        expect(page.get_by_label("Prompt")).to_have_value("")
        expect(page.locator("#alert")).to_be_hidden()
        assert prompts(c, chat["id"]) == ["read notes.txt", "list the files"]
        second = c.get(f"/api/chats/{chat['id']}/runs").json()["runs"][1]
        assert wait_run(c, second["id"])["status"] == "succeeded"
        assert page.errors == []  # type: ignore[attr-defined]


def test_a_prompt_sent_while_the_one_before_is_being_sent_is_dropped_by_stop_and_says_so(
    make_server: Any, browser: Any
) -> None:
    # the CI failure, on demand: the run's Stop button shows before the first prompt's answer
    server = make_server(sim_env=HELD_RUN)
    with server.client() as c:
        chat = new_chat(c)
        page = held_page(browser, server, chat["id"])
        send(page, "list the files")
        wait_held(page, 1)
        expect(page.get_by_role("button", name="Stop")).to_be_visible()
        send(page, "and then this")  # typed while the agent works, the first not answered yet
        page.get_by_label("Prompt").press("Escape")
        expect(page.locator(".notice.cancelled")).to_be_visible()
        release(page)
        expect(page.locator("#alert")).to_contain_text("not sent, because you stopped the run")
        expect(page.get_by_label("Prompt")).to_have_value("and then this")  # nothing lost
        assert [r["status"] for r in c.get(f"/api/chats/{chat['id']}/runs").json()["runs"]] == [
            "cancelled"]
        expect(page.locator(".msg.user")).to_have_count(1)
        assert page.errors == []  # type: ignore[attr-defined]


def test_a_prompts_answer_clears_no_alert_shown_after_it_was_sent(
    make_server: Any, browser: Any
) -> None:
    server = make_server(sim_env=HELD_RUN)
    with server.client() as c:
        chat = new_chat(c)
        page = held_page(browser, server, chat["id"])
        send(page, "list the files")
        wait_held(page, 1)
        stop = page.get_by_role("button", name="Stop")
        expect(stop).to_be_visible()
        # Stop's request fails (the network drops it): the page says so, while the prompt's
        # answer is still on its way
        page.route("**/api/runs/*/cancel", lambda route: route.abort())
        stop.click()
        alert = page.locator("#alert")
        expect(alert).to_contain_text("Could not stop the run")
        release(page)
        wait_read(page, 1)  # (the page has done what it does with the answer)
        assert alert.is_visible(), "the prompt's answer cleared the alert shown after it was sent"
        assert "Could not stop the run" in (alert.text_content() or "")
        run = c.get(f"/api/chats/{chat['id']}/runs").json()["runs"][0]
        assert c.post(f"/api/runs/{run['id']}/cancel").status_code == 200
        assert wait_run(c, run["id"])["status"] == "cancelled"
        assert page.errors == []  # type: ignore[attr-defined]


def test_a_prompt_sent_while_the_one_before_is_being_sent_is_not_sent_if_that_one_was_not(
    make_server: Any, browser: Any
) -> None:
    # sent after a prompt the server refused, it would run without the prompt it followed
    server = make_server()
    with server.client() as c:
        chat = new_chat(c)
        page = held_page(browser, server, chat["id"])
        refuse_prompts(page, chat["id"])
        send(page, "read notes.txt")
        wait_held(page, 1)
        send(page, "list the files")
        release(page)
        alert = page.locator("#alert")
        expect(alert).to_contain_text("The prompt was not sent: the database is locked")
        expect(alert).to_contain_text("The prompt you sent after it was not sent either: both "
                                      "are in the box")
        # nothing lost: the first back in the box, before the one that waited there
        expect(page.get_by_label("Prompt")).to_have_value("read notes.txt\n\nlist the files")
        assert prompts(c, chat["id"]) == []
        expect(page.locator(".msg.user")).to_have_count(0)
        assert page.errors == []  # type: ignore[attr-defined]


def test_enter_pressed_again_on_a_prompt_waiting_for_a_run_sends_it_once(
    make_server: Any, browser: Any
) -> None:
    server = make_server(sim_env=HELD_RUN)
    with server.client() as c:
        chat = new_chat(c)
        browser.add_init_script(HOLD_PROMPT_ANSWERS)
        page, errors = paused_page(browser, server)
        open_chat(page, server, chat["id"])
        send(page, "list the files")
        wait_held(page, 1)
        release(page)
        wait_read(page, 1)
        expect(page.locator("#stop-button")).to_be_visible()
        send(page, "and then this")  # waits for the run (the page's clock stands still)
        page.get_by_label("Prompt").press("Enter")
        run = c.get(f"/api/chats/{chat['id']}/runs").json()["runs"][0]
        assert c.post(f"/api/runs/{run['id']}/cancel").status_code == 200
        expect(page.locator("#stop-button")).to_be_hidden()
        page.clock.run_for(100)  # the wait looks again (every 50 ms): the run is over
        expect(page.locator(".msg.user")).to_have_count(2)
        assert prompts(c, chat["id"]) == ["list the files", "and then this"]
        expect(page.get_by_label("Prompt")).to_have_value("")
        second = c.get(f"/api/chats/{chat['id']}/runs").json()["runs"][1]
        expect(page.locator("#stop-button")).to_be_visible()  # (the page follows the second run)
        assert c.post(f"/api/runs/{second['id']}/cancel").status_code == 200
        expect(page.locator("#stop-button")).to_be_hidden()
        page.clock.run_for(200)  # a second copy, had it waited behind the second run, goes now
        # (it would have asked within that run of the clock: its steps are timers and promises)
        assert page.evaluate("() => window.__promptAnswers.asked") == 2
        assert prompts(c, chat["id"]) == ["list the files", "and then this"]
        assert errors == []


def test_a_prompt_in_another_chat_does_not_depend_on_the_one_on_its_way(
    make_server: Any, browser: Any
) -> None:
    # chat X's prompt waits for X's run; the page goes to chat Y, whose prompt waits its turn:
    # X's prompt is kept for X (the page left it), and Y's goes all the same
    server = make_server(sim_env=HELD_RUN)
    with server.client() as c:
        x, y = new_chat(c), new_chat(c)
        held = c.post(f"/api/chats/{x['id']}/runs", json={"prompt": "hello X"}).json()
        page, errors = paused_page(browser, server)
        open_chat(page, server, x["id"])
        expect(page.locator("#stop-button")).to_be_visible()
        send(page, "more for X")  # waits for X's run (the page's clock stands still)
        goes_live(page, lambda: go(page, y["id"]))  # (not X's "Live")
        send(page, "hello Y")  # waits for X's prompt to be done
        page.clock.run_for(100)  # X's prompt looks again: its chat was left
        expect(page.locator(".msg.user")).to_have_count(1)
        assert prompts(c, y["id"]) == ["hello Y"]
        assert prompts(c, x["id"]) == ["hello X"]
        expect(page.locator("#alert")).not_to_contain_text("not sent either")
        expect(page.get_by_label("Prompt")).to_have_value("")
        assert c.post(f"/api/runs/{held['id']}/cancel").status_code == 200
        for run in c.get(f"/api/chats/{y['id']}/runs").json()["runs"]:
            c.post(f"/api/runs/{run['id']}/cancel")
        assert errors == []


def test_a_prompt_that_goes_in_one_chat_keeps_the_alert_about_another(
    make_server: Any, browser: Any
) -> None:
    # "your prompt for X was not sent" was cleared by the next prompt to go, in chat Y: the
    # person lost the only word about it. It stays until X opens (the prompt back in its box).
    server = make_server(sim_env=HELD_RUN)
    with server.client() as c:
        x = new_chat(c)
        y = new_chat(c)
        held = c.post(f"/api/chats/{x['id']}/runs", json={"prompt": "hello X"}).json()
        browser.add_init_script(HOLD_PROMPT_ANSWERS)
        page, errors = paused_page(browser, server)
        open_chat(page, server, x["id"])
        release(page)  # (answers go at once: their count says when the page has read them)
        expect(page.locator("#stop-button")).to_be_visible()
        send(page, "more for X")  # waits for X's run (the page's clock stands still)
        goes_live(page, lambda: go(page, y["id"]))  # (not X's "Live")
        page.clock.run_for(100)  # X's prompt looks again: its chat was left
        alert = page.locator("#alert")
        expect(alert).to_contain_text("Your prompt for “hello X” was not sent")
        send(page, "hello Y")
        wait_read(page, 1)  # Y's prompt went, and the page has done what it does with that
        assert prompts(c, y["id"]) == ["hello Y"]
        expect(alert).to_contain_text("Your prompt for “hello X” was not sent")
        go(page, None)  # elsewhere: still true
        expect(page.locator("#welcome-view")).to_be_visible()
        expect(alert).to_contain_text("Your prompt for “hello X” was not sent")
        go(page, x["id"])  # X: the prompt is back
        expect(page.get_by_label("Prompt")).to_have_value("more for X")
        expect(alert).to_be_hidden()
        assert c.post(f"/api/runs/{held['id']}/cancel").status_code == 200
        for run in c.get(f"/api/chats/{y['id']}/runs").json()["runs"]:
            c.post(f"/api/runs/{run['id']}/cancel")
        assert errors == []


def test_a_prompt_that_fails_while_the_box_holds_other_text_goes_back_before_it(
    make_server: Any, browser: Any
) -> None:
    # its text was put back only into an empty box: typed after it, anything lost it for good
    server = make_server()
    with server.client() as c:
        chat = new_chat(c)
        page = held_page(browser, server, chat["id"])
        refuse_prompts(page, chat["id"])
        send(page, "read notes.txt")
        wait_held(page, 1)
        box = page.get_by_label("Prompt")
        expect(box).to_have_value("")
        box.fill("and a thought typed meanwhile")  # not sent
        release(page)
        alert = page.locator("#alert")
        expect(alert).to_contain_text("The prompt was not sent: the database is locked")
        expect(alert).to_contain_text("it is back in the box, before what you typed after it")
        expect(box).to_have_value("read notes.txt\n\nand a thought typed meanwhile")
        assert prompts(c, chat["id"]) == []
        assert page.errors == []  # type: ignore[attr-defined]


def test_two_prompts_waiting_in_a_chat_the_page_leaves_are_both_kept_for_it(
    make_server: Any, browser: Any
) -> None:
    # X's first prompt waits for X's run, its second for the first; the page goes to chat Y:
    # the second was left in Y's box with "press Enter to send it", which sent it to Y, and
    # only the first came back in X's box
    server = make_server(sim_env=HELD_RUN)
    with server.client() as c:
        x, y = new_chat(c), new_chat(c)
        held = c.post(f"/api/chats/{x['id']}/runs", json={"prompt": "hello X"}).json()
        page, errors = paused_page(browser, server)
        open_chat(page, server, x["id"])
        expect(page.locator("#stop-button")).to_be_visible()
        send(page, "P1 for X")  # waits for X's run (the page's clock stands still)
        send(page, "P2 for X")  # waits for P1
        goes_live(page, lambda: go(page, y["id"]))  # (not X's "Live")
        page.clock.run_for(100)  # P1 looks again: its chat was left
        alert = page.locator("#alert")
        expect(alert).to_contain_text("Your prompt for “hello X” was not sent: you left that chat")
        expect(alert).to_contain_text("The prompt you sent after it was not sent either: it is "
                                      "kept for that chat too, after it.")
        expect(alert).not_to_contain_text("press Enter")
        box = page.get_by_label("Prompt")
        expect(box).to_have_value("")  # nothing of X's in Y's box
        go(page, x["id"])
        expect(box).to_have_value("P1 for X\n\nP2 for X")
        assert prompts(c, y["id"]) == []
        assert prompts(c, x["id"]) == ["hello X"]
        assert c.post(f"/api/runs/{held['id']}/cancel").status_code == 200
        assert errors == []


def test_a_prompt_that_fails_after_the_page_left_its_chat_goes_back_to_that_chat(
    make_server: Any, browser: Any
) -> None:
    # not into the box of the chat open when its answer comes: into its own, as that opens
    server = make_server()
    with server.client() as c:
        x, y = new_chat(c), new_chat(c)
        page = held_page(browser, server, x["id"])
        refuse_prompts(page, x["id"])
        send(page, "read notes.txt")
        wait_held(page, 1)
        goes_live(page, lambda: go(page, y["id"]))  # (not X's "Live")
        release(page)
        alert = page.locator("#alert")
        expect(alert).to_contain_text("The prompt was not sent: the database is locked")
        expect(alert).to_contain_text("it is back in the prompt box of")
        box = page.get_by_label("Prompt")
        expect(box).to_have_value("")  # not in Y's box
        go(page, x["id"])
        expect(box).to_have_value("read notes.txt")
        assert prompts(c, x["id"]) == [] and prompts(c, y["id"]) == []
        assert page.errors == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("second", ["list the files", "read notes.txt"])
def test_a_prompt_kept_after_one_that_failed_keeps_its_reason_and_each_copy(
    make_server: Any, browser: Any, second: str
) -> None:
    # the first fails (503) as the page goes to chat Y, the second waiting behind it: the alert
    # said "you left that chat while its run was going" (no run; the server's reason gone), and
    # the same text sent twice was kept once under "one after the other"
    server = make_server()
    with server.client() as c:
        x, y = new_chat(c), new_chat(c)
        page = held_page(browser, server, x["id"])
        refuse_prompts(page, x["id"])
        send(page, "read notes.txt")
        wait_held(page, 1)
        send(page, second)  # waits for the first
        goes_live(page, lambda: go(page, y["id"]))  # (not X's "Live")
        release(page)
        alert = page.locator("#alert")
        expect(alert).to_contain_text("The prompt was not sent: the database is locked")
        expect(alert).to_contain_text("it is kept for that chat too, after it")
        expect(alert).not_to_contain_text("while its run was going")
        box = page.get_by_label("Prompt")
        expect(box).to_have_value("")
        go(page, x["id"])
        expect(box).to_have_value(f"read notes.txt\n\n{second}")
        assert prompts(c, x["id"]) == [] and prompts(c, y["id"]) == []
        assert page.errors == []  # type: ignore[attr-defined]
