"""Tool cards show what the agent did as it is (review of 2026-11-24): "Show all" on a cut
write card fetches the content it cut (not the one-line "N lines written"), one per cut field,
and keeps what it loaded when the card is redrawn; a command's newlines show; a glob or grep
cut at 2,000 says so."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect
from server_helpers import new_chat
from test_ui import open_chat, open_ui, send

from cursor_agent_api.server.webui import WHOLE_FIELDS, tool_call_item, tool_call_view
from cursor_agent_api.sim import wire

SID = "8ef40118-8378-436d-8ba8-2436b19cc877"
END = "END-OF-THE-WRITTEN-FILE"
END_OUT = "END-OF-STDOUT"


def _script(path: Path) -> Path:
    content = "".join(f"line {i}\n" for i in range(30_000)) + END + "\n"
    stdout = "out\n" * 60_000 + END_OUT
    times = {"model_call_id": "mc", "started_at_ms": 1, "timestamp_ms": 1}
    wargs = wire.write_args("/ws/big.txt", content, "call_1")
    sargs = wire.shell_args("seq 60000", "call_2", conversation_id=SID, request_id="r",
                            description="Count")
    with path.open("wb") as f:
        f.write(wire.encode(wire.system_init(SID, "/ws", "GPT-5 Mini")))
        f.write(wire.encode(wire.user(SID, "big")))
        f.write(wire.encode(wire.tool_call_started(SID, "call_1", "writeToolCall", wargs, **times)))
        f.write(wire.encode(wire.tool_call_completed(
            SID, "call_1", "writeToolCall", wire.write_success("/ws/big.txt", content), args=wargs,
            completed_at_ms=2, **times)))
        f.write(wire.encode(wire.tool_call_started(SID, "call_2", "shellToolCall", sargs, **times)))
        f.write(wire.encode(wire.tool_call_completed(
            SID, "call_2", "shellToolCall", wire.shell_outcome("seq 60000", "/ws", 0, stdout, "", 5),
            args=sargs, completed_at_ms=3, **times)))
        f.write(wire.encode(wire.result_success(SID, "r", "done", 1, wire.usage(1, 2))))
    return path


def test_show_all_on_a_cut_write_and_shell_card_shows_the_cut_field(
    make_server: Any, browser: Any, tmp_path: Path
) -> None:
    server = make_server(sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(_script(tmp_path / "big.ndjson"))})
    with server.client() as c:
        chat = new_chat(c)
    page = open_ui(browser, server)
    open_chat(page, server, chat["id"])
    send(page, "big")
    expect(page.locator("#result-bar")).to_have_attribute("data-status", "succeeded")
    _show_all_shows_the_cut_fields(page)  # live: from the records as they came
    # Opened later: from the chat's folded state (the store's cut rows), not the live records
    # (the same chat and run: one server and one run for both, not one each).
    page.reload()
    expect(page.locator("#result-bar")).to_have_attribute("data-status", "succeeded")
    _show_all_shows_the_cut_fields(page)
    assert page.errors == []  # type: ignore[attr-defined]


def _show_all_shows_the_cut_fields(page: Page) -> None:
    write = page.locator(".card.tool-write")
    expect(write).not_to_contain_text(END)
    expect(write.locator(".card-note")).to_have_count(1)  # one note: "Long content … Show all"
    write.get_by_role("button", name="Show all content").click()
    expect(write.locator("pre.whole-value")).to_contain_text(END)
    assert "lines written" not in write.locator("pre.whole-value").inner_text()
    shell = page.locator(".card.tool-shell")
    shell.get_by_role("button", name="Show all stdout").click()
    expect(shell.locator("pre.whole-value")).to_contain_text(END_OUT)


REDRAW = """async () => {
  const { Timeline } = await import('/js/timeline.js');
  const div = document.getElementById('timeline');
  document.getElementById('welcome-view').hidden = true;
  document.getElementById('chat-view').hidden = false;
  const tl = new Timeline(div, document.getElementById('result-bar'), { onRunChange: () => {} });
  window.tl = tl;
  tl.apply({ type: 'run', subtype: 'queued', seq: 1,
            payload: { run: { id: 'r1', status: 'running', prompt: 'hi' } } }, []);
  window.view = { call_id: 'c', kind: 'write', status: 'succeeded', path: '/ws/a', new_content: 'cut...',
                  cut: ['new_content'] };
  tl.apply({ type: 'event', run_id: 'r1', seq: 2 },
           [{ kind: 'tool_call_opened', index: 0, view: window.view }]);
}"""


def _page_answering_show_all(make_server: Any, browser: Any, body: str) -> tuple[Any, list[str]]:
    """A signed-in page whose Show-all requests for run r1's call 0 get ``body``; the URLs
    asked, in order."""
    page = open_ui(browser, make_server())
    expect(page.locator("#welcome-view")).to_be_visible()
    asked: list[str] = []

    def whole(route: Any) -> None:
        asked.append(route.request.url)
        route.fulfill(status=200, content_type="text/plain", body=body)

    page.route("**/api/runs/r1/tool-calls/0/output*", whole)
    return page, asked


def test_a_redraw_keeps_what_show_all_loaded(make_server: Any, browser: Any) -> None:
    page, asked = _page_answering_show_all(make_server, browser, "the whole content")
    page.evaluate(REDRAW)
    card = page.locator(".card.tool-write")
    card.get_by_role("button", name="Show all content").click()
    expect(card.locator("pre.whole-value")).to_have_text("the whole content")
    assert asked and asked[0].endswith("/output?field=new_content")
    page.evaluate("""() => window.tl.apply({ type: 'event', run_id: 'r1', seq: 3 },
        [{ kind: 'tool_call_changed', index: 0, view: { ...window.view, duration_ms: 5 } }])""")
    expect(card.locator(".card-duration")).to_be_visible()  # redrawn
    expect(card.locator("pre.whole-value")).to_have_text("the whole content")
    expect(card.locator(".cut-note")).to_have_count(0)


def test_a_401_from_show_all_shows_the_sign_in_form(make_server: Any, browser: Any) -> None:
    server = make_server()
    page = open_ui(browser, server)
    expect(page.locator("#welcome-view")).to_be_visible()
    page.route("**/api/runs/r1/tool-calls/0/output*",
               lambda route: route.fulfill(status=401, content_type="application/json",
                                           body='{"detail": "not signed in"}'))
    page.evaluate(REDRAW)
    page.locator(".card.tool-write").get_by_role("button", name="Show all content").click()
    expect(page.locator("#login-view")).to_be_visible()
    expect(page.locator("#alert")).to_contain_text("sign in again")


MULTILINE = """async () => {
  const { createRequestCard } = await import('/js/requests.js');
  const { createCard, drawCard } = await import('/js/cards.js');
  document.getElementById('welcome-view').hidden = true;
  document.getElementById('chat-view').hidden = false;
  const tl = document.getElementById('timeline');
  const cmd = 'echo cleaning up the build output\\nrm -rf ~';
  const req = createRequestCard(
    { request_id: 'x', kind: 'permission', tool: { kind: 'shell', command: cmd } },
                                async () => ({}));
  const card = createCard();
  drawCard(card, { kind: 'shell', status: 'running', command: cmd });
  tl.append(req, card);
  return [req.querySelector('.request-what').innerText, card.querySelector('.card-summary').innerText];
}"""


def test_a_multi_line_command_shows_its_lines(make_server: Any, browser: Any) -> None:
    server = make_server()
    page = open_ui(browser, server)
    expect(page.locator("#welcome-view")).to_be_visible()
    asked, shown = page.evaluate(MULTILINE)
    assert asked == "echo cleaning up the build output\nrm -rf ~"
    assert shown == "echo cleaning up the build output\nrm -rf ~"


GLOB = """async (view) => {
  const { createCard, drawCard } = await import('/js/cards.js');
  const card = createCard();
  drawCard(card, view);
  return card.querySelector('summary').textContent;
}"""


def test_a_glob_cut_at_2000_says_of_how_many(make_server: Any, browser: Any) -> None:
    files = [f"src/f{i}.py" for i in range(5000)]
    view = tool_call_view({"data": {"type": "tool_call", "subtype": "completed", "call_id": "g",
                                    "tool_call": {"globToolCall": {"args": {"globPattern": "**/*.py"},
                                                  "result": {"success": {"files": files}}}}}})
    assert view is not None and len(view["files"]) == 2000 and view["files_total"] == 5000
    server = make_server()
    page = open_ui(browser, server)
    expect(page.locator("#welcome-view")).to_be_visible()
    assert page.evaluate(GLOB, view) == "2,000 of 5,000 files (the first ones only)"
    small = {**view, "files": files[:3], "files_total": 3}
    assert page.evaluate(GLOB, small) == "3 files"


def test_a_stored_cut_row_names_the_fields_it_cut() -> None:
    """The chat's state is made from the store's rows, cut when stored (``cuts``: pointers into
    args/result; rows before migration 0009 had them under the result's ``_cut``): the card
    lists the view fields made of a cut string. A view's ``cut`` says it all: it has no
    ``truncated`` (a list of ``{field, bytes}`` everywhere else in the API)."""
    cuts = [{"field": "/args/fileText", "bytes": 900_000}]
    row = {"idx": 0, "call_id": "c", "kind": "write", "name": "writeToolCall", "status": "succeeded",
           "args": {"path": "/ws/a", "fileText": "line\nline"},
           "result": {"success": {"path": "/ws/a", "linesCreated": 2}, "_cut": cuts},
           "started_seq": 3, "completed_seq": 4}
    now = {**row, "result": {"success": {"path": "/ws/a", "linesCreated": 2}}, "cuts": cuts}
    for stored in (row, now):
        view = tool_call_item(stored)["view"]
        assert "truncated" not in view
        assert "new_content" in view["cut"]
        assert view["new_content"] == "line\nline"  # the mark that found it is gone
        assert "output" not in view["cut"]


LONG_LINE = "x" * 50  # stands for a long minified line the store cut
CUT_ROWS = {
    "grep": ({"pattern": "x"},
             {"success": {"workspaceResults": {"/ws": {"content": {"matches": [
                 {"file": "a.min.js", "matches": [{"lineNumber": 1, "content": LONG_LINE}]}]}}}},
              "_cut": [{"field": "/result/success/workspaceResults/~1ws/content/matches/0/matches/0/content",
                        "bytes": 99_999}]}),
    "glob": ({"globPattern": "*"},
             {"success": {"files": ["p" * 40, "b.py"]},
              "_cut": [{"field": "/result/success/files/0", "bytes": 99_999}]}),
    "web_search": ({"searchTerm": "q"},
                   {"success": {"references": [{"title": "t" * 30, "url": "https://e.org/"}]},
                    "_cut": [{"field": "/result/success/references/0/title", "bytes": 99_999}]}),
}


def _cut_row(kind: str) -> dict[str, Any]:
    args, result = CUT_ROWS[kind]
    return {"idx": 0, "call_id": "c", "kind": kind, "name": "", "status": "succeeded",
            "args": args, "result": result, "started_seq": 3, "completed_seq": 4}


@pytest.mark.parametrize("kind", list(CUT_ROWS))
def test_a_cut_list_item_leaves_no_mark_and_show_all_fetches_the_whole_list(kind: str) -> None:
    """A stored grep line, glob path or search title cut by the store sits in a list of the
    view: the mark that found it is gone everywhere, and ``cut`` names ``output`` (the whole
    list, one line per item, as ``…/output?field=output`` gives it)."""
    view = tool_call_item(_cut_row(kind))["view"]
    assert "\ufdd0" not in json.dumps(view, ensure_ascii=False)
    assert "truncated" not in view and view["cut"] == ["output"]
    assert set(view["cut"]) <= set(WHOLE_FIELDS)
    if kind == "grep":
        assert view["matches"][0]["text"] == LONG_LINE
    if kind == "glob":
        assert view["files"] == ["p" * 40, "b.py"]
    if kind == "web_search":
        assert view["references"][0]["title"] == "t" * 30


LIST_CARD = """async (view) => {
  const { Timeline } = await import('/js/timeline.js');
  document.getElementById('welcome-view').hidden = true;
  document.getElementById('chat-view').hidden = false;
  const tl = new Timeline(document.getElementById('timeline'), document.getElementById('result-bar'),
                          { onRunChange: () => {} });
  tl.apply({ type: 'run', subtype: 'queued', seq: 1,
            payload: { run: { id: 'r1', status: 'running', prompt: 'hi' } } }, []);
  tl.apply({ type: 'event', run_id: 'r1', seq: 2 }, [{ kind: 'tool_call_opened', index: 0, view }]);
}"""


def test_show_all_on_a_cut_glob_card_names_and_fetches_its_file_list(make_server: Any, browser: Any) -> None:
    page, asked = _page_answering_show_all(make_server, browser, "the whole path\nb.py")
    page.evaluate(LIST_CARD, tool_call_item(_cut_row("glob"))["view"])
    card = page.locator(".card.tool-glob")
    assert "\ufdd0" not in card.inner_text()
    expect(card.locator(".card-list li").first).to_have_text("p" * 40)
    card.get_by_role("button", name="Show all file list").click()
    expect(card.locator("pre.whole-value")).to_have_text("the whole path\nb.py")
    assert asked and asked[0].endswith("/output?field=output")
    expect(card).to_contain_text("The whole file list:")
    assert page.errors == []  # type: ignore[attr-defined]


DIFF_LINES = """async ([view, ws]) => {
  const { createCard, drawCard } = await import('/js/cards.js');
  const card = createCard();
  drawCard(card, view, ws);
  return [...card.querySelectorAll('.diff-line')]
    .map((l) => [l.className.replace('diff-line diff-', ''), l.textContent]);
}"""


def test_a_diffs_lines_that_look_like_file_headers_are_shown_as_they_are(page: Any) -> None:
    """Only a diff's file headers (before a file's hunks) are made workspace-relative and
    styled as headers: a removed line "-- /ws/schema/setup.sql" (an SQL comment; "--- /ws/…"
    in the diff) was shown as "--- schema/setup.sql", an added "++ /ws/x" as "+++ x"
    (audit 16). A second file's
    headers, after the first file's hunks, are headers again."""
    diff = "\n".join([
        "--- a//ws/setup.sql", "+++ b//ws/setup.sql", "@@ -1,3 +1,3 @@",
        "--- /ws/schema/setup.sql", "+++ /ws/schema/moved.sql", " SELECT 1;", "--- a//ws/x",
        "+++ b//ws/x", "--- a//ws/two.sql", "+++ b//ws/two.sql", "@@ -1 +1 @@", "-x", "+y",
    ])
    view = {"kind": "edit", "status": "succeeded", "path": "/ws/setup.sql", "diff": diff}
    assert page.evaluate(DIFF_LINES, [view, "/ws"]) == [
        ["file", "--- a/setup.sql"], ["file", "+++ b/setup.sql"], ["hunk", "@@ -1,3 +1,3 @@"],
        ["del", "--- /ws/schema/setup.sql"], ["add", "+++ /ws/schema/moved.sql"],
        ["ctx", " SELECT 1;"], ["del", "--- a//ws/x"], ["add", "+++ b//ws/x"],
        ["file", "--- a/two.sql"], ["file", "+++ b/two.sql"], ["hunk", "@@ -1 +1 @@"],
        ["del", "-x"], ["add", "+y"],
    ]
    # a written file's content: every line an added one ("++ x" is "+++ x" there)
    write = {"kind": "write", "status": "succeeded", "path": "/ws/n.sql", "new_content": "++ /ws/x\n-- y\n"}
    assert page.evaluate(DIFF_LINES, [write, "/ws"]) == [["add", "+++ /ws/x"], ["add", "+-- y"]]
