"""CURSOR_AGENT_SIM_SCRIPT: replaying the real recordings through the real process."""

from __future__ import annotations

import time
from pathlib import Path

import orjson
import pytest

from cursor_agent_api.protocol import EventType, Transcript

from .conftest import Sim

DATA = Path(__file__).parent.parent / "data" / "cursor-real"
RECORDINGS = sorted(DATA.glob("*.ndjson"))
STREAM = ("-p", "--trust", "--output-format", "stream-json")


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.name[:2])
def test_replay_of_each_recording(sim: Sim, ws: Path, path: Path) -> None:
    recorded = Transcript.from_file(path)
    run = sim.run(*STREAM, "--stream-partial-output", "replayed", env={"CURSOR_AGENT_SIM_SCRIPT": str(path)})
    assert run.returncode == 0, run.err
    t = run.transcript
    assert t.success and t.text == t.result_text == recorded.result_text
    assert t.session_id != recorded.session_id
    assert {e.session_id for e in t.events if e.session_id} == {t.session_id}  # ids rewritten to this chat
    assert t.cwd == str(ws.resolve())
    assert [(c.kind, c.status) for c in t.tool_calls] == [(c.kind, c.status) for c in recorded.tool_calls]
    assert [c.call_id for c in t.tool_calls] == [c.call_id for c in recorded.tool_calls]
    assert recorded.session_id is not None and recorded.session_id.encode() not in run.stdout
    # the chat is saved: resuming it works
    again = sim.run(*STREAM, "--resume", t.session_id or "", "what did I ask before?").transcript
    assert 'you asked: "replayed"' in again.text


def test_replay_without_partial_output_drops_deltas(sim: Sim) -> None:
    path = next(DATA.glob("01-*.ndjson"))
    t = sim.run(*STREAM, "x", env={"CURSOR_AGENT_SIM_SCRIPT": str(path)}).transcript
    assert not [e for e in t.events if e.type is EventType.ASSISTANT_DELTA]
    assert t.text == t.result_text


def test_replay_speed_reproduces_gaps(sim: Sim, tmp_path: Path) -> None:
    script = tmp_path / "gaps.ndjson"
    lines = [
        {"type": "system", "subtype": "init", "session_id": "old", "cwd": "/x", "model": "Auto"},
        {"type": "thinking", "subtype": "delta", "text": "a", "session_id": "old", "timestamp_ms": 1000},
        {"type": "thinking", "subtype": "delta", "text": "b", "session_id": "old", "timestamp_ms": 1600},
        {"type": "result", "subtype": "success", "result": "", "session_id": "old", "timestamp_ms": 2200},
    ]
    script.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines) + b"not json \x1b[1m!\x1b[0m\n")
    env = {"CURSOR_AGENT_SIM_SCRIPT": str(script), "CURSOR_AGENT_SIM_SPEED": "1"}
    started = time.monotonic()
    run = sim.run(*STREAM, "x", env=env)
    assert run.returncode == 0
    assert time.monotonic() - started >= 1.2
    assert run.transcript.raw_lines == 1  # raw lines are replayed as they are


def test_missing_script(sim: Sim, tmp_path: Path) -> None:
    run = sim.run(*STREAM, "x", env={"CURSOR_AGENT_SIM_SCRIPT": str(tmp_path / "nope.ndjson")})
    assert run.returncode == 1 and "CURSOR_AGENT_SIM_SCRIPT" in run.err
