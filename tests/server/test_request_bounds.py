"""What the agent asks is bounded when it arrives so that everything shown can be answered
(docs/web.md, "ACP chats"), and an answer names only what the agent offered."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from cursor_agent_api.permissions import Question, QuestionOption, QuestionRequest
from cursor_agent_api.server.requests import (
    MAX_ID_CHARS,
    MAX_OPTIONS,
    AnswerIn,
    asked_questions,
    parse_answer,
)

ONCE_AND_REJECT = {"options": [{"id": "a", "name": "Allow once", "kind": "allow_once"},
                               {"id": "r", "name": "Reject", "kind": "reject_once"}]}


def test_a_permission_is_answered_only_with_what_the_agent_offered() -> None:
    assert parse_answer("permission", ONCE_AND_REJECT, AnswerIn(decision="allow-once")) == {
        "decision": "allow-once"}
    with pytest.raises(ValueError, match=r"did not offer \"allow-always\".*allow-once, reject"):
        parse_answer("permission", ONCE_AND_REJECT, AnswerIn(decision="allow-always"))
    reject_only = {"options": [{"id": "r", "name": "Reject", "kind": "reject_once"}]}
    with pytest.raises(ValueError, match=r"it offers reject$"):
        parse_answer("permission", reject_only, AnswerIn(decision="allow-once"))
    # Reject is always taken (no reject offered: the agent hears "cancelled"); a record
    # without options (stored before they were) takes every decision
    assert parse_answer("permission", {"options": []}, AnswerIn(decision="reject"))["decision"] == "reject"
    assert parse_answer("permission", {}, AnswerIn(decision="allow-always"))["decision"] == "allow-always"


def test_every_question_shown_can_be_answered_and_the_agent_hears_its_own_ids() -> None:
    yes = (QuestionOption("y", "Yes"),)
    long_id = "x" * (MAX_ID_CHARS + 1)
    asked = asked_questions(QuestionRequest("s", "t", [
        Question("", "no id", yes), Question("d", "dup 1", yes),
        Question("d", "dup 2", (QuestionOption("n", "No"), QuestionOption("n", "No again"))),
        Question(long_id, "long", tuple(QuestionOption(f"o{i}", "O") for i in range(MAX_OPTIONS + 5))),
    ]))
    shown = asked.info["questions"]
    ids = [q["id"] for q in shown]
    assert len(set(ids)) == len(ids) and all(0 < len(i) <= MAX_ID_CHARS for i in ids)
    assert [o["id"] for o in shown[2]["options"]] == ["n", "o2"]
    assert len(shown[3]["options"]) == MAX_OPTIONS and shown[3]["options_offered"] == MAX_OPTIONS + 5
    body = AnswerIn(answers=[{"question_id": q["id"], "option_ids": [o["id"] for o in q["options"]][:1]}
                             for q in shown])  # every shown id fits the answer's bounds
    fields = parse_answer("question", asked.info, body)
    assert asked.agent_answer(fields["answers"]) == {"": ["y"], "d": ["y", "n"], long_id: ["o0"]}


def test_an_option_id_longer_than_any_shown_is_refused() -> None:
    with pytest.raises(ValidationError):
        AnswerIn(answers=[{"question_id": "q", "option_ids": ["o" * (MAX_ID_CHARS + 1)]}])
