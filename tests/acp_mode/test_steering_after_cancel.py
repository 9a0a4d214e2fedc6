"""Once a turn is cancelled, every request of it is answered ``cancelled``: not only those a
callback would decide, but those a rule, the permission mode or a default (plans accepted,
questions skipped) would have answered (ACP.md §11.3; review of ACP facts, 2026-11-24,
finding 1). A build may still ask after ``session/cancel`` (§13 leaves it open)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from acp_fake import FakeAgent

from cursor_agent_api import CursorAgentClient
from cursor_agent_api.config import AgentConfig
from cursor_agent_api.permissions import Accept, Answer
from cursor_agent_api.protocol import EventType
from cursor_agent_api.protocol.acp_mapper import AcpMapper
from cursor_agent_api.runtime.acp_steering import SKIP_OPTION, Steering

_CANCELLED = {"outcome": {"outcome": "cancelled"}}
_OPTIONS = [{"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
            {"optionId": "allow-always", "name": "Allow always", "kind": "allow_always"},
            {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"}]
_RM = {"sessionId": "s1", "options": _OPTIONS,
       "toolCall": {"toolCallId": "c1", "kind": "execute", "title": "`rm -rf build`",
                    "rawInput": {"command": "rm -rf build"}}}
_QUESTION = {"toolCallId": "q", "title": "t", "questions": [
    {"id": "q1", "prompt": "Which?", "options": [{"id": "a", "label": "A"}]}]}
_FALLBACK = {"sessionId": "s1", "toolCall": {"toolCallId": "q", "title": "Which?", "kind": "other"},
             "options": [{"optionId": "a", "name": "A", "kind": "allow_once"},
                         {"optionId": SKIP_OPTION, "name": "Skip", "kind": "reject_once"}]}
_PLAN = {"toolCallId": "p", "name": "Rename", "plan": "# Rename", "todos": []}


def _cancelled_steering(**fields: Any) -> tuple[Steering, list[Any]]:
    events: list[Any] = []
    steering = Steering(AgentConfig(transport="acp", **fields), session_id="s1",
                        mapper=AcpMapper("s1"), emit=events.extend)
    steering.cancel_pending()
    return steering, events


@pytest.mark.parametrize("fields", [{"permission_mode": "allow"},
                                    {"allowed_tools": ["Shell(rm)"]},
                                    {"permission_mode": "read-only"},
                                    {"permission_mode": "deny"}])
def test_a_permission_a_rule_or_the_mode_would_answer_is_cancelled(fields: dict[str, Any]) -> None:
    steering, events = _cancelled_steering(**fields)
    assert asyncio.run(steering.permission(0, _RM)) == _CANCELLED
    decisions = [e.data.get("decision") for e in events if e.type is EventType.INTERACTION_QUERY]
    assert decisions[-1] == "cancelled", "the turn shows the request and its cancelled answer"


def test_a_plan_without_on_plan_is_not_accepted() -> None:
    steering, _ = _cancelled_steering()
    assert asyncio.run(steering.plan(1, _PLAN)) == _CANCELLED


def test_a_plan_with_on_plan_is_cancelled_without_asking_it() -> None:
    asked: list[Any] = []
    steering, _ = _cancelled_steering(on_plan=lambda plan: asked.append(plan) or Accept())
    assert asyncio.run(steering.plan(1, _PLAN)) == _CANCELLED and not asked


@pytest.mark.parametrize("on_question", [None, lambda request: Answer("a")])
def test_a_question_is_cancelled_not_skipped(on_question: Any) -> None:
    steering, _ = _cancelled_steering(on_question=on_question)
    assert asyncio.run(steering.question(2, _QUESTION)) == _CANCELLED
    assert asyncio.run(steering.permission(3, _FALLBACK)) == _CANCELLED


def test_before_the_cancel_the_rules_answer_as_usual() -> None:
    steering = Steering(AgentConfig(transport="acp", permission_mode="allow"), session_id="s1")
    assert asyncio.run(steering.permission(0, _RM)) == {
        "outcome": {"outcome": "selected", "optionId": "allow-once"}}
    assert asyncio.run(steering.plan(1, _PLAN)) == {"outcome": {"outcome": "accepted"}}


def test_a_build_asking_after_the_cancel_is_refused_under_permission_mode_allow(
        fake: FakeAgent) -> None:
    # the fake asks to run `rm -rf build` after session/cancel, then answers the prompt
    config = fake.config(permission_mode="allow", env={"FAKE_ACP_CANCEL_ASKS": "1"})
    with CursorAgentClient(config) as client:
        stream = client.query_stream("slow")
        for event in stream:
            if event.type is EventType.ASSISTANT_DELTA:
                stream.cancel()
        result = stream.wait()
    assert result.cancelled
    assert "rm -rf build after the cancel: cancelled" in (result.result or "")
