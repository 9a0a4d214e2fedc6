"""The server folds each live agent event once (issue 13 point 1).

The client's stream folds every event as it reads it (:attr:`AsyncStreamingResponse.transcript`)
and hands it on with what it changed (``with_changes()``); the server stores those changes and
never folds the event again. A run's fold is rebuilt from its stored records only where the
live changes are gone (a restart, another process, the WebSocket's replay), and that rebuilt
fold closes and describes the turn as the live one does.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from server_helpers import all_events, new_chat, wait_run

from cursor_agent_api.protocol import AgentEvent, Transcript, parse_event
from cursor_agent_api.server.turns import RunFold

RECORDINGS = sorted((Path(__file__).parents[1] / "data" / "cursor-real").glob("*.ndjson"))



@pytest.fixture
def adds(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times ``Transcript.add`` folded an event, by the event's line (while the test runs)."""
    counts: Counter[str] = Counter()
    add = Transcript.add

    def counting(self: Transcript, event: AgentEvent) -> Any:
        line = event.line if event.line is not None else event.raw
        counts[line.decode() if isinstance(line, bytes) else str(line)] += 1
        return add(self, event)

    monkeypatch.setattr(Transcript, "add", counting)
    return counts


def _agent_raws(c: Any, chat_id: str) -> list[str]:
    lines: list[str] = []
    after = 0
    while True:
        body = c.get(f"/api/chats/{chat_id}/events",
                     params={"after_seq": after, "limit": 1000, "include_raw": True}).json()
        lines += [e["raw"] for e in body["events"] if e["source"] == "agent"]
        after = body["next_after_seq"]
        if not body["has_more"]:
            return lines


@pytest.mark.parametrize("recording", [RECORDINGS[1], RECORDINGS[2]], ids=["02", "03"])
def test_each_live_event_is_folded_once(make_inproc: Any, adds: Counter[str], recording: Path) -> None:
    server = make_inproc(sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(recording)})
    with server.client() as c:
        chat = new_chat(c, stream_partial_output=True, force=True)
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "go"}).json()
        assert wait_run(c, run["id"])["status"] == "succeeded"
        folded = dict(adds)  # before the reads below (they fold nothing, but be exact)
        raws = _agent_raws(c, chat["id"])
    assert len(raws) > 5
    per_event = Counter(folded.get(raw, 0) for raw in raws)
    assert per_event == Counter({1: len(raws)}), per_event


def test_each_live_event_of_an_acp_chat_is_folded_once(make_inproc: Any, adds: Counter[str]) -> None:
    server = make_inproc()
    with server.client() as c:
        chat = new_chat(c, transport="acp", force=True)
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "run `echo once`"}).json()
        assert wait_run(c, run["id"])["status"] == "succeeded"
        total = sum(adds.values())
        agent = [e for e in all_events(c, chat["id"]) if e["source"] == "agent"]
    assert len(agent) > 3
    assert total == len(agent)


def _lines(path: Path) -> list[AgentEvent]:
    return [parse_event(line) for line in path.read_bytes().splitlines() if line.strip()]


def _turn_of(t: Transcript) -> dict[str, Any]:
    return {"session_id": t.session_id, "request_id": t.request_id, "model": t.model, "cwd": t.cwd}


@pytest.mark.parametrize("recording", RECORDINGS, ids=[p.name[:2] for p in RECORDINGS])
def test_the_fold_of_the_changes_describes_and_closes_the_turn_as_the_transcript(recording: Path) -> None:
    """Cut anywhere, a run's fold taken from the stream's changes knows the turn's fields and
    closes it (thinking closed, calls abandoned) exactly as the transcript that made them."""
    events = _lines(recording)
    for cut in sorted({1, len(events) // 3, len(events) // 2, len(events) - 2, len(events)}):
        t = Transcript(keep_events=False)
        fold = RunFold("c", "r")
        fold.take([(e, t.add(e)) for e in events[:cut]])
        turn = fold.turn()
        assert {k: turn[k] for k in ("session_id", "request_id", "model", "cwd")} == _turn_of(t)
        assert turn["errors"] == len(t.errors)
        assert fold.close() == t.close(), (recording.name, cut)
        assert fold.close() == ()  # once


def test_a_fold_taken_from_changes_holds_them_as_given() -> None:
    t = Transcript(keep_events=False, keep_content=False)
    fold = RunFold("c", "r")
    pairs = [(e, t.add(e)) for e in _lines(RECORDINGS[1])]
    batch = fold.take(pairs)
    assert all(got is want for got, (_, want) in zip(batch.changes, pairs, strict=True))
    assert [r.type for r in batch.records] == [e.type.value for e, _ in pairs]
