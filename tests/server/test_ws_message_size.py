"""Every WebSocket message is at most MAX_MESSAGE_BYTES (audit 10, F4: a shell call with 1 MB of
stdout was sent as one 1.25 MB message, a 256 KiB copy of the output in the record's payload and
each of its ``changes`` (``call.result``, ``call.output``, ``view``): Python's ``websockets`` at
its default max_size (1 MiB) closed with 1009, and got the same record again on each reconnect
with ``after_seq``: it could never follow the chat past it)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from inproc import InProcServer
from server_helpers import new_chat, wait_run
from websockets.asyncio.client import connect

from cursor_agent_api.server.log import MAX_MESSAGE_BYTES
from cursor_agent_api.sim import wire

SID = "0ed36493-01b3-4744-b712-a8eabfff89e1"
BIG = "line of a big file\n" * 55_000  # ~1 MB


def _script(path: Path) -> Path:
    """A run with one shell call whose stdout and stderr are ~1 MB each (with its
    interleavedOutput: ~2 MB), the payload alone over the bound with 256 KiB fields."""
    args = wire.shell_args("cat big.txt", "t0", conversation_id=SID, request_id="r", description="Cat")
    times = {"model_call_id": "m", "started_at_ms": 1, "timestamp_ms": 1}
    outcome = wire.shell_outcome("cat big.txt", "/ws", 0, BIG, BIG.upper(), 5)
    with path.open("wb") as f:
        f.write(wire.encode(wire.system_init(SID, "/ws", "GPT-5 Mini")))
        f.write(wire.encode(wire.tool_call_started(SID, "t0", "shellToolCall", args, **times)))
        f.write(wire.encode(wire.tool_call_completed(SID, "t0", "shellToolCall", outcome, args=args,
                                                     completed_at_ms=2, **times), checked=False))
        f.write(wire.encode(wire.result_success(SID, "r", "done", 1, wire.usage(1, 1))))
    return path


async def _follow(url: str, until: Callable[[dict[str, Any]], bool]) -> list[tuple[int, dict[str, Any]]]:
    """The messages (size, message) up to the first ``until`` accepts, read by a client with the
    websockets library's default max_size (1 MiB)."""
    got: list[tuple[int, dict[str, Any]]] = []
    async with connect(url) as ws:
        while True:
            text = await asyncio.wait_for(ws.recv(), 120)
            assert isinstance(text, str)
            msg = orjson.loads(text)
            got.append((len(text.encode()), msg))
            if until(msg):
                return got


def test_no_message_is_over_the_bound_live_or_replayed(
    make_inproc: Callable[..., InProcServer], tmp_path: Path
) -> None:
    script = _script(tmp_path / "big.ndjson")
    server = make_inproc(sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(script)})
    with server.client() as c:
        chat = new_chat(c)
    url = server.url.replace("http://", "ws://") + f"/api/chats/{chat['id']}/stream?token={server.token}"

    async def live() -> list[tuple[int, dict[str, Any]]]:
        follower = asyncio.ensure_future(_follow(
            url, lambda m: m["op"] == "event" and m["event"]["type"] == "run"
            and m["event"]["subtype"] in ("succeeded", "failed")))
        await asyncio.sleep(1)  # (subscribed; records sent after are live or replayed alike)
        with server.client() as c:
            run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "go"}).json()
            assert (await asyncio.to_thread(wait_run, c, run["id"]))["status"] == "succeeded"
        return await follower

    for got in (asyncio.run(live()), asyncio.run(_follow(url, lambda m: m["op"] == "live"))):
        sizes = [size for size, _ in got]
        assert max(sizes) <= MAX_MESSAGE_BYTES, sizes
        changes = [ch for _, m in got for ch in m.get("changes", ()) if ch["kind"] == "tool_call_changed"]
        view = changes[-1]["view"]
        # the page's card: what was cut is listed, and its beginning is there
        assert view["status"] == "succeeded" and "stdout" in view["cut"], view["cut"]
        assert len(view["stdout"]) >= 16 * 1024 and BIG.startswith(view["stdout"])
        # the record says what was cut: the whole is a REST call away
        events = [m["event"] for _, m in got if m["op"] == "event"]
        done = [e for e in events if e["type"] == "tool-call-completed"]
        assert len(done) == 1, [(e["type"], e["subtype"]) for e in events]
        # (its view alone is over the bound: the payload, which the page does not read, goes)
        assert done[0]["payload"] == {}, done[0]["payload"]
        [whole] = done[0]["truncated"]
        assert whole["field"] == "/payload" and whole["bytes"] > 2 * len(BIG), whole
    assert MAX_MESSAGE_BYTES < 1024 * 1024


def test_a_record_of_many_small_values_is_sent_within_the_bound() -> None:
    # nothing to cut in 200,000 short strings: the payload goes, noted, and REST has it
    from cursor_agent_api.server.log import record_message
    from cursor_agent_api.server.store import EventRecord

    files = [f"src/f{i}.py" for i in range(200_000)]
    rec = EventRecord(7, "c", "r", 0, "server", "x", None, {"files": files}, None)
    change = {"kind": "tool_call_changed", "index": 0, "call": {"files": files},
              "view": {"files": files[:10], "cut": []}}
    text = record_message(rec, [change])
    assert len(text.encode()) <= MAX_MESSAGE_BYTES
    msg = orjson.loads(text)
    assert msg["event"]["payload"] == {} and msg["event"]["truncated"][0]["field"] == "/payload"
    assert msg["changes"] == [{"kind": "tool_call_changed", "index": 0,
                               "view": {"files": files[:10], "cut": []}}]


def _tool_message(index: int, tc: Any, data: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
    from cursor_agent_api.protocol.changes import ToolCallChanged
    from cursor_agent_api.server.store import EventRecord
    from cursor_agent_api.server.turns import changes_json

    payload = {"type": "tool_call", "data": data}
    rec = EventRecord(9, "c", "r", 0, "agent", "tool_call", "completed", payload, None)
    return rec, changes_json((ToolCallChanged(index, tc),), rec, 256 * 1024)


def test_an_appended_text_is_sent_whole_its_payload_copies_cut_first() -> None:
    # review 45: a text of 200,000 characters is in payload.data, payload.text and its
    # text_appended change; the bound cut the change (the page appends it as is: text lost)
    from cursor_agent_api.protocol.changes import TextAppended, ThinkingAppended
    from cursor_agent_api.server.log import record_message
    from cursor_agent_api.server.store import EventRecord
    from cursor_agent_api.server.turns import changes_json

    text = "x" * 200_000
    message = {"role": "assistant", "content": [{"type": "text", "text": text}]}
    data = {"type": "assistant", "message": message}
    rec = EventRecord(7, "c", "r", 0, "agent", "assistant", None, {"type": "assistant", "data": data}, None)
    for change in (TextAppended(0, text), ThinkingAppended(0, text)):
        message = record_message(rec, changes_json((change,), rec, 256 * 1024))
        assert len(message.encode()) <= MAX_MESSAGE_BYTES
        msg = orjson.loads(message)
        assert msg["changes"][0]["text"] == text and "bytes" not in msg["changes"][0]
        # the payload's copies (which the page does not read) are cut instead, and say so
        assert len(msg["event"]["payload"]["text"]) < len(text)
        assert {"field": "/payload/text", "bytes": len(text)} in msg["event"]["truncated"]


def test_hostile_shapes_are_sent_within_the_bound() -> None:
    # review 45: 2,000 deep paths (691,625 bytes) or grep matches (1,614,510 bytes): nothing to
    # cut in them, and the old fallback kept the view's lists and every truncated entry
    from cursor_agent_api.protocol.tools import ToolCall, ToolKind, ToolStatus
    from cursor_agent_api.server.log import record_message
    from cursor_agent_api.server.store import EventRecord

    files = [f"/work/{'very-long-package-name/' * 10}src/module_{i:05d}.ts" for i in range(2000)]
    glob = ToolCall("c1", ToolKind.GLOB, "globToolCall", {"globPattern": "**"}, status=ToolStatus.SUCCEEDED,
                    result={"success": {"files": files}})
    hits = [{"file": f"/work/{'d' * 290}/f{i:04d}.js", "matches": [{"lineNumber": 1, "content": "m" * 300}]}
            for i in range(2000)]
    grep_result = {"success": {"workspaceResults": {"/w": {"content": {"matches": hits}}}}}
    grep = ToolCall("c2", ToolKind.GREP, "grepToolCall", {"pattern": "m"}, status=ToolStatus.SUCCEEDED,
                    result=grep_result)
    todos = [{"content": "t" * 250, "status": "pending", "id": str(i)} for i in range(5000)]
    todo = ToolCall("c3", ToolKind.TODOS, "updateTodosToolCall", {"todos": todos},
                    status=ToolStatus.SUCCEEDED)
    cases = {
        "glob": _tool_message(0, glob, {"tool_call": {"globToolCall": {"result": glob.result}}}),
        "grep": _tool_message(1, grep, {"tool_call": {"grepToolCall": {"result": grep_result}}}),
        "todos": _tool_message(2, todo, {"tool_call": {"updateTodosToolCall": {"args": {"todos": todos}}}}),
    }
    long_keys = {("k" * 250) + str(i): i for i in range(10_000)}
    cases["long keys"] = (EventRecord(3, "c", "r", 0, "agent", "x", None, long_keys, None), [])
    cases["long keys, a run"] = (EventRecord(3, "c", "r", 0, "server", "run", "queued", long_keys, None), [])
    small = {"v": list(range(300_000))}
    cases["small values, changes"] = (EventRecord(4, "c", "r", 0, "agent", "x", None, small, None),
                                      [{"kind": "segment_closed", "segment": i} for i in range(50_000)])
    cases["long type"] = (EventRecord(5, "c", "r", 0, "agent", "t" * 600_000, None, {}, None), [])
    for name, (rec, changes) in cases.items():
        text = record_message(rec, changes)
        assert len(text.encode()) <= MAX_MESSAGE_BYTES, name
        msg = orjson.loads(text)
        if name in ("glob", "grep", "todos"):
            view = msg["changes"][0]["view"]
            assert "output" in view["cut"], (name, view["cut"])  # the page offers Show all
            assert msg["event"]["payload"] == {} and len(msg["event"]["truncated"]) == 1, name
            whole = len(orjson.dumps(rec.to_dict()["payload"]))
            assert msg["event"]["truncated"] == [{"field": "/payload", "bytes": whole}], name
        if name in ("glob", "grep"):  # as many items as fit, each whole
            items = view.get("files") or view.get("matches")
            assert len(items) >= 400, (name, len(items))
            assert items[0] in (files[0], {"file": hits[0]["file"], "line": 1, "text": "m" * 300}), name


def test_a_message_over_the_bound_is_serialized_a_bounded_number_of_times(monkeypatch: Any) -> None:
    # review 45: up to ~12 serializations of the whole message per record, on the event loop
    from cursor_agent_api.protocol.tools import ToolCall, ToolKind, ToolStatus
    from cursor_agent_api.server import log

    hits = [{"file": f"/work/{'d' * 290}/f{i:04d}.js", "matches": [{"lineNumber": 1, "content": "m" * 300}]}
            for i in range(2000)]
    result = {"success": {"workspaceResults": {"/w": {"content": {"matches": hits}}}}}
    grep = ToolCall("c2", ToolKind.GREP, "grepToolCall", {"pattern": "m"}, status=ToolStatus.SUCCEEDED,
                    result=result)
    rec, changes = _tool_message(1, grep, {"tool_call": {"grepToolCall": {"result": result}}})
    whole = len(log._message(rec, changes))
    written: list[int] = []
    real = log.json_bytes

    def counting(value: Any) -> bytes:
        out = real(value)
        written.append(len(out))
        return out

    monkeypatch.setattr(log, "json_bytes", counting)
    assert len(log.record_message(rec, changes).encode()) <= MAX_MESSAGE_BYTES
    # the whole message twice (as it is, then as sent), its parts about once each
    assert len([n for n in written if n >= whole * 0.8]) <= 1, (whole, str(written))
    assert sum(written) <= 3 * whole, (whole, str(written))


def test_a_streamed_piece_of_escapes_is_cut_to_what_fits_not_to_the_last_form() -> None:
    """A control character is six bytes in JSON: the appended text was cut to a sixth of its
    room at best, and a piece the store had cut already was counted by its UTF-8 bytes, so
    the message went to the last form: 256 characters of a 300,000-character piece, where
    87,304 fit (review 48)."""
    import orjson

    from cursor_agent_api.protocol.changes import TextAppended
    from cursor_agent_api.server.log import record_message
    from cursor_agent_api.server.store import EventRecord, cut_record
    from cursor_agent_api.server.turns import changes_json

    for text in ("\x00" * 300_000, "\x1b[32mPASS\x1b[0m " * 40_000, "é" * 300_000):
        rec = cut_record(EventRecord(3, "c", "r", 0, "agent", "assistant", None, {"text": text}, None),
                         256 * 1024)
        sent = record_message(rec, changes_json((TextAppended(0, text),), rec, 256 * 1024))
        change = orjson.loads(sent)["changes"][0]
        assert len(sent.encode()) <= MAX_MESSAGE_BYTES
        # at least half of what the room holds of this text
        per_char = (len(orjson.dumps(text)) - 2) / len(text)
        assert len(change["text"]) >= MAX_MESSAGE_BYTES / per_char / 2, (per_char, len(change["text"]))
        assert change["bytes"] == len(text.encode()) and change["seq"] == 3
