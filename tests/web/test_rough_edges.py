"""The web UI as a person uses it (issue 12, point 9; issue 11, point 7's bidi bullet), each
in Debian's Chromium against a real server with the simulator: only the chat pane scrolls, the
header and the list keep in step, paths are workspace-relative, line counts are right, a prompt
typed during a run is not sent after Stop, a bad token link says why, nothing of the app shows
while signed out, long prompts fold, a chat's options can be changed (and a rejected command
offers to allow tools), copy buttons, and bidi controls shown as visible markers.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
from playwright.sync_api import Page, expect
from server_helpers import new_chat, wait_run
from test_ui import SLOW, open_chat, open_ui, send, send_after_done, shows_result

from cursor_agent_api.sim import wire

RLO = "\u202e"


def test_only_the_chat_pane_scrolls_never_the_page(make_server: Any, browser: Any, shot: Any) -> None:
    server = make_server()
    with server.client() as c:
        chat = new_chat(c, force=True)
    page = open_ui(browser, server)
    open_chat(page, server, chat["id"])
    for prompt in ("list the files and read notes.txt, grep TODO and glob *.txt",
                   "read evil.html", "run `seq 1 40`"):
        shows_result(page, lambda p=prompt: send_after_done(page, p))  # (not the run before's Done)
    timeline = page.locator("#timeline")
    assert page.evaluate("timeline.scrollHeight > timeline.clientHeight")  # a long chat
    size = page.evaluate("[document.scrollingElement.scrollHeight, innerHeight]")
    assert size[0] <= size[1], f"the page is {size[0]} px tall in a {size[1]} px window"
    timeline.hover()
    for _ in range(5):
        page.mouse.wheel(0, 2000)  # at the bottom of the chat: keep scrolling down
    expect(page.locator("#prompt")).to_be_in_viewport()
    assert page.evaluate("scrollY") == 0
    assert page.evaluate("document.querySelector('.topbar').getBoundingClientRect().top") == 0
    expect(page.locator("#sidebar")).to_be_in_viewport()
    shot(page, "bottom")
    # Scrolling up moves the chat, not the page.
    page.mouse.wheel(0, -600)
    # (a function, not an expression: Playwright polls an expression with the page's eval,
    # which the page's Content-Security-Policy refuses whenever the first check is false)
    page.wait_for_function("() => timeline.scrollTop + timeline.clientHeight < timeline.scrollHeight - 100")
    assert page.evaluate("scrollY") == 0
    page.set_viewport_size({"width": 375, "height": 740})
    size = page.evaluate("[document.scrollingElement.scrollHeight, innerHeight]")
    assert size[0] <= size[1], f"at phone width the page is {size[0]} px tall in {size[1]} px"


def test_header_and_list_follow_the_rename_and_the_end_of_runs(
    make_server: Any, browser: Any
) -> None:
    server = make_server()
    page = open_ui(browser, server)
    page.get_by_role("button", name="New chat").click()
    page.get_by_label("Folder inside it (optional)").fill("project")
    page.get_by_role("button", name="Create chat").click()
    expect(page.locator("#chat-title")).to_have_text("New chat in project")
    expect(page.locator(".chat-item-title")).to_have_text("New chat in project")
    send(page, "read notes.txt")
    # The server names the chat after its first prompt: the header and the list both say so.
    expect(page.locator("#chat-title")).to_have_text("read notes.txt")
    expect(page.locator(".chat-item-title")).to_have_text("read notes.txt")
    expect(page).to_have_title(re.compile("read notes.txt"))
    expect(page.locator(".chat-item .pill")).to_have_text("succeeded")


def test_the_list_shows_the_end_of_a_run_that_is_no_longer_open(
    make_server: Any, browser: Any
) -> None:
    # The agent says nothing until it is stopped: the run ends when the test ends it (once the
    # page has left the chat), not after a paced agent's last event.
    server = make_server(sim_env={"CURSOR_AGENT_SIM_FAULT": "silence"})
    with server.client() as c:
        chat = new_chat(c)
        page = browser.new_page()
        # The page's clock stands still unless the test moves it: no refresh happens by chance.
        page.clock.install()
        page.goto(f"{server.url}/?token={server.token}#/chat/{chat['id']}")
        expect(page.locator("#conn")).to_have_text("Live")
        page.clock.pause_at(page.evaluate("Date.now()") + 1000)
        # (the list fetched as the prompt went: its refresh timer is set once it has come back,
        # so the clock below is moved after that, not before)
        with page.expect_response(lambda r: r.url.endswith("/api/health")):
            send(page, "list the files and read notes.txt")
        expect(page.locator(".chat-item .pill")).to_have_text("running")
        page.evaluate("location.hash = '#/'")  # leave the chat while it runs
        expect(page.locator("#welcome-view")).to_be_visible()
        run = c.get(f"/api/chats/{chat['id']}/runs").json()["runs"][-1]
        assert c.post(f"/api/runs/{run['id']}/cancel").status_code == 200
        assert wait_run(c, run["id"])["status"] == "cancelled"
        # Nothing moved yet (a list fetched as the run started may say "queued").
        expect(page.locator(".chat-item .pill")).to_have_text(re.compile("^(queued|running)$"))
        # A list with an active chat is refreshed every few seconds (not every 10 s).
        page.clock.run_for(3000)
        expect(page.locator(".chat-item .pill")).to_have_text("cancelled")


def test_paths_are_workspace_relative_and_line_counts_right(
    make_server: Any, browser: Any, workspace: Path
) -> None:
    server = make_server()
    with server.client() as c:
        chat = new_chat(c, force=True)
    page = open_ui(browser, server)
    open_chat(page, server, chat["id"])
    send(page, "read notes.txt")  # "hello\nTODO: write tests\n": two lines
    read = page.locator(".card.tool-read")
    expect(read).to_have_attribute("data-status", "succeeded")
    expect(read.locator(".card-range")).to_have_text("lines 1–2")
    expect(read.locator(".card-output summary")).to_contain_text("content (2 lines)")
    expect(read.locator(".card-summary")).to_have_text("notes.txt")
    send_after_done(page, "run `echo hi`")
    shell = page.locator(".card.tool-shell")
    expect(shell).to_have_attribute("data-status", "succeeded")
    expect(shell.locator(".card-output summary")).to_contain_text("stdout (1 line)")
    send_after_done(page, 'replace "hello" with "bye" in notes.txt')
    edit = page.locator(".card.tool-edit")
    expect(edit).to_have_attribute("data-status", "succeeded")
    expect(edit.locator(".card-summary")).to_have_text("notes.txt")
    files = edit.locator(".diff-file")
    expect(files).to_have_text(["--- a/notes.txt", "+++ b/notes.txt"])
    send_after_done(page, "grep TODO and glob *.txt")
    expect(page.locator(".card.tool-glob li")).to_have_text(["notes.txt"])
    expect(page.locator(".card.tool-grep")).to_contain_text("notes.txt:2: TODO")
    assert not any(str(workspace) in t for t in page.locator("#timeline .card").all_inner_texts())
    # A command is shown as written, even one that starts with a path in the workspace.
    command = f"{workspace / 'project'}/notes.txt"
    send_after_done(page, f"run `{command}`")
    expect(page.locator(".card.tool-shell").last.locator(".card-summary")).to_have_text(command)


def test_a_prompt_typed_during_a_run_is_not_sent_after_stop(
    make_server: Any, browser: Any
) -> None:
    # The agent says nothing until it is stopped: the run is still going when Esc comes.
    server = make_server(sim_env={"CURSOR_AGENT_SIM_FAULT": "silence"})
    with server.client() as c:
        chat = new_chat(c)
        page = open_ui(browser, server)
        open_chat(page, server, chat["id"])
        # The second prompt may come before the first one's request is answered (the run's Stop
        # button can show first): it waits for that answer, then for the run, as any prompt
        # typed during a run (test_prompt_in_flight.py holds that answer to check it so).
        send(page, "list the files and read notes.txt, grep TODO and glob *.txt")
        expect(page.get_by_role("button", name="Stop")).to_be_visible()
        expect(page.get_by_label("Prompt")).to_have_value("")  # the first prompt went
        send(page, "and then this")  # typed while the agent works
        page.get_by_label("Prompt").press("Escape")
        expect(page.locator(".notice.cancelled")).to_be_visible()
        expect(page.locator("#alert")).to_contain_text("not sent")
        expect(page.get_by_label("Prompt")).to_have_value("and then this")  # nothing lost
        runs = c.get(f"/api/chats/{chat['id']}/runs").json()["runs"]
        assert [r["status"] for r in runs] == ["cancelled"]
        expect(page.locator(".msg.user")).to_have_count(1)


def test_a_bad_token_link_says_why_and_nothing_shows_while_signed_out(
    make_server: Any, browser: Any, shot: Any
) -> None:
    server = make_server()
    page = browser.new_page()
    page.goto(f"{server.url}/?token=bad")
    expect(page.locator("#login-view")).to_be_visible()
    expect(page.locator("#alert")).to_contain_text("refused")
    assert "token=" not in page.url  # the bad token left the address bar too
    expect(page.get_by_role("button", name="New chat")).to_be_hidden()
    expect(page.locator("#chat-list")).to_be_hidden()
    shot(page, "bad-token")
    page.get_by_label("Token").fill(server.token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#welcome-view")).to_be_visible()
    expect(page.get_by_role("button", name="New chat")).to_be_visible()
    expect(page.locator("#alert")).to_be_hidden()
    # Plain / without a cookie: the sign-in form, no complaint about a token never given.
    fresh = browser.new_page()
    fresh.context.clear_cookies()
    fresh.goto(server.url + "/")
    expect(fresh.locator("#login-view")).to_be_visible()
    expect(fresh.locator("#alert")).to_be_hidden()
    # A one-time code works once: the second visit of the same link says why it asks again.
    import httpx

    link = httpx.post(f"{server.url}/api/auth/codes",
                      headers={"Authorization": f"token {server.token}"}).json()["url"]
    browser.clear_cookies()
    first = browser.new_page()
    first.goto(link)
    expect(first.locator("#welcome-view")).to_be_visible()
    assert "code=" not in first.url
    browser.clear_cookies()
    again = browser.new_page()
    again.goto(link)
    expect(again.locator("#login-view")).to_be_visible()
    expect(again.locator("#alert")).to_contain_text("already used")
    assert "code=" not in again.url and "signin=" not in again.url
    expect(fresh.locator("#alert")).to_be_hidden()
    expect(fresh.get_by_role("button", name="New chat")).to_be_hidden()


def test_a_long_prompt_is_folded_with_a_way_to_show_it_all(
    make_server: Any, browser: Any, shot: Any
) -> None:
    server = make_server()
    prompt = "".join(f"line {i}: " + "x" * 40 + "\n" for i in range(4000))  # ~200 KB
    with server.client() as c:
        chat = new_chat(c)
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": prompt}).json()
        wait_run(c, run["id"])
    page = open_ui(browser, server)
    open_chat(page, server, chat["id"])
    msg = page.locator(".msg.user")
    expect(msg).to_contain_text("line 0:")
    expect(msg).not_to_contain_text("line 3999:")
    assert msg.bounding_box()["height"] < 400  # type: ignore[index]
    shot(page, "folded")
    more = msg.get_by_role("button", name=re.compile("Show all"))
    expect(more).to_have_attribute("aria-expanded", "false")
    more.focus()
    page.keyboard.press("Enter")
    expect(msg).to_contain_text("line 3999:")
    assert msg.locator(".msg-text").text_content() == prompt
    expect(msg.get_by_role("button", name=re.compile("Show less"))).to_have_attribute(
        "aria-expanded", "true")


def test_options_can_be_changed_and_a_rejected_command_offers_to_allow_tools(
    make_server: Any, browser: Any, shot: Any
) -> None:
    server = make_server()
    with server.client() as c:
        chat = new_chat(c, stream_partial_output=True)
    page = open_ui(browser, server)
    open_chat(page, server, chat["id"])
    send(page, "run `echo allowed`")
    shell = page.locator(".card.tool-shell")
    expect(shell).to_have_attribute("data-status", "rejected")
    offer = page.get_by_role("button", name="Allow tools for this chat and run again")
    expect(offer).to_be_visible()
    shot(page, "rejected-offer")
    offer.click()
    expect(page.locator(".card.tool-shell").last).to_have_attribute("data-status", "succeeded")
    expect(page.locator(".card.tool-shell").last).to_contain_text("allowed")
    expect(page.locator(".msg.user")).to_have_count(2)
    expect(page.locator(".msg.user").last).to_contain_text("run `echo allowed`")
    expect(offer).to_have_count(0)
    expect(page.locator("#chat-meta")).to_contain_text("force")
    with server.client() as c:
        assert c.get(f"/api/chats/{chat['id']}").json()["options"]["force"] is True

    # The options form: turn force and partial output off again.
    page.get_by_role("button", name="Options").click()
    force = page.locator("#chat-options").get_by_label(re.compile("Allow tools"))
    expect(force).to_be_checked()
    force.uncheck()
    page.locator("#chat-options").get_by_label(re.compile("Stream text")).uncheck()
    shot(page, "options")
    page.get_by_role("button", name="Save options").click()
    expect(page.locator("#chat-options")).to_be_hidden()
    expect(page.locator("#chat-meta")).not_to_contain_text("force")
    # Esc closes the form without saving, and the focus goes back to its button.
    options = page.get_by_role("button", name="Options", exact=True)
    options.click()
    expect(page.locator("#chat-options")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#chat-options")).to_be_hidden()
    expect(options).to_be_focused()
    with server.client() as c:
        opts = c.get(f"/api/chats/{chat['id']}").json()["options"]
    assert opts == {"force": False, "stream_partial_output": False, "trust": True,
                    "approve_mcps": False, "transport": "print", "mode": "agent"}


def test_options_cannot_change_during_a_run(make_server: Any, browser: Any) -> None:
    server = make_server(sim_env=SLOW)
    with server.client() as c:
        chat = new_chat(c)
    page = open_ui(browser, server)
    open_chat(page, server, chat["id"])
    send(page, "list the files and read notes.txt, grep TODO and glob *.txt")
    expect(page.get_by_role("button", name="Stop")).to_be_visible()
    expect(page.get_by_role("button", name="Options")).to_be_disabled()


def test_copy_buttons_on_code_commands_and_output_work_by_keyboard(
    make_server: Any, browser: Any
) -> None:
    server = make_server()
    browser.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    with server.client() as c:
        chat = new_chat(c, force=True)
    page = open_ui(browser, server)
    open_chat(page, server, chat["id"])
    send(page, "run `echo hi; echo there`")
    shell = page.locator(".card.tool-shell")
    expect(shell).to_have_attribute("data-status", "succeeded")

    def copy_with_keyboard(button: Any) -> str:
        button.focus()
        page.keyboard.press("Enter")
        expect(button).to_have_text("Copied")
        return str(page.evaluate("navigator.clipboard.readText()"))

    assert copy_with_keyboard(shell.get_by_role("button", name="Copy command")) == (
        "echo hi; echo there")
    assert copy_with_keyboard(shell.get_by_role("button", name="Copy stdout")) == "hi\nthere\n"
    code = page.locator(".msg.assistant pre").last
    expect(code).to_contain_text("hi")
    answer_copy = page.locator(".msg.assistant").last.get_by_role("button", name="Copy code")
    assert copy_with_keyboard(answer_copy) == code.locator("code").text_content()
    # Keyboard only: Tab reaches a copy button, Space presses it.
    page.evaluate("navigator.clipboard.writeText('')")
    shell.get_by_role("button", name="Copy command").focus()
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Tab")
    page.keyboard.press("Space")
    assert page.evaluate("navigator.clipboard.readText()") == "echo hi; echo there"


def _bidi_script(path: Path, ws: str) -> Path:
    sid = "8ef40118-8378-436d-8ba8-2436b19cc877"
    name = f"{ws}/invoice_{RLO}fdp.exe"
    command = f"cat 'report{RLO}txt.sh'"
    shell = wire.shell_args(command, "c-sh", conversation_id=sid, request_id="r",
                            description="Show it", working_directory=ws)
    t, mc = 1789644625717, "m-0-abcd"
    times = {"model_call_id": mc, "started_at_ms": t}
    lines = [
        wire.system_init(sid, ws, "Auto"),
        wire.user(sid, "show me"),
        wire.tool_call_started(sid, "c-rd", "readToolCall", wire.read_args(name), **times,
                               timestamp_ms=t),
        wire.tool_call_completed(sid, "c-rd", "readToolCall", wire.read_success(name, "x\n"),
                                 args=wire.read_args(name), **times, completed_at_ms=t + 1,
                                 timestamp_ms=t + 1),
        wire.tool_call_started(sid, "c-sh", "shellToolCall", shell, **times, timestamp_ms=t + 2),
        wire.tool_call_completed(sid, "c-sh", "shellToolCall",
                                 wire.shell_outcome(command, ws, 0, f"a{RLO}b\n", "", 3),
                                 args=shell, **times, completed_at_ms=t + 3, timestamp_ms=t + 3),
        wire.assistant_final(sid, "Done."),
        wire.result_success(sid, "req", "Done.", 42, wire.usage(10, 5)),
    ]
    with path.open("wb") as f:
        for line in lines:
            f.write(orjson.dumps(line) + b"\n")
    return path


def test_bidi_controls_in_file_names_and_commands_are_shown_not_applied(
    make_server: Any, browser: Any, tmp_path: Path, workspace: Path, shot: Any
) -> None:
    ws = str(workspace / "project")
    script = _bidi_script(tmp_path / "bidi.ndjson", ws)
    server = make_server(sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(script)})
    with server.client() as c:
        chat = new_chat(c)
    page: Page = open_ui(browser, server)
    open_chat(page, server, chat["id"])
    send(page, "show me")
    expect(page.locator("#result-bar")).to_contain_text("Done")
    read = page.locator(".card.tool-read .card-summary")
    expect(read).to_have_text("invoice_⟨U+202E⟩fdp.exe")
    shell = page.locator(".card.tool-shell")
    expect(shell.locator(".card-summary")).to_have_text("cat 'report⟨U+202E⟩txt.sh'")
    expect(shell.locator("pre")).to_have_text("a⟨U+202E⟩b\n")
    texts = [*page.locator("#timeline .card").all_text_contents(), page.title()]
    assert not any(RLO in t for t in texts)
    shot(page, "bidi")


def test_a_rejected_mcp_call_offers_to_approve_mcp_servers_too(
    make_server: Any, browser: Any, tmp_path: Path, workspace: Path
) -> None:
    sid, t = "8ef40118-8378-436d-8ba8-2436b19cc877", 1789644625717
    args = wire.mcp_args("faz-ai", "get_board", {"id": 1}, "c-mcp")
    times = {"model_call_id": "m-0", "started_at_ms": t}
    lines = [
        wire.system_init(sid, str(workspace / "project"), "Auto"),
        wire.user(sid, "board"),
        wire.tool_call_started(sid, "c-mcp", "mcpToolCall", args, **times, timestamp_ms=t),
        wire.tool_call_completed(sid, "c-mcp", "mcpToolCall", wire.rejected(), args=args,
                                 **times, completed_at_ms=t + 1, timestamp_ms=t + 1),
        wire.result_success(sid, "req", "no", 42, wire.usage(10, 5)),
    ]
    script = tmp_path / "mcp.ndjson"
    script.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    server = make_server(sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(script)})
    with server.client() as c:
        chat = new_chat(c)
    page = open_ui(browser, server)
    open_chat(page, server, chat["id"])
    send(page, "board")
    expect(page.locator(".card.tool-mcp")).to_have_attribute("data-status", "rejected")
    page.get_by_role("button", name="Allow tools for this chat and run again").click()
    expect(page.locator(".msg.user")).to_have_count(2)
    with server.client() as c:
        opts = c.get(f"/api/chats/{chat['id']}").json()["options"]
    assert (opts["force"], opts["approve_mcps"]) == (True, True)


def test_the_page_says_when_the_server_cannot_write_its_database(
        make_server: Any, browser: Any) -> None:
    # GET /api/health said "degraded" (a locked or full database: the runs' output waits in the
    # server's memory) and the page showed nothing: a run simply looked stuck
    server = make_server(sim_env=SLOW)
    with server.client() as c:
        chat = new_chat(c)
        health = c.get("/api/health").json()
    degraded = {**health, "status": "degraded", "store": {
        **health["store"], "status": "degraded", "degraded_since_ms": 1795290927526,
        "reason": "database is locked (OperationalError) <b>x</b>", "failed_writes": 7,
        "buffered": {"events": 42, "bytes": 181337}}}
    browser.route("**/api/health", lambda route: route.fulfill(
        status=200, content_type="application/json", body=orjson.dumps(degraded)))
    page = open_ui(browser, server)
    banner = page.locator("#store-state")
    expect(banner).to_be_visible()
    expect(banner).to_contain_text("could not write to its database")
    expect(banner).to_contain_text("database is locked (OperationalError) <b>x</b>")  # as text
    expect(banner).to_contain_text("42 events")
    browser.unroute("**/api/health")  # the database is back
    open_chat(page, server, chat["id"])
    send(page, "list the files")  # a running chat: the page looks every 2 s
    expect(banner).to_be_hidden(timeout=15_000)



def test_a_chat_opened_twice_while_loading_shows_each_record_once(
        make_server: Any, browser: Any) -> None:
    # two opens of the same chat before it loaded (the page's route at start and a hash change
    # at once) both went on: two streams fed one timeline, and the prompt showed twice
    server = make_server()
    with server.client() as c:
        chat = new_chat(c)
    page = open_ui(browser, server)
    open_chat(page, server, chat["id"])
    page.goto(f"{server.url}/#/")
    expect(page.locator("#welcome-view")).to_be_visible()  # the chat closed: its "Live" gone
    page.evaluate(f"""() => {{
        history.replaceState(null, "", "#/chat/{chat['id']}");
        dispatchEvent(new HashChangeEvent("hashchange"));
        dispatchEvent(new HashChangeEvent("hashchange"));
    }}""")
    expect(page.locator("#conn")).to_have_text("Live")
    send_after_done(page, "list the files")
    expect(page.locator("#result-bar")).to_contain_text("Done")
    expect(page.locator(".msg.user")).to_have_count(1)


def test_an_empty_or_too_long_prompt_is_not_sent_and_the_page_says_why(
    make_server: Any, browser: Any
) -> None:
    server = make_server()
    with server.client() as c:
        chat = new_chat(c)
        limit = c.get("/api/config").json()["max_prompt_bytes"]
        page = open_ui(browser, server)
        open_chat(page, server, chat["id"])
        send(page, "  \n ")  # was: nothing happened, whatever the alert said before stayed
        expect(page.locator("#alert")).to_contain_text("Type a prompt")
        long = "x" * (limit + 1)  # was: sent, and the server's 413 named the request body
        send(page, long)
        expect(page.locator("#alert")).to_contain_text(f"limit of {limit}")
        expect(page.get_by_label("Prompt")).to_have_value(long)  # nothing lost
        assert c.get(f"/api/chats/{chat['id']}/runs").json()["runs"] == []
