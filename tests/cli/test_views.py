"""The command line's views apply the changes of the one fold (issue 13 point 1).

Neither the live view nor the text renderer applies the segment rule or pairs tool calls:
they show what :meth:`Transcript.add` returned, and ``run``/``chat`` fold each event once
(the stream's own transcript), not once for the client and again for the view.
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from collections.abc import Callable
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from cursor_agent_api.cli.render import TurnRenderer
from cursor_agent_api.cli.saved_chats import SavedChats
from cursor_agent_api.cli.turns import Recorder, run_turn
from cursor_agent_api.cli.views import LiveView, TextView, TurnView
from cursor_agent_api.protocol import AgentEvent, AgentResult, Transcript, parse_event
from cursor_agent_api.protocol.changes import SegmentReplaced, TextAppended
from cursor_agent_api.protocol.transcript import Changes
from cursor_agent_api.sessions import ConversationSession

Run = Callable[..., subprocess.CompletedProcess[str]]

SID = "8ef40118-8378-436d-8ba8-2436b19cc877"
REAL = Path(__file__).parent.parent / "data" / "cursor-real"


def _call(subtype: str, key: str, args: dict[str, Any], result: Any = None) -> dict[str, Any]:
    inner: dict[str, Any] = {"args": args}
    if result is not None:
        inner["result"] = result
    return {"type": "tool_call", "subtype": subtype, "call_id": "<redacted>",
            "tool_call": {key: inner}, "session_id": SID}


REPEATED_IDS = [
    {"type": "system", "subtype": "init", "cwd": "/ws", "session_id": SID, "model": "GPT-5"},
    {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "look"}]},
     "session_id": SID},
    # a publisher that redacted every call id: two calls running at once, both "<redacted>"
    _call("started", "lsToolCall", {"path": "src"}),
    _call("started", "readToolCall", {"path": "notes.txt"}),
    _call("completed", "lsToolCall", {"path": "src"}, {"success": {}}),
    _call("completed", "readToolCall", {"path": "notes.txt"}, {"success": {"content": "a"}}),
    {"type": "assistant", "message": {"role": "assistant",
                                      "content": [{"type": "text", "text": "Both read."}]},
     "session_id": SID},
    {"type": "result", "subtype": "success", "is_error": False, "result": "Both read.",
     "session_id": SID, "duration_ms": 5, "duration_api_ms": 5},
]


def _events(objs: list[dict[str, Any]]) -> list[AgentEvent]:
    return [parse_event(json.dumps(o)) for o in objs]


def _render(renderable: Any) -> str:
    out = StringIO()
    Console(file=out, width=100, color_system=None).print(renderable)
    return out.getvalue()


def test_live_view_shows_calls_with_a_repeated_id_separately() -> None:
    out = StringIO()
    view = LiveView(Console(file=out, width=100, color_system=None))
    t = Transcript()
    try:
        events = _events(REPEATED_IDS)
        for event in events[:4]:  # both calls started
            view.handle(event, t.add(event))
        region = _render(view)
        assert "… ls src  running" in region
        assert "… read notes.txt  running" in region
        view.handle(events[4], t.add(events[4]))  # the ls call completed, read still runs
        assert "✓ ls src  succeeded" in out.getvalue()
        region = _render(view)
        assert "… read notes.txt  running" in region and "ls src" not in region
        for event in events[5:]:
            view.handle(event, t.add(event))
        view.finish(t.to_result(), continue_hint="")
    finally:
        view.stop()
    printed = out.getvalue()
    assert printed.count("✓ ls src  succeeded") == 1
    assert printed.count("✓ read notes.txt  succeeded") == 1
    assert printed.index("ls src") < printed.index("read notes.txt") < printed.index("Both read.")


def test_text_renderer_prints_each_call_of_a_repeated_id_when_it_finishes() -> None:
    out = StringIO()
    renderer = TurnRenderer(Console(file=out, width=100, color_system=None))
    for event in _events(REPEATED_IDS):
        renderer.handle(event)
    renderer.close()
    lines = out.getvalue().splitlines()
    assert lines[1:4] == ["✓ ls src  succeeded", "✓ read notes.txt  succeeded", "Both read."]


def test_live_run_with_repeated_call_ids(cli: Run, tmp_path: Path) -> None:
    script = tmp_path / "redacted.ndjson"
    script.write_text("".join(json.dumps(o) + "\n" for o in REPEATED_IDS))
    proc = cli("run", "--simulate", "--trust", "--output", "live", "look",
               extra_env={"CURSOR_AGENT_SIM_SCRIPT": str(script)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("✓ ls src  succeeded") == 1
    assert proc.stdout.count("✓ read notes.txt  succeeded") == 1
    assert "Both read." in proc.stdout


class _Spy:
    """A view that notes the events and changes it was given, and passes them on."""

    def __init__(self, inner: TurnView) -> None:
        self.inner = inner
        self.seen: list[tuple[AgentEvent, Changes]] = []

    def handle(self, event: AgentEvent, changes: Changes) -> None:
        self.seen.append((event, changes))
        self.inner.handle(event, changes)

    def finish(self, result: AgentResult, *, continue_hint: str) -> None:
        self.inner.finish(result, continue_hint=continue_hint)


@pytest.mark.parametrize("kind", ["text", "live"])
def test_a_cli_turn_folds_each_event_once(kind: str, make_cursor_sim_config: Any,
                                          monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``run``/``chat``: each event goes through ``Transcript.add`` once, and the view is
    given the changes of that one fold."""
    folds: Counter[int] = Counter()
    alive: list[AgentEvent] = []  # so that no id() is reused
    real_add = Transcript.add

    def counting_add(self: Transcript, event: AgentEvent) -> Changes:
        folds[id(event)] += 1
        alive.append(event)
        return real_add(self, event)

    monkeypatch.setattr(Transcript, "add", counting_add)
    recording = REAL / "02-hcn-0915-probe-43-partial-output-with-read-tool.ndjson"
    config = make_cursor_sim_config(script=str(recording), stream_partial_output=True)
    out = StringIO()
    console = Console(file=out, width=100, color_system=None)
    view = _Spy(TextView(console) if kind == "text" else LiveView(console))
    with ConversationSession(config) as session:
        outcome = run_turn(session, "read notes.txt", view, Recorder(None),
                           saved=SavedChats(tmp_path / "chats"), simulated=True)
    assert outcome.result.success
    assert len(view.seen) == len(recording.read_bytes().splitlines())  # every line, deltas too
    assert [folds[id(event)] for event, _ in view.seen] == [1] * len(view.seen)
    # the changes the view was given are the fold's own: replayed alone, they give the text
    shown: dict[int, str] = {}
    for _, changes in view.seen:
        for change in changes:
            if isinstance(change, TextAppended):
                shown[change.segment] = shown.get(change.segment, "") + change.text
            elif isinstance(change, SegmentReplaced):
                shown[change.segment] = change.text
    assert "".join(shown.values()) == outcome.result.text
    assert "READ-OK" in out.getvalue()


def test_the_stream_gives_its_own_fold_and_its_changes(make_cursor_sim_config: Any) -> None:
    """``stream.transcript`` is the fold the result comes from; ``with_changes()`` gives the
    changes of that fold and must come before the first event (its changes would be lost)."""
    recording = REAL / "02-hcn-0915-probe-43-partial-output-with-read-tool.ndjson"
    config = make_cursor_sim_config(script=str(recording), stream_partial_output=True)
    with ConversationSession(config) as session:
        stream = session.send_stream("read notes.txt")
        kinds = [change.kind for _, changes in stream.with_changes() for change in changes]
        result = session.finalize_stream("read notes.txt", stream)
        assert "add" not in vars(stream.transcript)  # the fold is the transcript's own again
        assert stream.transcript.text == result.text == "READ-OK"
        assert [c.call_id for c in stream.transcript.tool_calls] == [
            c.call_id for c in result.tool_calls]
        assert kinds.count("text_appended") == 3 and "segment_replaced" in kinds
        assert kinds[-1] == "result_received"

        late = session.send_stream("again")
        next(iter(late))
        with pytest.raises(RuntimeError, match="before the stream's first event"):
            next(late.with_changes())
        session.finalize_stream("again", late)


@pytest.mark.parametrize("flags", [("--output", "text"), ("--output", "live"), ("--output", "json"),
                                   ("--output", "ndjson"), ("--output-format", "text"),
                                   ("--output-format", "json"), ("--output-format", "stream-json")],
                         ids=lambda f: f"{f[0][2:]}={f[1]}")
def test_the_run_command_folds_each_event_once(flags: tuple[str, str], cli_env: dict[str, str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """``cursor-agent-api run``, whatever its output, in this process: one ``Transcript.add``
    per line the agent wrote (issue 13: "``cli run`` folds every event twice")."""
    from click.testing import CliRunner

    from cursor_agent_api.cli import main

    folds: Counter[bytes] = Counter()
    real_add = Transcript.add

    def counting_add(self: Transcript, event: AgentEvent) -> Changes:
        line = event.line if event.line is not None else event.raw
        folds[line if isinstance(line, bytes) else str(line).encode()] += 1
        return real_add(self, event)

    monkeypatch.setattr(Transcript, "add", counting_add)
    recording = REAL / "02-hcn-0915-probe-43-partial-output-with-read-tool.ndjson"
    monkeypatch.chdir(cli_env["TEST_WS"])
    env = {k: v for k, v in cli_env.items() if k.startswith(("CURSOR_", "NO_COLOR"))}
    env["CURSOR_AGENT_SIM_SCRIPT"] = str(recording)
    result = CliRunner().invoke(main, ["run", "--simulate", "--trust", "--stream-partial-output",
                                       *flags, "read notes.txt"], env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    lines = [line for line in recording.read_bytes().splitlines() if line.strip()]
    assert sum(folds.values()) == len(lines), folds
    assert set(folds.values()) == {1}
