"""Every JSON example of the five seed documents, read into the normalized model.

The examples are extracted from the copies in tests/data/seeds/ (fenced ```json
blocks in the Markdown seeds, brace blocks and NDJSON lines in seed 000), in
document order, and each is checked against the expectation at the same index.
Two of seed 002's examples are not valid JSON (a ``// comment`` placeholder and a
line missing a closing brace): they must come through as RAW events, the
original kept, like any unparseable line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from cursor_agent_api import EventType, ToolKind, ToolStatus, Transcript, parse_event

SEEDS = Path(__file__).parent.parent / "data" / "seeds"


def extract(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    out: list[str] = []
    if "```" in text:
        for m in re.finditer(r"```json\n(.*?)```", text, re.S):
            block = m.group(1).strip()
            lines = block.splitlines()
            if len(lines) > 1 and all(line.startswith("{") for line in lines):
                out.extend(lines)  # an NDJSON sequence
            else:
                out.append(block)
        return out
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith('{"') and line.rstrip().endswith("}"):
            out.append(line)
        elif line.strip() == "{":
            j = i
            while lines[j].rstrip() != "}":
                j += 1
            out.append("\n".join(lines[i : j + 1]))
            i = j
        i += 1
    return out


T = EventType
# (event type, text, tool kind, tool status, extra checks)
E = tuple[EventType, Any, Any, Any, dict[str, Any]]


def ev(t: EventType, text: Any = None, kind: Any = None, status: Any = None, **extra: Any) -> E:
    return (t, text, kind, status, extra)


EXPECTED: dict[str, list[E]] = {
    "000": [
        ev(T.RESULT_SUCCESS, "<full assistant text>", request_id="<optional request id>"),
        ev(T.SYSTEM_INIT, None, session_id="<uuid>"),
        ev(T.USER, "<prompt>", session_id="<uuid>"),
        ev(T.ASSISTANT, "<delta chunk>"),
        ev(T.TOOL_CALL_STARTED, None, ToolKind.READ, ToolStatus.RUNNING, path="file.txt"),
        ev(T.TOOL_CALL_COMPLETED, None, ToolKind.READ, ToolStatus.SUCCEEDED,
           output="file contents..."),
        ev(T.RESULT_SUCCESS, "<full assistant text>"),
        ev(T.SYSTEM_INIT, None, session_id="c6b62c6f-7ead-4fd6-9922-e952131177ff"),
        ev(T.USER, "Lis le README.md et fais-moi un résumé"),
        ev(T.ASSISTANT, "Je vais "),
        ev(T.ASSISTANT, "lire le fichier README.md"),
        ev(T.TOOL_CALL_STARTED, None, ToolKind.READ, ToolStatus.RUNNING, path="README.md"),
        ev(T.TOOL_CALL_COMPLETED, None, ToolKind.READ, ToolStatus.SUCCEEDED,
           output="# Projet\n\nCeci est un projet d'exemple..."),
        ev(T.ASSISTANT, " et te faire un résumé"),
        ev(T.TOOL_CALL_STARTED, None, ToolKind.WRITE, ToolStatus.RUNNING, path="summary.txt"),
        ev(T.TOOL_CALL_COMPLETED, None, ToolKind.WRITE, ToolStatus.SUCCEEDED,
           output="/Users/user/project/summary.txt: 19 lines written"),
        ev(T.RESULT_SUCCESS, "Je vais lire le fichier README.md et te faire un résumé"),
    ],
    "001": [
        ev(T.SYSTEM_INIT, None, session_id="uuid"),
        ev(T.USER, "the prompt"),
        ev(T.THINKING_DELTA, "token", timestamp_ms=1770823434041),
        ev(T.THINKING_COMPLETED, None, timestamp_ms=1770823435070),
        ev(T.ASSISTANT, "...", model_call_id="uuid-suffix"),  # a segment recap
        ev(T.ASSISTANT, "..."),  # the final message
        ev(T.TOOL_CALL_STARTED, None, ToolKind.LS, ToolStatus.RUNNING, path="/some/path"),
        ev(T.TOOL_CALL_COMPLETED, None, ToolKind.LS, ToolStatus.SUCCEEDED, path="/some/path"),
        ev(T.RESULT_SUCCESS, "concatenated assistant text", request_id="uuid"),
    ],
    "002": [
        ev(T.RAW, None),  # "// System initialization data": a placeholder, not JSON
        ev(T.USER, "Write a simple Hello World program in Python"),
        ev(T.THINKING_DELTA, "Processing the request..."),
        ev(T.ASSISTANT, "I'll create a simple Hello World program in Python for you."),
        ev(T.TOOL_CALL_STARTED, None, ToolKind.SHELL, ToolStatus.RUNNING,
           call_id="tool-123", command="python hello_world.py"),
        ev(T.TOOL_CALL_COMPLETED, None, ToolKind.UNKNOWN, ToolStatus.SUCCEEDED,
           call_id="tool-123", exit_code=0, output="Hello, World!\n"),
        ev(T.RESULT_SUCCESS, None),
        ev(T.RESULT_ERROR, None),
        ev(T.ERROR, "An error occurred while processing the request"),
        ev(T.SYSTEM_INIT, None),
        ev(T.THINKING_DELTA, "I'll create a Hello World program..."),
        ev(T.ASSISTANT, "I'll create a simple Hello World program in Python for you."),
        ev(T.TOOL_CALL_STARTED, None, ToolKind.WRITE, ToolStatus.RUNNING,
           call_id="write-file-1", path="hello_world.py"),
        ev(T.TOOL_CALL_COMPLETED, None, ToolKind.UNKNOWN, ToolStatus.SUCCEEDED,
           call_id="write-file-1"),
        ev(T.RAW, None),  # the seed's own line misses a closing brace
        ev(T.TOOL_CALL_COMPLETED, None, ToolKind.UNKNOWN, ToolStatus.SUCCEEDED,
           call_id="shell-1", exit_code=0, output="Hello, World!\n"),
        ev(T.ASSISTANT,
           "I've created a Hello World program and executed it. The output is 'Hello, World!'"),
        ev(T.RESULT_SUCCESS, None),
        ev(T.RAW, "<unparsed line content>"),
        ev(T.ERROR, "Error description"),
    ],
    "003": [
        ev(T.SYSTEM_INIT, None, session_id="uuid"),
        ev(T.USER, "the prompt"),
        ev(T.ASSISTANT_DELTA, "delta", timestamp_ms=1772104286759),
        ev(T.ASSISTANT, "full response"),
        ev(T.RESULT_SUCCESS, "full response text", request_id="uuid"),
    ],
    "004": [
        ev(T.RESULT_SUCCESS, "The capital of France is Paris.", request_id="req_abc123"),
        ev(T.SYSTEM_INIT, None, request_id="req_abc123"),
        ev(T.USER, "What is 2+2?"),
        ev(T.THINKING_DELTA, "Let me think about this...", timestamp_ms=1705123456789),
        ev(T.THINKING_COMPLETED, None),
        ev(T.ASSISTANT_DELTA, "The answer", timestamp_ms=1705123456789),
        ev(T.ASSISTANT, "The answer is 4."),
        ev(T.TOOL_CALL_STARTED, None, ToolKind.SHELL, ToolStatus.RUNNING,
           call_id="call_abc123", command="ls -la"),
        ev(T.TOOL_CALL_COMPLETED, None, ToolKind.SHELL, ToolStatus.SUCCEEDED,
           call_id="call_abc123", exit_code=0, duration_ms=156,
           output="total 32\ndrwxr-xr-x 4 user user 4096 ..."),
        ev(T.RESULT_SUCCESS, "The answer is 4."),
        ev(T.RESULT_ERROR, "Request timed out"),
        ev(T.SYSTEM_INIT, None, session_id="abc-123"),
        ev(T.USER, "What is 2+2?"),
        ev(T.THINKING_DELTA, "Simple arithmetic..."),
        ev(T.THINKING_COMPLETED, None),
        ev(T.ASSISTANT_DELTA, "The "),
        ev(T.ASSISTANT_DELTA, "answer "),
        ev(T.ASSISTANT_DELTA, "is 4."),
        ev(T.ASSISTANT, "The answer is 4."),
        ev(T.RESULT_SUCCESS, "The answer is 4.", duration_ms=1523),
    ],
}


def seed_file(prefix: str) -> Path:
    (path,) = SEEDS.glob(f"{prefix}_*.txt")
    return path


CASES = [
    pytest.param(prefix, i, example, expected, id=f"seed{prefix}-{i:02d}")
    for prefix, expectations in EXPECTED.items()
    for i, (example, expected) in enumerate(
        zip(extract(seed_file(prefix)), expectations, strict=True)
    )
]


def test_every_example_has_an_expectation() -> None:
    for prefix, expectations in EXPECTED.items():
        assert len(extract(seed_file(prefix))) == len(expectations), prefix


@pytest.mark.parametrize(("prefix", "index", "example", "expected"), CASES)
def test_seed_example(prefix: str, index: int, example: str, expected: E) -> None:
    etype, text, kind, status, extra = expected
    event = parse_event(example)
    assert event.type is etype
    if text is not None:
        assert event.text == text
    try:
        parsed = orjson.loads(example)
    except orjson.JSONDecodeError:
        parsed = None
    if parsed is None:
        assert etype is EventType.RAW
        assert event.raw == example  # the original line is kept
        assert event.data == {"type": "raw", "data": example}
    else:
        assert event.data == parsed  # the complete object, intact
    if kind is not None:
        tc = event.tool_call
        assert tc is not None
        assert tc.kind is kind
        assert tc.status is status
    for key, value in extra.items():
        if key in ("session_id", "timestamp_ms", "request_id", "model_call_id"):
            assert getattr(event, key) == value, key
        elif key == "duration_ms" and event.tool_call is None:
            assert event.data["duration_ms"] == value
        else:
            tc = event.tool_call
            assert tc is not None
            assert getattr(tc, key) == value, key
    # lossless JSON round trip
    from cursor_agent_api import AgentEvent

    assert AgentEvent.from_dict(event.to_dict()) == event


def lines_of(prefix: str, start: int, stop: int) -> list[str]:
    return extract(seed_file(prefix))[start:stop]


def test_seed000_sequence_reassembles_2025_fragments() -> None:
    t = Transcript.from_lines(lines_of("000", 7, 17))
    t.close()
    assert t.text == t.result_text == "Je vais lire le fichier README.md et te faire un résumé"
    calls = t.tool_calls
    assert [(c.kind, c.status) for c in calls] == [
        (ToolKind.READ, ToolStatus.SUCCEEDED),
        (ToolKind.WRITE, ToolStatus.SUCCEEDED),
    ]
    assert calls[0].content == "# Projet\n\nCeci est un projet d'exemple..."
    assert t.session_id == "c6b62c6f-7ead-4fd6-9922-e952131177ff"


def test_seed002_flow_pairs_envelope_tool_calls() -> None:
    t = Transcript.from_lines(lines_of("002", 9, 18))
    t.close()
    write, shell = t.tool_calls
    # the completion names no kind: the started event's kind and args are kept
    assert (write.call_id, write.kind, write.status) == (
        "write-file-1", ToolKind.WRITE, ToolStatus.SUCCEEDED)
    assert write.args == {"path": "hello_world.py", "contents": "print('Hello, World!')"}
    # the started line is malformed in the seed: the completion alone still makes a call
    assert (shell.call_id, shell.status, shell.exit_code) == ("shell-1", ToolStatus.SUCCEEDED, 0)
    assert t.raw_lines == 1
    assert t.text == (
        "I'll create a simple Hello World program in Python for you."
        "I've created a Hello World program and executed it. The output is 'Hello, World!'"
    )
    assert t.success


def test_seed004_sequence_partial_output_not_doubled() -> None:
    t = Transcript.from_lines(lines_of("004", 11, 20))
    t.close()
    assert t.text == t.result_text == "The answer is 4."
    assert t.thinking == ["Simple arithmetic..."]
    assert t.session_id == "abc-123"


def test_seed004_flat_tool_calls_pair() -> None:
    started, completed = lines_of("004", 7, 9)
    t = Transcript.from_lines([started, completed])
    (call,) = t.tool_calls
    assert call.kind is ToolKind.SHELL and call.name == "Shell"
    assert call.args == {"command": "ls -la", "description": "List directory contents"}
    assert call.status is ToolStatus.SUCCEEDED and call.duration_ms == 156
