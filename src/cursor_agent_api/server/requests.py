"""What an ACP run asks of a person: permission requests, questions and plans.

In an ACP chat (chat option ``transport: "acp"``) the agent asks before a tool call it may
not run on its own (``session/request_permission``), asks questions
(``cursor/ask_question``) and proposes plans (``cursor/create_plan``). The client hands
each one to the run's callbacks (:class:`RunSteering`); the callback

1. stores a **request record** (``source: "server"``, ``type: "request"``, ``subtype``
   ``permission`` | ``question`` | ``plan``, payload: ``request_id`` and what to show),
   which the WebSocket pushes like any record;
2. waits for the answer: ``POST /api/runs/{run_id}/requests/{request_id}`` (see
   :class:`AnswerIn`), the server-side ``permission_timeout`` (rejected / skipped), the run's
   cancel or end (``cancelled``);
3. stores the **answer record** (``type: "request"``, ``subtype: "answered"``: the
   ``decision``, ``by`` whom: ``user``, ``timeout``, ``cancel``, ``run-end``, ``restart``)
   before the agent hears the answer.

Both records are stored only while the run is active (``active_run``): a run another process
ended (a sweep, a surviving server) gets none after its final record. A request whose record
is refused so is answered ``cancelled`` (``by: "run-end"``, not stored): the agent is told
no, a person's answer to it is refused (409), and the run's ``on_ended`` stops the agent.

A request left open by a server that stopped is closed ``cancelled`` (``by: "restart"``) by
the server as it stops (its run's end), or after a crash by the next start
(:func:`close_open_requests`); one left open by a lost worker, by the sweep
that ends its run, with that end (:func:`cancelled_answers`).

Example:
    >>> parse_answer("permission", {}, AnswerIn(decision="allow-always"))
    {'decision': 'allow-always'}
    >>> parse_answer("plan", {}, AnswerIn(decision="reject"))
    Traceback (most recent call last):
    ...
    ValueError: a plan is answered with {"accept": true} or {"accept": false}
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import anyio
import orjson
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from ..permissions import (
    Accept,
    Allow,
    Answer,
    Cancel,
    Deny,
    PermissionDecision,
    PermissionRequest,
    Plan,
    PlanDecision,
    QuestionDecision,
    QuestionRequest,
    Reject,
    Skip,
)
from .log import EventLog
from .store import (
    AppendOnce,
    EventRecord,
    NewRecord,
    RunEndedError,
    Store,
    describe_error,
    is_transient,
    now_ms,
)

logger = logging.getLogger("cursor_agent_api.server")

REQUEST_KINDS = ("permission", "question", "plan")
"""The subtypes of request records; the answer's is ``answered``."""

ANSWERED = "answered"

_TIMEOUT_DECISION = {"permission": "reject", "question": "skipped", "plan": "rejected"}

MAX_QUESTIONS = 20
"""Questions a request shows (and an answer answers); the agent's further ones are cut."""

MAX_OPTIONS = 50
"""Options a question shows (so at most that many are ticked); further ones are cut."""

MAX_ID_CHARS = 200
"""Characters of a question's or option's id; the agent's longer ids are replaced."""


class QuestionAnswerIn(BaseModel):
    """One question's answer: the ids of the options chosen."""

    model_config = ConfigDict(extra="forbid")

    question_id: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    option_ids: list[Annotated[str, Field(max_length=MAX_ID_CHARS)]] = Field(
        min_length=1, max_length=MAX_OPTIONS)


class AnswerIn(BaseModel):
    """Body of ``POST /api/runs/{run_id}/requests/{request_id}``: exactly one of

    * ``{"decision": "allow-once" | "allow-always" | "reject"}`` — a permission request;
    * ``{"answers": [{"question_id": "q1", "option_ids": ["small"]}]}`` or ``{"skip": true}``
      — a question;
    * ``{"accept": true | false}`` — a plan;

    with an optional ``reason`` (a rejection's, skip's; the agent is told).
    """

    model_config = ConfigDict(extra="forbid")

    decision: Literal["allow-once", "allow-always", "reject"] | None = None
    answers: list[QuestionAnswerIn] | None = Field(None, min_length=1, max_length=MAX_QUESTIONS)
    skip: Literal[True] | None = None
    accept: StrictBool | None = None
    reason: str | None = Field(None, max_length=1000)


def parse_answer(kind: str, info: dict[str, Any], body: AnswerIn) -> dict[str, Any]:
    """The answer record's fields for ``body`` answering a ``kind`` request whose record
    said ``info``; ``ValueError`` (a 422, which never repeats the body) when it does not fit.

    Example:
        >>> q = {"questions": [{"id": "q1", "options": [{"id": "a"}, {"id": "b"}]}]}
        >>> parse_answer("question", q, AnswerIn(answers=[{"question_id": "q1", "option_ids": ["b"]}]))
        {'decision': 'answered', 'answers': [{'question_id': 'q1', 'option_ids': ['b']}]}
        >>> parse_answer("question", q, AnswerIn(skip=True))
        {'decision': 'skipped'}
    """
    given = [k for k in ("decision", "answers", "skip", "accept") if getattr(body, k) is not None]
    out: dict[str, Any]
    if kind == "permission":
        if given != ["decision"]:
            raise ValueError('a permission request is answered with {"decision": "allow-once"}, '
                             '"allow-always" or "reject"')
        _check_offered(info, str(body.decision))
        out = {"decision": body.decision}
    elif kind == "question":
        if given not in (["answers"], ["skip"]):
            raise ValueError('a question is answered with {"answers": [{"question_id": …, '
                             '"option_ids": […]}]} or {"skip": true}')
        if body.skip:
            out = {"decision": "skipped"}
        else:
            valid = {str(q.get("id")): ({str(o.get("id")) for o in q.get("options") or []},
                                        bool(q.get("allow_multiple")))
                     for q in info.get("questions") or []}
            answers: list[dict[str, Any]] = []
            for a in body.answers or []:
                if a.question_id not in valid:
                    raise ValueError("an answer names a question this request does not ask")
                if any(a.question_id == seen["question_id"] for seen in answers):
                    raise ValueError("a question is answered twice: answer each question once "
                                     "(a multiple-choice one with all its options in one answer)")
                if len(set(a.option_ids)) != len(a.option_ids):
                    raise ValueError("an answer names the same option twice")
                options, multiple = valid[a.question_id]
                if any(o not in options for o in a.option_ids):
                    raise ValueError("an answer names an option the question does not offer")
                if len(a.option_ids) > 1 and not multiple:
                    raise ValueError("a single-choice question takes one option")
                answers.append({"question_id": a.question_id, "option_ids": list(a.option_ids)})
            out = {"decision": "answered", "answers": answers}
    elif kind == "plan":
        if given != ["accept"]:
            raise ValueError('a plan is answered with {"accept": true} or {"accept": false}')
        out = {"decision": "accepted" if body.accept else "rejected"}
    else:  # pragma: no cover - records are written by this module only
        raise ValueError(f"unknown request kind {kind!r}")
    if body.reason:
        out["reason"] = body.reason
    return out


_ALLOW_KINDS = {"allow-once": "allow_once", "allow-always": "allow_always"}


def _check_offered(info: dict[str, Any], decision: str) -> None:
    """``ValueError`` when ``decision`` allows in a way the agent did not offer (its record's
    ``options``): the answer recorded is the one the agent gets. Reject is always taken (an
    agent that offered no reject option is told the request was cancelled).

    Example:
        >>> _check_offered({"options": [{"kind": "allow_once"}, {"kind": "reject_once"}]},
        ...                "allow-always")
        Traceback (most recent call last):
        ...
        ValueError: the agent did not offer "allow-always" for this request: it offers allow-once, reject
    """
    offered = info.get("options")
    want = _ALLOW_KINDS.get(decision)
    if want is None or not isinstance(offered, list):  # a record from before options were kept
        return
    kinds = {o.get("kind") for o in offered if isinstance(o, dict)}
    if want not in kinds:
        can = [d for d, k in _ALLOW_KINDS.items() if k in kinds] + ["reject"]
        raise ValueError(f'the agent did not offer "{decision}" for this request: '
                         f"it offers {', '.join(can)}")


class UnknownRequestError(LookupError):
    """No such request in this run (404)."""


class AlreadyAnsweredError(Exception):
    """The request has its answer already (409)."""


_ENDED_REASON = "the run is already over (ended by another process)"


@dataclass(eq=False)
class PendingRequest:
    """A request of an active run: what its record said, and its answer once given."""

    id: str
    kind: str
    info: dict[str, Any]
    future: asyncio.Future[dict[str, Any]]
    answer: dict[str, Any] | None = None
    writing: asyncio.Future[None] | None = None
    """Set while an answer's record is being written (the request is claimed: another answer
    waits for it, then finds it given, or tries its own if that write failed)."""
    unrecorded: bool = False
    """The library's own answer was given but its record could not be written: the run's end
    writes it (:meth:`RunRequests.unrecorded_answers`)."""


@dataclass(eq=False)
class RunRequests:
    """The requests of one active run, and how to store their records."""

    log: EventLog
    chat_id: str
    run_id: str
    timeout: float | None
    requests: dict[str, PendingRequest] = field(default_factory=dict)
    on_ended: Callable[[], Awaitable[None]] | None = None
    """Called when a record is refused because the run is over (another process ended it):
    the run manager stops the agent (:meth:`.RunManager._ended_elsewhere`)."""

    def _record(self, subtype: str, payload: dict[str, Any]) -> NewRecord:
        return NewRecord("server", "request", subtype, payload, None, self.run_id)

    async def _store(self, record: NewRecord) -> bool:
        """Append ``record`` while the run is active; False (nothing written, ``on_ended``
        called) if the run is over; the store's error if it is certainly not stored. A write
        whose ``COMMIT`` was sent (it may be stored) is tried again until the store says
        (:class:`~.store.AppendOnce`): a record is never both shown and refused."""
        once = AppendOnce()
        delay = 0.05
        while True:
            try:
                await self.log.append(self.chat_id, [record], active_run=self.run_id, once=once)
            except RunEndedError:
                logger.warning("run %s is over (ended by another process): its request record "
                               "(%s) is not stored", self.run_id, record.subtype)
                if self.on_ended is not None:
                    await self.on_ended()
                return False
            except Exception as exc:
                if not (once.uncertain and is_transient(exc)):
                    raise
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
                continue
            return True

    def _refused(self, pending: PendingRequest) -> dict[str, Any]:
        """The answer the agent hears for a request whose record was refused (the run is over):
        ``cancelled``, not stored."""
        answer = {"request_id": pending.id, "kind": pending.kind, "decision": "cancelled",
                  "reason": _ENDED_REASON, "by": "run-end", "answered_ms": now_ms()}
        pending.answer = answer
        if not pending.future.done():
            pending.future.set_result(answer)
        return answer

    async def ask(self, kind: str, info: dict[str, Any]) -> dict[str, Any]:
        """Store the request record, wait for its answer (or the timeout); the answer's fields
        (``cancelled`` at once if the run is over: the record is not stored)."""
        rid = uuid.uuid4().hex
        pending = PendingRequest(rid, kind, info, asyncio.get_running_loop().create_future())
        payload = {"request_id": rid, "kind": kind, **info, "timeout_s": self.timeout}
        self.requests[rid] = pending
        try:
            if not await self._store(self._record(kind, payload)):
                return self._refused(pending)
        except Exception as exc:
            # Not stored: nobody can see it, so nobody can answer it. The agent is told no at
            # once (as by the timeout), with the reason in our words (never the driver's
            # message: it holds the SQL and its values); nothing is stored of it.
            del self.requests[rid]
            reason = f"the request could not be stored ({describe_error(exc)}), so nobody saw it"
            logger.warning("run %s: %s", self.run_id, reason)
            return {"request_id": rid, "kind": kind, "decision": _TIMEOUT_DECISION[kind],
                    "reason": reason, "by": "store", "answered_ms": now_ms()}
        try:
            with anyio.fail_after(self.timeout):  # not wait_for: it can lose a cancel
                return await asyncio.shield(pending.future)
        except TimeoutError:
            reason = f"no answer within the permission timeout ({self.timeout:g} s)"
            return await self.settle(pending, {"decision": _TIMEOUT_DECISION[kind], "reason": reason},
                                     by="timeout")

    async def settle(self, pending: PendingRequest, fields: dict[str, Any], *, by: str) -> dict[str, Any]:
        """Give ``pending`` its answer (once: a later one gets the first), store the answer
        record, then let the waiting callback go on; the answer the agent hears. If the run is
        over (the record refused), it hears ``cancelled`` instead (:meth:`_refused`).

        A person's answer (``by="user"``) is stored before the agent hears it, or not given:
        if its record cannot be written, the store's error is raised (503 at the endpoint)
        and the request stays open. A write that may have gone through (its ``COMMIT`` sent)
        is tried again until the store says (:class:`~.store.AppendOnce`). The library's own
        answers (a timeout, a cancel, the run's end) cannot wait: the agent hears them, and a
        record the store missed is written with the run's end."""
        answer, _mine = await self._settle(pending, fields, by)
        return answer

    async def _settle(self, pending: PendingRequest, fields: dict[str, Any],
                      by: str) -> tuple[dict[str, Any], bool]:
        while pending.writing is not None:  # claimed: wait for that write, then look again
            await asyncio.shield(pending.writing)
        if pending.answer is not None:
            return await asyncio.shield(pending.future), False
        answer = {"request_id": pending.id, "kind": pending.kind, **fields, "by": by,
                  "answered_ms": now_ms()}
        pending.answer = answer
        writing = pending.writing = asyncio.get_running_loop().create_future()
        try:
            if not await self._store_answer(pending, answer, by):
                return self._refused(pending), False
        except BaseException:
            pending.answer = None  # not stored, not given: the request stays open
            raise
        finally:
            pending.writing = None
            writing.set_result(None)
        if not pending.future.done():
            pending.future.set_result(answer)
        return answer, True

    async def _store_answer(self, pending: PendingRequest, answer: dict[str, Any], by: str) -> bool:
        """Write ``answer``'s record: False if the run is over; raises (a person's answer
        only) if it is certainly not stored."""
        try:
            return await self._store(self._record(ANSWERED, answer))
        except Exception as exc:
            if by == "user":
                raise
            logger.warning("could not store the answer to request %s (%s): it is stored "
                           "with the run's end", pending.id, describe_error(exc))
            pending.unrecorded = True
            return True

    def unrecorded_answers(self) -> list[NewRecord]:
        """The library's answers whose records the store missed, to write with the run's end
        (no request of a run that is over looks open)."""
        return [self._record(ANSWERED, p.answer) for p in self.requests.values()
                if p.unrecorded and p.answer is not None]

    async def answer(self, request_id: str, body: AnswerIn) -> dict[str, Any]:
        """A person's answer (the endpoint); :class:`AlreadyAnsweredError` (409) if another
        answer came first, or if the run turns out to be over (ended by another process: the
        answer is not stored, the agent hears ``cancelled``); the store's error if the answer
        cannot be stored (it is not given)."""
        pending = self.requests.get(request_id)
        if pending is None:
            raise UnknownRequestError(request_id)
        if pending.future.done():
            raise AlreadyAnsweredError(f"request {request_id!r} already has its answer")
        fields = parse_answer(pending.kind, pending.info, body)
        answer, mine = await self._settle(pending, fields, "user")
        if mine:
            return answer
        if answer.get("decision") == "cancelled" and answer.get("reason") == _ENDED_REASON:
            raise AlreadyAnsweredError(
                f"request {request_id!r} cannot be answered: run {self.run_id!r} is already "
                f"{await self._status()} (ended by another process); the answer was not stored"
            )
        raise AlreadyAnsweredError(f"request {request_id!r} already has its answer")

    async def _status(self) -> str:
        """The run's stored status (``over`` if it cannot be read)."""
        try:
            run = await self.log.store.get_run(self.run_id)
        except Exception:
            return "over"
        return str(run["status"]) if run is not None else "over"

    async def close(self, *, by: str, reason: str, wait_writing: bool = True) -> None:
        """Answer every open request ``cancelled`` (the run is cancelled or over). An answer
        being written is waited for first (it may fail: then the request is closed here), or,
        with ``wait_writing=False`` (a cancel, which must not wait on the database), left to
        its writer and to the run's end."""
        for pending in list(self.requests.values()):
            if not pending.future.done() and (wait_writing or pending.writing is None):
                await self.settle(pending, {"decision": "cancelled", "reason": reason}, by=by)

    def open_count(self) -> int:
        """How many requests wait for an answer."""
        return sum(1 for p in self.requests.values() if p.answer is None)


# ---- what a request shows ------------------------------------------------------------


def permission_info(request: PermissionRequest) -> dict[str, Any]:
    """What a permission request's record shows: the tool call (kind, command, path, diff,
    MCP server and tool), why the agent asks, the options it offers.

    Example:
        >>> from cursor_agent_api.protocol.tools import ToolCall, ToolKind
        >>> info = permission_info(PermissionRequest("s", ToolCall("c", ToolKind.SHELL,
        ...                        args={"command": "ls"})))
        >>> info["tool"]["kind"], info["tool"]["command"]
        ('shell', 'ls')
    """
    tool = request.tool_call
    view = {
        "call_id": tool.call_id,
        "kind": tool.kind.value,
        "title": request.title or None,
        "summary": tool.summary() or None,
        "command": request.command,
        "path": request.path,
        "diff": request.diff,
        "mcp_server": request.mcp_server,
        "mcp_tool": request.mcp_tool,
    }
    return {
        "tool": {k: v for k, v in view.items() if v is not None},
        "reason": request.reason,
        "options": [{"id": o.option_id, "name": o.name, "kind": o.kind} for o in request.options],
    }


def _shown_ids(ids: Sequence[str], prefix: str) -> list[str]:
    """Ids a page can send back, one per agent id: the agent's own when it has 1 to
    :data:`MAX_ID_CHARS` characters and is the first of its kind, else ``<prefix><place>``
    (made unique).

    Example:
        >>> _shown_ids(["a", "", "a", "x" * 201, "q2"], "q")
        ['a', 'q2~', 'q3', 'q4', 'q2']
    """
    shown: list[str | None] = []
    taken: set[str] = set()
    for agent_id in ids:
        keep = 0 < len(agent_id) <= MAX_ID_CHARS and agent_id not in taken
        shown.append(agent_id if keep else None)
        if keep:
            taken.add(agent_id)
    out = []
    for n, given in enumerate(shown, 1):
        if given is None:
            given = f"{prefix}{n}"
            while given in taken:
                given += "~"
            taken.add(given)
        out.append(given)
    return out


@dataclass(frozen=True)
class AskedQuestions:
    """A question request as the page shows it (``info``, the record's fields) and the way
    back to the agent's ids (``agent_ids``: shown question id -> the agent's id and its
    options' shown id -> the agent's)."""

    info: dict[str, Any]
    agent_ids: dict[str, tuple[str, dict[str, str]]]

    def agent_answer(self, answers: Sequence[dict[str, Any]]) -> dict[str, list[str]]:
        """An answer record's ``answers`` in the agent's ids (for
        :class:`~cursor_agent_api.permissions.Answer`).

        Example:
            >>> from cursor_agent_api.permissions import Question, QuestionOption
            >>> asked = asked_questions(QuestionRequest("s", "t", [
            ...     Question("", "Go?", (QuestionOption("y", "Yes"),))]))
            >>> asked.info["questions"][0]["id"]
            'q1'
            >>> asked.agent_answer([{"question_id": "q1", "option_ids": ["y"]}])
            {'': ['y']}
        """
        out: dict[str, list[str]] = {}
        for a in answers:
            agent_q, options = self.agent_ids[str(a["question_id"])]
            out.setdefault(agent_q, []).extend(options[str(o)] for o in a["option_ids"])
        return out


def asked_questions(request: QuestionRequest) -> AskedQuestions:
    """What a question's record shows, bounded so that the page can answer all of it: at
    most :data:`MAX_QUESTIONS` questions (``questions_offered``: how many the agent asked,
    when more) of at most :data:`MAX_OPTIONS` options (``options_offered`` likewise), ids
    unique and at most :data:`MAX_ID_CHARS` characters (:func:`_shown_ids`).

    Example:
        >>> from cursor_agent_api.permissions import Question, QuestionOption
        >>> many = Question("q", "Pick", tuple(QuestionOption(f"o{i}", f"O{i}") for i in range(60)))
        >>> info = asked_questions(QuestionRequest("s", "t", [many] * 21)).info
        >>> len(info["questions"]), info["questions_offered"]
        (20, 21)
        >>> q = info["questions"][1]
        >>> q["id"], len(q["options"]), q["options_offered"]
        ('q2', 50, 60)
    """
    questions = list(request.questions)
    shown_q = _shown_ids([q.id for q in questions[:MAX_QUESTIONS]], "q")
    views: list[dict[str, Any]] = []
    agent_ids: dict[str, tuple[str, dict[str, str]]] = {}
    for q, qid in zip(questions, shown_q, strict=False):
        options = list(q.options)
        shown_o = _shown_ids([o.id for o in options[:MAX_OPTIONS]], "o")
        view: dict[str, Any] = {
            "id": qid, "prompt": q.prompt, "allow_multiple": q.allow_multiple,
            "options": [{"id": oid, "label": o.label} for o, oid in zip(options, shown_o, strict=False)],
        }
        if len(options) > MAX_OPTIONS:
            view["options_offered"] = len(options)
        views.append(view)
        agent_ids[qid] = (q.id, {oid: o.id for o, oid in zip(options, shown_o, strict=False)})
    info: dict[str, Any] = {"title": request.title, "questions": views}
    if len(questions) > MAX_QUESTIONS:
        info["questions_offered"] = len(questions)
    return AskedQuestions(info, agent_ids)


def question_info(request: QuestionRequest) -> dict[str, Any]:
    """What a question's record shows: its title and questions with their options
    (bounded: :func:`asked_questions`)."""
    return asked_questions(request).info


def plan_info(plan: Plan) -> dict[str, Any]:
    """What a plan's record shows: its name, overview, text and todos."""
    return {"name": plan.name, "overview": plan.overview, "plan": plan.plan, "todos": plan.todos}


@dataclass(eq=False)
class RunSteering:
    """The client's ``can_use_tool``, ``on_question`` and ``on_plan`` for one run: each asks
    a person through :class:`RunRequests`."""

    requests: RunRequests

    async def can_use_tool(self, request: PermissionRequest) -> PermissionDecision:
        """Allow once / always, reject, or cancel (the run was cancelled meanwhile)."""
        answer = await self.requests.ask("permission", permission_info(request))
        decision = answer.get("decision")
        if decision == "allow-once":
            return Allow()
        if decision == "allow-always":
            return Allow(remember=True)
        if decision == "cancelled":
            return Cancel()
        return Deny(str(answer.get("reason") or "rejected in the page"))

    async def on_question(self, request: QuestionRequest) -> QuestionDecision:
        """The options chosen, or skipped."""
        asked = asked_questions(request)
        answer = await self.requests.ask("question", asked.info)
        if answer.get("decision") == "answered":
            return Answer(asked.agent_answer(answer.get("answers") or []))
        return Skip(str(answer.get("reason") or answer.get("decision") or "skipped"))

    async def on_plan(self, plan: Plan) -> PlanDecision:
        """Accepted or rejected."""
        answer = await self.requests.ask("plan", plan_info(plan))
        if answer.get("decision") == "accepted":
            return Accept()
        return Reject(str(answer.get("reason") or answer.get("decision") or "rejected"))


# ---- stored requests -----------------------------------------------------------------


async def request_records(store: Store, run_ids: Sequence[str]) -> list[EventRecord]:
    """The request and answer records of these runs, in seq order (indexed by run)."""
    out = await store.server_records(run_ids, "request")
    for rec in out:
        if isinstance(rec.payload, (bytes, str)):
            rec.payload = orjson.loads(rec.payload)
    return out


def pair_requests(records: Sequence[EventRecord]) -> list[dict[str, Any]]:
    """Each request with its answer (``None`` while open), in the order they were asked.

    Example:
        >>> ask = EventRecord(4, "c", "r", 0, "server", "request", "question", {"request_id": "x"}, None)
        >>> done = EventRecord(6, "c", "r", 0, "server", "request", "answered",
        ...                    {"request_id": "x", "decision": "skipped"}, None)
        >>> pair_requests([ask, done])[0]["answer"]["decision"]
        'skipped'
    """
    found: dict[str, dict[str, Any]] = {}
    for rec in records:
        rid = str(rec.payload.get("request_id") or "")
        if rec.subtype in REQUEST_KINDS:
            found[rid] = {"seq": rec.seq, "run_id": rec.run_id, "request": rec.payload, "answer": None}
        elif rec.subtype == ANSWERED and rid in found:
            found[rid]["answer"] = rec.payload
    return list(found.values())


async def cancelled_answers(store: Store, run_id: str, *, by: str, reason: str) -> list[NewRecord]:
    """The answer records (``cancelled``) that close every request of a run left open by the
    process that ran it (a stopped server, a lost worker); to append while the run is active
    (:func:`close_open_requests`), or with its end (the sweep's ``notes``)."""
    open_ = [p for p in pair_requests(await request_records(store, [run_id])) if p["answer"] is None]
    stamp = now_ms()
    return [
        NewRecord("server", "request", ANSWERED,
                  {"request_id": p["request"].get("request_id"), "kind": p["request"].get("kind"),
                   "decision": "cancelled", "reason": reason, "by": by, "answered_ms": stamp},
                  None, run_id)
        for p in open_
    ]


async def close_open_requests(log: EventLog, chat_id: str, run_id: str, *, by: str,
                              reason: str) -> int:
    """Answer ``cancelled`` every request of a run that a stopped server left open; how many
    (0 if the run is over meanwhile: another process ended it, nothing is written after its
    final record)."""
    answers = await cancelled_answers(log.store, run_id, by=by, reason=reason)
    if not answers:
        return 0
    try:
        await log.append(chat_id, answers, active_run=run_id)
    except RunEndedError:
        return 0
    return len(answers)


__all__ = [
    "ANSWERED",
    "MAX_ID_CHARS",
    "MAX_OPTIONS",
    "MAX_QUESTIONS",
    "REQUEST_KINDS",
    "AlreadyAnsweredError",
    "AnswerIn",
    "AskedQuestions",
    "PendingRequest",
    "QuestionAnswerIn",
    "RunRequests",
    "RunSteering",
    "UnknownRequestError",
    "asked_questions",
    "cancelled_answers",
    "close_open_requests",
    "pair_requests",
    "parse_answer",
    "permission_info",
    "plan_info",
    "question_info",
    "request_records",
]
