"""The real recordings: text reassembly, tool-call pairing, counts."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from cursor_agent_api import EventType, ToolKind, ToolStatus, Transcript
from cursor_agent_api.protocol import EventReader

DATA = Path(__file__).parent.parent / "data" / "cursor-real"
RECORDINGS = sorted(DATA.glob("*.ndjson"))
FRAGMENTS = sorted((DATA / "fragments").glob("*.ndjson"))

S, R = ToolStatus.SUCCEEDED, ToolStatus.REJECTED
EXPECTED_CALLS: dict[str, list[tuple[ToolKind, ToolStatus]]] = {
    "01": [],
    "02": [(ToolKind.READ, S)],
    "03": [(ToolKind.WEB_FETCH, R), (ToolKind.SHELL, R), (ToolKind.SHELL, R),
           (ToolKind.WEB_SEARCH, R)],
    "04": [(ToolKind.WEB_FETCH, R)],
    "05": [(ToolKind.ASK_QUESTION, R)],
    "06": [(ToolKind.SHELL, S)],
    "07": [(ToolKind.SHELL, R), (ToolKind.SHELL, R), (ToolKind.WEB_FETCH, R)],
    "08": [(ToolKind.READ, S), (ToolKind.EDIT, S)],
}


def test_all_recordings_present() -> None:
    assert [p.name[:2] for p in RECORDINGS] == sorted(EXPECTED_CALLS)


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.name[:2])
def test_recording(path: Path) -> None:
    t = Transcript.from_file(path)
    lines = [line for line in path.read_bytes().split(b"\n") if line.strip()]
    assert t.text == t.result_text  # the segment rule reproduces result.result
    assert t.raw_lines == 0
    assert t.object_lines == len(lines) == len(t.events)
    assert t.success
    assert t.usage is not None and t.usage.input_tokens > 0
    assert t.session_id == orjson.loads(lines[0])["session_id"]
    calls = t.tool_calls
    assert [(c.kind, c.status) for c in calls] == EXPECTED_CALLS[path.name[:2]]
    for c in calls:
        assert c.args, c.call_id  # args recovered even when the completion omits them
        assert c.duration_ms is not None
    result = t.to_result()
    assert result.result == result.text == t.text
    assert result.request_id == orjson.loads(lines[-1])["request_id"]


def test_partial_output_deltas_are_not_doubled() -> None:
    t = Transcript.from_file(RECORDINGS[0])
    assert t.text.count("River remembers") == 1
    assert sum(e.type is EventType.ASSISTANT_DELTA for e in t.events) == 38


def test_call_ids_with_newlines_kept_exactly() -> None:
    t = Transcript.from_file(RECORDINGS[1])
    (call,) = t.tool_calls
    assert call.call_id == (
        "call_iu8tBKMotwl65Q9zDQkrVbxk\nfc_033a3f83b990888b016aabcf9f0f6c87d1881d742b9e47ee52"
    )
    assert call.read_range == (1, 3)
    assert call.content == "first line\n\nprobe13"


def test_completed_without_started_gets_args_from_interaction_query() -> None:
    t = Transcript.from_file(RECORDINGS[2])
    search = t.tool_calls[-1]
    assert search.kind is ToolKind.WEB_SEARCH
    assert search.args["searchTerm"] == "example.com page title"
    assert search.error_message == "User Rejected"
    shell = t.tool_calls[1]
    assert shell.command == "curl -sL https://example.com | grep -i '<title>' | head -1"
    assert shell.exit_code is None  # never ran
    assert t.thinking[0] == "Fetching https://example.com to retrieve its page title."


def test_shell_success_fields() -> None:
    t = Transcript.from_file(RECORDINGS[5])
    (shell,) = t.tool_calls
    assert shell.exit_code == 0
    assert shell.stdout is not None and shell.stdout.startswith("HTTP/2 200")
    assert shell.output.startswith("HTTP/2 200")
    assert shell.duration_ms is not None


def test_edit_fields() -> None:
    t = Transcript.from_file(RECORDINGS[7])
    edit = t.tool_calls[1]
    assert edit.path == "/hcn-cursor-spike/ws-main/notes.txt"
    assert edit.diff is not None and "+probe13" in edit.diff
    assert edit.output == edit.diff
    assert edit.new_content == "alpha\nbeta\nprobe13\n"


def test_fragments_mcp_todos_and_auto_model() -> None:
    (path,) = FRAGMENTS
    t = Transcript.from_file(path)
    assert t.model == "Auto"
    tools, mcp, todos = t.tool_calls
    assert tools.kind is ToolKind.MCP_TOOLS and tools.mcp_server == "faz-ai"
    assert mcp.kind is ToolKind.MCP and (mcp.mcp_server, mcp.mcp_tool) == ("faz-ai", "get_board")
    # the fragment has no completion for these two: the turn ended without one
    assert tools.status is ToolStatus.ABANDONED and mcp.status is ToolStatus.ABANDONED
    assert todos.kind is ToolKind.TODOS and todos.status is ToolStatus.SUCCEEDED
    assert len(todos.todos) == 2
    assert todos.output.splitlines()[0].startswith("[x] Consultar")


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.name[:2])
def test_byte_by_byte_equals_whole(path: Path) -> None:
    data = path.read_bytes()
    whole = EventReader()
    expected = whole.feed(data) + whole.close()
    reader = EventReader()
    got = []
    for i in range(len(data)):
        got.extend(reader.feed(data[i : i + 1]))
    got.extend(reader.close())
    assert got == expected


# ---- ids redacted by a recording's publisher -------------------------------------------------
# A published recording had every id replaced by the same string "<redacted>" and read as one
# tool call instead of three (issue 12, point 8). That file is not in this repository; every real
# recording here is read again with its ids redacted the same way, and must give the same calls.

_ID_KEYS = frozenset({"call_id", "model_call_id", "session_id", "request_id", "toolCallId", "id"})


def _redact(value: object) -> object:
    if isinstance(value, dict):
        return {k: "<redacted>" if k in _ID_KEYS and isinstance(v, str) else _redact(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_redact(v) for v in value]
    return value


def redacted(path: Path) -> bytes:
    """The recording with every id replaced by ``<redacted>``, one object per line."""
    lines = [line for line in path.read_bytes().split(b"\n") if line.strip()]
    return b"".join(orjson.dumps(_redact(orjson.loads(line))) + b"\n" for line in lines)


def _calls(t: Transcript) -> list[tuple[ToolKind, ToolStatus, object, int | None, str]]:
    return [(c.kind, c.status, _redact(c.args), c.duration_ms, c.output) for c in t.tool_calls]


@pytest.mark.parametrize("path", [*RECORDINGS, *FRAGMENTS], ids=lambda p: p.name[:2])
def test_redacted_ids_give_the_same_calls(path: Path) -> None:
    data = redacted(path)
    assert b'"call_id":"<redacted>"' in data or b"tool_call" not in data
    original, t = Transcript.from_file(path), Transcript.from_bytes(data)
    assert _calls(t) == _calls(original)
    assert t.text == original.text
    assert {c.call_id for c in t.tool_calls} <= {"<redacted>"}
    if t.tool_calls:
        assert t.tool_call("<redacted>") is t.tool_calls[-1]  # the latest call with that id
