"""RunRequests/RunSteering without a server: a plan accepted, a plan that times out, a
question cancelled with its run — each with its request and answer records, in order."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from cursor_agent_api.permissions import Accept, Plan, Question, QuestionOption, QuestionRequest, Reject, Skip
from cursor_agent_api.server.requests import AnswerIn, RunRequests, RunSteering, parse_answer


class FakeLog:
    def __init__(self) -> None:
        self.records: list[Any] = []

    async def append(self, chat_id: str, new: list[Any], **_: Any) -> list[Any]:
        self.records += new
        return list(new)


def _steering(timeout: float | None) -> tuple[FakeLog, RunRequests, RunSteering]:
    log = FakeLog()
    reqs = RunRequests(log, "chat", "run", timeout)  # type: ignore[arg-type]
    return log, reqs, RunSteering(reqs)


def test_a_plan_is_accepted_by_a_person() -> None:
    async def main() -> None:
        log, reqs, steering = _steering(None)
        task = asyncio.ensure_future(steering.on_plan(Plan("s", "Rename", "# Rename\n1. find")))
        while not log.records:
            await asyncio.sleep(0)
        rid = log.records[0].payload["request_id"]
        assert log.records[0].subtype == "plan" and log.records[0].payload["name"] == "Rename"
        answer = await reqs.answer(rid, AnswerIn(accept=True))
        assert answer["decision"] == "accepted" and answer["by"] == "user"
        assert isinstance(await task, Accept)
        assert [r.subtype for r in log.records] == ["plan", "answered"]

    asyncio.run(main())


def test_a_plan_nobody_answers_is_rejected_at_the_timeout() -> None:
    async def main() -> None:
        log, _reqs, steering = _steering(0.01)
        decision = await steering.on_plan(Plan("s", "Rename", "…"))
        assert isinstance(decision, Reject) and "0.01 s" in decision.reason
        # in the runtime's words (not "permission_timeout", a setting's spelling)
        assert decision.reason == "no answer within the permission timeout (0.01 s)"
        assert log.records[-1].payload["decision"] == "rejected"
        assert log.records[-1].payload["by"] == "timeout"

    asyncio.run(main())


def test_a_question_is_cancelled_with_its_run() -> None:
    async def main() -> None:
        log, reqs, steering = _steering(None)
        q = QuestionRequest("s", "Before I start", [Question("q1", "How?", (QuestionOption("a", "A"),))])
        task = asyncio.ensure_future(steering.on_question(q))
        while not log.records:
            await asyncio.sleep(0)
        assert reqs.open_count() == 1
        await reqs.close(by="cancel", reason="the run was cancelled")
        assert isinstance(await task, Skip)
        assert reqs.open_count() == 0
        assert (log.records[-1].payload["decision"], log.records[-1].payload["by"]) == ("cancelled", "cancel")

    asyncio.run(main())


@pytest.mark.parametrize("answers", [
    [{"question_id": "q1", "option_ids": ["a"]}, {"question_id": "q1", "option_ids": ["b"]}],
    [{"question_id": "q2", "option_ids": ["a"]}, {"question_id": "q2", "option_ids": ["a"]}],
    [{"question_id": "q2", "option_ids": ["a", "a"]}],
])
def test_a_question_or_an_option_named_twice_is_refused(answers: list[dict[str, Any]]) -> None:
    """One answer per question, each option once: the agent hears exactly what is stored."""
    info = {"questions": [{"id": "q1", "options": [{"id": "a"}, {"id": "b"}]},
                          {"id": "q2", "allow_multiple": True, "options": [{"id": "a"}, {"id": "b"}]}]}
    with pytest.raises(ValueError, match="twice"):
        parse_answer("question", info, AnswerIn.model_validate({"answers": answers}))
