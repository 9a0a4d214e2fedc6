"""Requests from a broken or hostile ``agent acp`` are data: fields of the wrong type, and a
fenced JSON block too deep or with too big a number, get a normal answer and an event, never
a ``client error`` and a request nobody was asked about (review, 2026-11-24)."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from cursor_agent_api.config import AgentConfig
from cursor_agent_api.permissions import Allow, PermissionRequest, QuestionRequest, Skip
from cursor_agent_api.protocol.acp_mapper import AcpMapper
from cursor_agent_api.runtime.acp_steering import Steering


def _steer(**fields: Any) -> tuple[Steering, list[Any], list[Any]]:
    asked: list[Any] = []

    def can_use_tool(request: PermissionRequest) -> Allow:
        asked.append(request)
        return Allow()

    def on_question(request: QuestionRequest) -> Skip:
        asked.append(request)
        return Skip("no")

    events: list[Any] = []
    config = AgentConfig(transport="acp", can_use_tool=can_use_tool, on_question=on_question,
                         **fields)
    return Steering(config, session_id="s1", mapper=AcpMapper("s1"), emit=events.extend), events, asked


@pytest.mark.parametrize("options", [5, True, "allow-once", {"optionId": "allow-once"}])
def test_permission_options_that_are_not_a_list_get_an_answer(options: Any) -> None:
    steering, events, asked = _steer()
    params = {"sessionId": "s1", "options": options,
              "toolCall": {"toolCallId": "c1", "kind": "execute", "title": "`ls`",
                           "rawInput": {"command": "ls"}}}
    answer = asyncio.run(steering.permission(7, params))
    assert answer == {"outcome": {"outcome": "cancelled"}}  # no option to select
    assert len(asked) == 1 and events, "the callback was asked and the turn shows the request"


@pytest.mark.parametrize("questions", [3, "q", [{"id": "q1", "prompt": "Which?", "options": 7}]])
def test_questions_that_are_not_a_list_get_an_answer(questions: Any) -> None:
    steering, events, asked = _steer()
    answer = asyncio.run(steering.question(8, {"sessionId": "s1", "title": "t",
                                               "questions": questions}))
    assert isinstance(answer, dict) and events
    assert len(asked) == 1


@pytest.mark.parametrize("block", ["[" * 5000 + "]" * 5000, '{"a":' * 900 + "1" + "}" * 900,
                                   '{"n": 18446744073709551616}', '{"n": 1e999}'])
def test_an_mcp_requests_fenced_arguments_are_read_within_the_codecs_limits(block: str) -> None:
    # the arguments Cursor puts in a fenced JSON block: too deep, or a number orjson cannot
    # write back, they are left out (the request still goes to the callback, and every event
    # of the turn can be written as JSON)
    steering, events, asked = _steer()
    params = {"sessionId": "s1", "options": [{"optionId": "allow-once", "kind": "allow_once"}],
              "toolCall": {"toolCallId": "c1", "kind": "other", "title": "calc-add: add",
                           "content": [{"type": "content", "content": {
                               "type": "text", "text": f"```json\n{block}\n```"}}]}}
    answer = asyncio.run(steering.permission(9, params))
    assert answer == {"outcome": {"outcome": "selected", "optionId": "allow-once"}}
    assert len(asked) == 1 and asked[0].mcp_tool == "add"
    for event in events:
        orjson.dumps(event.data)


def _largest_bytes_held(root: object, limit: int = 100_000) -> int:
    """The largest bytes object reachable from ``root`` (a bounded walk of its references)."""
    import gc

    seen: set[int] = set()
    todo, largest = [root], 0
    while todo and len(seen) < limit:
        obj = todo.pop()
        if id(obj) in seen or isinstance(obj, type):
            continue
        seen.add(id(obj))
        if isinstance(obj, (bytes, bytearray)):
            largest = max(largest, len(obj))
            continue
        todo.extend(gc.get_referents(obj))
    return largest


def test_lines_that_are_not_messages_are_handed_on_not_kept() -> None:
    # an agent writing big lines that are not JSON-RPC (banners, a dump): each becomes a RAW
    # event (handed on), and the connection keeps none of them for its whole life
    from cursor_agent_api.runtime.acp_connection import AcpConnection

    seen: list[Any] = []
    conn = AcpConnection(["agent"], env=None, on_noise=seen.append)
    for i in range(8):
        conn.stdout_data(b"x" * (4 << 20) + str(i).encode() + b"\n")
    assert len(seen) == 8 and all(len(n.line) > 4 << 20 for n in seen)
    seen.clear()
    assert _largest_bytes_held(conn) < 1 << 20, "the connection keeps the agent's noise lines"
