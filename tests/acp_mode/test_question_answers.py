"""What ``on_question``'s :class:`Answer` sends (audit 6, F8): an option's label stands for
that option when exactly one option of the question has it; a value that is neither an id nor
such a label, or a question the agent did not ask, skips the questions with the reason said
and a warning logged — never an empty answer sent as if the person had chosen nothing."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from cursor_agent_api.config import AgentConfig
from cursor_agent_api.permissions import Answer
from cursor_agent_api.runtime.acp_steering import SKIP_OPTION, Steering

_QUESTIONS = {"toolCallId": "q", "title": "Choose an approach", "questions": [
    {"id": "q1", "prompt": "Which approach?", "allowMultiple": False,
     "options": [{"id": "small", "label": "Small change"}, {"id": "full", "label": "Full rewrite"}]},
    {"id": "q2", "prompt": "Tests?", "allowMultiple": True,
     "options": [{"id": "unit", "label": "Unit"}, {"id": "e2e", "label": "Same"},
                 {"id": "load", "label": "Same"}]}]}
_FALLBACK = {"sessionId": "s1", "toolCall": {"toolCallId": "q", "title": "Go on?", "kind": "other"},
             "options": [{"optionId": "yes", "name": "Go ahead", "kind": "allow_once"},
                         {"optionId": SKIP_OPTION, "name": "Skip", "kind": "reject_once"}]}
_LOGGER = "cursor_agent_api.runtime.acp_steering"


def _ask(answer: Answer, params: dict[str, Any] = _QUESTIONS) -> dict[str, Any]:
    steering = Steering(AgentConfig(transport="acp", on_question=lambda request: answer),
                        session_id="s1")
    if "questions" in params:
        return asyncio.run(steering.question(0, params))
    return asyncio.run(steering.permission(0, params))


@pytest.mark.parametrize("answer", [Answer("small"), Answer("Small change")])
def test_an_id_or_a_label_of_one_option_answers_it(answer: Answer) -> None:
    assert _ask(answer) == {"outcome": {"outcome": "answered", "answers": [
        {"questionId": "q1", "selectedOptionIds": ["small"]}]}}


def test_an_option_named_twice_by_its_id_and_its_label_is_one_choice() -> None:
    assert _ask(Answer(["small", "Small change"]))["outcome"]["answers"] == [
        {"questionId": "q1", "selectedOptionIds": ["small"]}]


def test_labels_and_ids_mix_per_question() -> None:
    answer = Answer({"q1": "Full rewrite", "q2": ["Unit", "e2e"]})
    assert _ask(answer)["outcome"]["answers"] == [
        {"questionId": "q1", "selectedOptionIds": ["full"]},
        {"questionId": "q2", "selectedOptionIds": ["unit", "e2e"]}]


def test_a_label_of_the_fallback_question_selects_its_option() -> None:
    assert _ask(Answer("Go ahead"), _FALLBACK) == {"outcome": {"outcome": "selected",
                                                                "optionId": "yes"}}


@pytest.mark.parametrize(("answer", "said"), [
    (Answer("medium"), "answered 'medium' to question 'q1', which is neither an option id nor "
                       "the label of exactly one option (options: 'small' 'Small change', "
                       "'full' 'Full rewrite')"),
    (Answer({"q2": ["Same"]}), "answered 'Same' to question 'q2'"),  # two options have it
    (Answer({"choice": ["small"]}), "answered question 'choice', which the agent did not ask "
                                    "(asked: 'q1', 'q2')"),
    # audit 13: two options for a single-choice question were both sent
    (Answer({"q1": ["small", "Full rewrite"]}), "answered 'small', 'full' to question 'q1', "
                                                "which takes one option"),
])
def test_an_answer_naming_no_option_skips_with_a_warning(
        answer: Answer, said: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=_LOGGER):
        outcome = _ask(answer)["outcome"]
    assert outcome["outcome"] == "skipped", outcome
    assert said in outcome["reason"]
    [record] = [r for r in caplog.records if r.name == _LOGGER]
    assert said in record.getMessage() and record.levelno == logging.WARNING


def test_an_unknown_answer_to_the_fallback_question_skips_it(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=_LOGGER):
        assert _ask(Answer("Go"), _FALLBACK) == {"outcome": {"outcome": "selected",
                                                             "optionId": SKIP_OPTION}}
    assert [r.levelno for r in caplog.records if r.name == _LOGGER] == [logging.WARNING]


def test_two_single_choice_questions_sharing_an_id_take_one_option_each() -> None:
    """Two questions with one id (an agent's slip the page makes answerable, test_request_cards)
    each take one option: the rule above counts per question, not per id (the page's answer
    to both was skipped)."""
    twice = {"toolCallId": "q", "title": "dup ids", "questions": [
        {"id": "q", "prompt": "Q1", "options": [{"id": "y", "label": "Yes"}]},
        {"id": "q", "prompt": "Q2", "options": [{"id": "n", "label": "No"}]}]}
    assert _ask(Answer({"q": ["y", "n"]}), twice)["outcome"]["answers"] == [
        {"questionId": "q", "selectedOptionIds": ["y", "n"]}]
    assert _ask(Answer({"q": ["y", "n", "Yes"]}), twice)["outcome"]["answers"] == [
        {"questionId": "q", "selectedOptionIds": ["y", "n"]}]
