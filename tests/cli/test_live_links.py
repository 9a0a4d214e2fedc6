"""The live view's answer, rendered as Markdown, shows where each link and image goes: no terminal
hyperlink (OSC 8) hides a ``vscode://`` target behind "CI log". The text view and ``replay``
print the agent's Markdown as it is, the target in it, so every view shows the same URL."""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from rich.console import Console

from cursor_agent_api.cli.views import LiveView, TextView, TurnView
from cursor_agent_api.protocol import Transcript, parse_event

SID = "8ef40118-8378-436d-8ba8-2436b19cc877"
ANSWER = "All tests pass: [CI log](vscode://evil.ext/run?cmd=x) and [docs](https://evil.example/a)."


def _show(view: TurnView, text: str) -> None:
    t = Transcript()
    for obj in (
        {"type": "assistant", "session_id": SID,
         "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}},
        {"type": "result", "subtype": "success", "is_error": False, "result": text,
         "session_id": SID, "duration_ms": 5},
    ):
        event = parse_event(json.dumps(obj))
        view.handle(event, t.add(event))
    view.finish(t.to_result(), continue_hint="")


@pytest.mark.parametrize("kind", ["live", "text"])
def test_a_link_in_the_answer_shows_its_target_and_is_no_hyperlink(kind: str) -> None:
    out = StringIO()
    console = Console(file=out, width=200, force_terminal=True, color_system="standard")
    view: TurnView = LiveView(console) if kind == "live" else TextView(console)
    try:
        _show(view, ANSWER)
    finally:
        if isinstance(view, LiveView):
            view.stop()
    printed = out.getvalue()
    assert "\x1b]8;" not in printed, repr(printed[-400:])  # no OSC 8 hyperlink
    plain = _plain(printed)
    if kind == "live":
        assert "CI log (vscode://evil.ext/run?cmd=x) and docs (https://evil.example/a)." in plain
    else:
        assert ANSWER in plain


def test_escapes_in_a_link_stay_inert() -> None:
    printed = _live_printed("see [l\x1b[2Jog](https://x.example/\x1b]0;PWNED\x07) now")
    plain = _plain(printed)
    assert "\x1b]0;" not in printed and "\x07" not in printed
    assert "l\\x1b[2Jog" in plain


def _live_printed(text: str) -> str:
    """What the live view prints (a colour terminal, 200 columns) for an answer of ``text``."""
    out = StringIO()
    view = LiveView(Console(file=out, width=200, force_terminal=True, color_system="standard"))
    try:
        _show(view, text)
    finally:
        view.stop()
    return out.getvalue()


def _plain(printed: str) -> str:
    """What the reader sees: the console's output without its own SGR colour codes."""
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", printed)


def test_an_image_in_the_answer_shows_its_target_as_data() -> None:
    # it showed "🌆 build status": where the image points (a tracking pixel, a file) was
    # hidden, as a link's target was before it was shown as "text (url)"
    printed = _live_printed("Done. ![build status](https://evil.example/px.png?u=me) and "
                            "[![badge](https://img.example/b.svg)](https://ci.example/run)")
    assert "\x1b]8;" not in printed  # no OSC 8 hyperlink
    plain = _plain(printed)
    assert "build status (https://evil.example/px.png?u=me)" in plain, plain
    assert "badge (https://img.example/b.svg) (https://ci.example/run)" in plain, plain


def test_escapes_in_an_image_stay_inert() -> None:
    printed = _live_printed("see ![a\x07b\x1bc](https://x.example/\x1b]0;PWNED\x07) now")
    assert "\x1b]0;" not in printed and "\x07" not in printed
    plain = _plain(printed)
    assert "🌆 a\\x07b\\x1bc (https://x.example/" in plain and "PWNED" in plain, plain
