"""An MCP permission request's arguments, the fenced JSON block Cursor writes (ACP.md §7), are
read whatever their strings hold: a Markdown fence inside an argument does not end the block;
a block that is not one JSON object gives no arguments, never an exception."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from cursor_agent_api.protocol import Transcript
from cursor_agent_api.protocol.acp_mapper import AcpMapper

SID = "s1"


def _request(text: str) -> dict[str, Any]:
    return {"sessionId": SID, "options": [{"optionId": "allow-once", "kind": "allow_once"}],
            "toolCall": {"toolCallId": "c1", "kind": "other", "title": "notes-save_note: save_note",
                         "content": [{"type": "content",
                                      "content": {"type": "text", "text": text}}]}}


def _asked_args(text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the permission request's args, the folded call's args) for a request whose content
    is ``text``."""
    m = AcpMapper(SID)
    events = m.permission_request(0, _request(text))
    events += m.update({"sessionUpdate": "tool_call_update", "toolCallId": "c1",
                        "status": "completed", "rawOutput": {"success": True}})
    for event in events:
        orjson.dumps(event.data)  # every event can still be written
    query = next(e for e in events if e.data.get("type") == "interaction_query")
    t = Transcript()
    for event in events:
        t.add(event)
    (call,) = t.tool_calls
    return query.data["query"]["permissionRequestQuery"]["args"], call.args


@pytest.mark.parametrize("value", [
    "see ```python\nprint(1)\n``` above",
    "```",
    "a ``` b ```json\n{} ```",
    "trailing fence ```",
])
def test_arguments_holding_a_fence_are_read_whole(value: str) -> None:
    args = {"text": value, "n": 1}
    text = "```json\n" + orjson.dumps(args).decode() + "\n```"
    asked, folded = _asked_args(text)
    assert asked.get("args") == args  # what the permission callback is shown
    assert folded.get("args") == args
    assert folded.get("toolName") == "save_note" and folded.get("providerIdentifier") == "notes"


def test_a_pretty_printed_block_without_a_language_is_read() -> None:
    args = {"text": "x ``` y", "items": [1, 2]}
    text = "Arguments:\n```\n" + orjson.dumps(args, option=orjson.OPT_INDENT_2).decode() + "\n```\n"
    asked, folded = _asked_args(text)
    assert asked.get("args") == folded.get("args") == args


@pytest.mark.parametrize("text", [
    "```json\n{\"text\": \"unterminated\n```",          # not JSON
    "```json\n{\"a\": 1}",                                # no closing fence
    "```json\n{\"a\": 1} and more\n```",                  # something after the value
    "```json\n[1, 2]\n```",                               # not an object
    "```json\n" + "[" * 100_000 + "\n```",                # deeper than any decoder goes
    "```json\n{\"n\": " + "9" * 5000 + "}\n```",          # a number no decoder keeps
    "no block at all",
    "```json\n",
])
def test_a_block_that_is_not_one_object_gives_no_arguments(text: str) -> None:
    asked, folded = _asked_args(text)
    assert "args" not in folded and folded.get("toolName") == "save_note"
    assert set(asked) == {"toolName", "providerIdentifier", "toolCallId"}


class _CountingScanner:
    """The mapper's JSON scanner, counting the values it was asked to read."""

    def __init__(self) -> None:
        import json

        self.calls = 0
        self._decoder = json.JSONDecoder()

    def raw_decode(self, text: str, start: int) -> tuple[Any, int]:
        self.calls += 1
        return self._decoder.raw_decode(text, start)


@pytest.mark.parametrize("hostile", ["```\n" * 50_000, "```\n{" * 50_000, '```json\n{"a":1}x' * 20_000])
def test_hostile_text_is_read_a_bounded_number_of_times(
        hostile: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each fence opening was read from its start to where the JSON failed, and each failure
    counted the lines before it: time grew with the square of the text (review 42: 800 KB of
    bare fences took 138 s, on the event loop). Only an opening followed by ``{`` is read, and
    a few at most: the block Cursor writes is the first."""
    from cursor_agent_api.protocol import acp_mapper

    scanner = _CountingScanner()
    monkeypatch.setattr(acp_mapper, "_SCANNER", scanner)
    assert acp_mapper.fenced_object(hostile) is None
    assert scanner.calls <= acp_mapper.FENCES_READ
    block = '```json\n{"q": 1}\n```'
    assert acp_mapper.fenced_object(block + "```\n" * 1000) == {"q": 1}
    assert acp_mapper.fenced_object("```\n" * 1000 + block) == {"q": 1}  # (no "{": not read)
    bad = "```json\n{oops\n```\n"
    assert acp_mapper.fenced_object(bad * (acp_mapper.FENCES_READ - 1) + block) == {"q": 1}
    assert acp_mapper.fenced_object(bad * acp_mapper.FENCES_READ + block) is None  # past them
