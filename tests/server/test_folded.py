"""The server stores and serves folded chats (issue 13 point 2).

For every real recording, run through the server (the simulator replaying it): the stored
tool calls and text equal ``Transcript.to_result()`` of the lines the agent wrote, field by
field; the changes the WebSocket sends, live or replayed from any seq, rebuild the same.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from server_helpers import Server, is_run_end, new_chat, noting_live, wait_run, ws_collect

from cursor_agent_api.protocol import Transcript

RECORDINGS = sorted((Path(__file__).parents[1] / "data" / "cursor-real").glob("*.ndjson"))
CALL_FIELDS = (
    "call_id",
    "kind",
    "name",
    "status",
    "args",
    "result",
    "output",
    "description",
    "exit_code",
    "duration_ms",
)


def _agent_lines(c: Any, chat_id: str) -> list[str]:
    lines: list[str] = []
    after = 0
    while True:
        body = c.get(
            f"/api/chats/{chat_id}/events", params={"after_seq": after, "limit": 1000, "include_raw": True}
        ).json()
        lines += [e["raw"] for e in body["events"] if e["source"] == "agent"]
        after = body["next_after_seq"]
        if not body["has_more"]:
            return lines


def _apply(msgs: list[dict[str, Any]]) -> tuple[dict[int, str], dict[int, dict[str, Any]], list[int]]:
    """What a page shows, from the changes alone: segments by index, card views by index."""
    segments: dict[int, str] = {}
    cards: dict[int, dict[str, Any]] = {}
    seqs: list[int] = []
    for m in msgs:
        if m.get("op") != "event":
            continue
        seqs.append(m["seq"])
        for c in m.get("changes", ()):
            if c["kind"] == "text_appended":
                segments[c["segment"]] = segments.get(c["segment"], "") + c["text"]
            elif c["kind"] == "segment_replaced":
                segments[c["segment"]] = c["text"]
            elif c["kind"] in ("tool_call_opened", "tool_call_changed"):
                cards[c["index"]] = c["view"]
    return segments, cards, seqs


@pytest.mark.parametrize("recording", RECORDINGS, ids=[p.name[:2] for p in RECORDINGS])
def test_stored_turn_equals_the_transcript_of_the_recording(make_server: Any, recording: Path) -> None:
    server: Server = make_server(sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(recording)})
    with server.client() as c:
        chat = new_chat(c, stream_partial_output=True, force=True)

        async def live() -> list[dict[str, Any]]:
            subscribed = asyncio.Event()
            until = noting_live(is_run_end, subscribed)
            listener = asyncio.create_task(ws_collect(server.ws_url(chat["id"]), until))
            await asyncio.wait_for(subscribed.wait(), 60)
            r = await asyncio.to_thread(c.post, f"/api/chats/{chat['id']}/runs", json={"prompt": "go"})
            assert r.status_code == 202, r.text
            return await listener

        msgs = asyncio.run(live())
        run = next(m["event"]["payload"]["run"] for m in msgs if m.get("op") == "event")
        run = wait_run(c, run["id"])
        lines = _agent_lines(c, chat["id"])
        expected = Transcript.from_lines(lines)
        segments, thinking = expected.segments, expected.thinking
        result = expected.to_result()
        rows = c.get(f"/api/runs/{run['id']}/tool-calls").json()["tool_calls"]
        state = c.get(f"/api/chats/{chat['id']}/turns").json()

    # The recording and the stored lines hold the same calls (the simulator renames only the
    # session and the workspace).
    recorded = Transcript.from_file(recording).to_result()
    assert [t.call_id for t in result.tool_calls] == [t.call_id for t in recorded.tool_calls]
    assert result.text.replace(str(server.root / "project"), "") or not recorded.text

    # Tool calls: field by field, by index.
    assert [r["index"] for r in sorted(rows, key=lambda r: r["index"])] == list(range(len(result.tool_calls)))
    by_index = {r["index"]: r for r in rows}
    for i, call in enumerate(result.tool_calls):
        want = call.to_dict()
        got = by_index[i]
        for key in CALL_FIELDS:
            assert got[key] == want[key], (recording.name, i, key)

    # Text, thinking and the turn's fields, from the state the page opens with.
    (turn,) = state["runs"]
    assert state["last_seq"] == run["last_seq"]
    items = turn["items"]
    texts = sorted((i for i in items if i["type"] == "text"), key=lambda i: i["index"])
    assert [i["text"] for i in texts] == segments
    assert "".join(i["text"] for i in texts) == result.text
    assert all(i["closed"] for i in texts[:-1])
    blocks = sorted((i for i in items if i["type"] == "thinking"), key=lambda i: i["index"])
    assert [i["text"] for i in blocks] == thinking
    errors = [i["text"] for i in items if i["type"] == "error"]
    assert errors == expected.errors
    calls = [i for i in items if i["type"] == "tool_call"]
    assert [i["view"]["call_id"] for i in sorted(calls, key=lambda i: i["index"])] == [
        t.call_id for t in result.tool_calls
    ]
    assert [i["view"]["status"] for i in sorted(calls, key=lambda i: i["index"])] == [
        t.status.value for t in result.tool_calls
    ]
    assert turn["turn"]["session_id"] == result.session_id
    assert (turn["turn"]["result"] or {}).get("success", False) == result.success
    assert turn["run"]["usage"] == (result.usage.to_dict() if result.usage else None)

    # The changes sent live rebuild the same text and calls.
    shown, cards, seqs = _apply(msgs)
    assert seqs == list(range(1, len(seqs) + 1))
    assert [shown.get(i, "") for i in range(len(segments))] == segments
    assert [cards[i]["status"] for i in range(len(cards))] == [t.status.value for t in result.tool_calls]

    # Replayed from any seq, a record carries the same changes as it did live.
    live_changes = {m["seq"]: m.get("changes") for m in msgs if m.get("op") == "event"}
    for after in sorted({0, len(seqs) // 3, len(seqs) // 2, len(seqs) - 2}):
        replayed = asyncio.run(
            ws_collect(server.ws_url(chat["id"], after_seq=after), lambda m: m.get("op") == "live")
        )
        for m in replayed:
            if m.get("op") == "event":
                assert m.get("changes") == live_changes[m["seq"]], (after, m["seq"])


def test_a_run_stored_before_the_state_existed_is_folded_from_its_records(make_server: Any) -> None:
    """A database from before the folded state (runs.turn NULL, no turn_texts, tool calls
    keyed by id): the chat's state is folded from its records when it is first read."""
    from sqlalchemy import update

    from cursor_agent_api.server.models import runs, tool_calls, turn_texts
    from cursor_agent_api.server.store import Store

    server: Server = make_server(sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(RECORDINGS[1])})
    with server.client() as c:
        chat = new_chat(c, stream_partial_output=True)
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "go"}).json()
        wait_run(c, run["id"])
        before = c.get(f"/api/chats/{chat['id']}/turns").json()

        async def forget() -> None:
            store = Store(server.db_url)
            await store.start()
            async with store.transaction() as conn:
                await conn.execute(turn_texts.delete())
                await conn.execute(tool_calls.delete())
                await conn.execute(update(runs).values(turn=None))
            await store.close()

        asyncio.run(forget())
        assert c.get(f"/api/chats/{chat['id']}/tool-calls").json()["tool_calls"] == []
        after = c.get(f"/api/chats/{chat['id']}/turns").json()
        calls = c.get(f"/api/chats/{chat['id']}/tool-calls").json()["tool_calls"]
    assert after == before
    assert len(calls) == len([i for i in before["runs"][0]["items"] if i["type"] == "tool_call"]) > 0
