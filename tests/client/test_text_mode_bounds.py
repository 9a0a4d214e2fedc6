"""Text mode (``output_format="text"``) keeps stdout within bounds, as the other formats do.

The turn's result in text mode is stdout itself, kept beside the ``RAW`` events: it grew with
whatever the agent printed, whatever ``max_line_bytes`` or ``keep_content`` said. Now the
kept copy is bounded like a result's text in the other formats (one line of at most
``max_line_bytes``): past it, the turn fails with a ``ProtocolError`` that says so, the result
holds the first ``max_line_bytes`` bytes, and every line still arrives as its ``RAW`` event.
With ``keep_content=False`` no copy is kept at all (the events carry the lines).
"""

from __future__ import annotations

import json

from cursor_agent_api import EventType, ProtocolError
from cursor_agent_api.runtime.commands import run_command

CHAT = "8b72ae6d-ab42-4854-991e-6ecf580e66c2"
LINES = [f"line {i:04d} " + "x" * 990 for i in range(64)]  # 64 lines of 1,000 bytes
ANSWER = "\n".join(LINES)


def _script(tmp_path, result: str):
    path = tmp_path / "long.ndjson"
    path.write_text(
        f'{{"type":"system","subtype":"init","session_id":"{CHAT}","cwd":"/w"}}\n'
        + '{"type":"result","subtype":"success","is_error":false,"result":'
        + json.dumps(result) + f',"session_id":"{CHAT}"}}\n')
    return path


def test_text_output_past_max_line_bytes_fails_the_turn_and_keeps_its_start(
        sim, run_stream, tmp_path):
    limit = 16 * 1024
    turn = run_stream(sim(output_format="text", script=_script(tmp_path, ANSWER),
                          max_line_bytes=limit), "hi")
    r = turn.result
    assert not r.success and isinstance(r.exception, ProtocolError)
    assert f"max_line_bytes={limit}" in r.error
    assert len(r.result.encode()) == limit and (ANSWER + "\n").startswith(r.result)
    raw = [e.line.decode() for e in turn.events if e.type is EventType.RAW]
    assert raw == LINES  # every line still streamed
    errors = [e for e in turn.events if e.type is EventType.ERROR]
    assert len(errors) == 1 and errors[0].data.get("code") == "output_too_long"
    assert sum(e.is_result for e in turn.events) == 1


def test_text_output_within_max_line_bytes_is_kept_whole(sim, run_query, tmp_path):
    r = run_query(sim(output_format="text", script=_script(tmp_path, ANSWER),
                      max_line_bytes=len(ANSWER) + 1), "hi")
    assert r.success and r.result == ANSWER + "\n"


def test_text_mode_without_keep_content_keeps_no_copy(sim, run_stream, tmp_path):
    limit = 16 * 1024
    turn = run_stream(sim(output_format="text", script=_script(tmp_path, ANSWER),
                          max_line_bytes=limit, keep_content=False), "hi")
    r = turn.result
    assert r.success and r.result == "" and r.text == ""
    assert [e.line.decode() for e in turn.events if e.type is EventType.RAW] == LINES


def test_commands_read_their_output_even_without_keep_content(sim):
    import asyncio

    config = sim(keep_content=False)
    code, out, _ = asyncio.run(run_command(config, ["status"]))
    assert code == 0 and out.strip()
