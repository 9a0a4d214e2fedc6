"""Answers to an ACP run's requests in queue mode: an API server relays them, the worker takes them.

A run on a worker waits there for the answers to its requests
(:class:`~..requests.RunRequests`). An API server that receives
``POST /api/runs/{run_id}/requests/{request_id}`` for such a run (:func:`relay_answer`)

1. checks the answer against the stored request record, as a local run would: 404 no such
   request, 409 already answered, 422 a body that does not fit;
2. NOTIFYs :data:`ANSWERS_CHANNEL` with ``{"run_id", "request_id", "body"}`` (ids and the
   checked answer; at most :data:`MAX_PAYLOAD` bytes);
3. waits for the answer record: the worker running the run LISTENs
   (:class:`AnswerListener`), answers the request as the local endpoint does (which stores the
   record before the agent hears it) and the API server returns that record — or 409 if the
   request got another answer first (the timeout, a cancel), or :class:`AnswerNotTakenError`
   (503) when no record came within ``wait`` seconds (the worker was reconnecting its LISTEN
   connection, or is gone): nothing was answered, try again.

Every worker hears every answer; only the one that runs the run acts on it.

Example:
    >>> encode_answer("r1", "q1", {"decision": "allow-once"})
    '{"run_id":"r1","request_id":"q1","body":{"decision":"allow-once"}}'
    >>> decode_answer('{"run_id":"r1","request_id":"q1","body":{"decision":"reject"}}')
    ('r1', 'q1', {'decision': 'reject'})
    >>> decode_answer("nonsense") is None
    True
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from ..pg_listen import PING_INTERVAL, PgListener
from ..requests import (
    AlreadyAnsweredError,
    AnswerIn,
    UnknownRequestError,
    pair_requests,
    parse_answer,
    request_records,
)
from ..store import Store, describe_error, is_transient

logger = logging.getLogger("cursor_agent_api.server")

ANSWERS_CHANNEL = "cursor_agent_api_answers"
"""The channel API servers NOTIFY answers on and workers LISTEN to."""

MAX_PAYLOAD = 7900
"""PostgreSQL refuses a NOTIFY payload of 8000 bytes or more."""

RELAY_WAIT = 10.0
"""Seconds an API server waits for the worker to store a relayed answer."""


class AnswerNotTakenError(Exception):
    """No worker stored the relayed answer in time (503: nothing was answered; try again)."""


def encode_answer(run_id: str, request_id: str, body: dict[str, Any]) -> str:
    """The NOTIFY payload of an answer."""
    return orjson.dumps({"run_id": run_id, "request_id": request_id, "body": body}).decode()


def decode_answer(payload: str) -> tuple[str, str, dict[str, Any]] | None:
    """``(run_id, request_id, body)`` of a payload, or ``None`` if it is not one."""
    try:
        obj = orjson.loads(payload)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(obj, dict):
        return None
    run_id, request_id, body = obj.get("run_id"), obj.get("request_id"), obj.get("body")
    if not (isinstance(run_id, str) and isinstance(request_id, str) and isinstance(body, dict)):
        return None
    return run_id, request_id, body


async def _answer_record(store: Store, run_id: str, request_id: str) -> tuple[dict[str, Any], Any]:
    """The request record's payload and its answer (``None`` while open); 404 if none."""
    for pair in pair_requests(await request_records(store, [run_id])):
        if pair["request"].get("request_id") == request_id:
            return pair["request"], pair["answer"]
    raise UnknownRequestError(request_id)


def answers_at(request: dict[str, Any], body: AnswerIn) -> dict[str, Any]:
    """A question's answer as places in its stored request (``answers_at``: each answer's
    question index and option indexes), for a NOTIFY payload its ids would not fit; the
    worker reads the ids back from the same record (:func:`answer_from_places`).

    Example:
        >>> req = {"questions": [{"id": "q", "options": [{"id": "a"}, {"id": "b"}]}]}
        >>> body = AnswerIn(answers=[{"question_id": "q", "option_ids": ["b"]}])
        >>> places = answers_at(req, body); places
        {'answers_at': [[0, [1]]]}
        >>> answer_from_places(req, places).model_dump(exclude_none=True)
        {'answers': [{'question_id': 'q', 'option_ids': ['b']}]}
    """
    questions = [q for q in request.get("questions") or [] if isinstance(q, dict)]
    index = {str(q.get("id")): i for i, q in enumerate(questions)}
    places = []
    for a in body.answers or []:
        qi = index[a.question_id]  # (parse_answer checked it is there)
        options = [str(o.get("id")) for o in questions[qi].get("options") or [] if isinstance(o, dict)]
        places.append([qi, [options.index(o) for o in a.option_ids]])
    return {"answers_at": places}


def answer_from_places(request: dict[str, Any], raw: dict[str, Any]) -> AnswerIn:
    """The answer :func:`answers_at` encoded, with the ids of ``request`` (the stored
    record); ``ValueError`` if a place is not in it."""
    questions = [q for q in request.get("questions") or [] if isinstance(q, dict)]
    answers = []
    try:
        for qi, ois in raw["answers_at"]:
            q = questions[qi]
            options = [o for o in q.get("options") or [] if isinstance(o, dict)]
            answers.append({"question_id": str(q.get("id")),
                            "option_ids": [str(options[oi].get("id")) for oi in ois]})
    except (TypeError, ValueError, IndexError, KeyError) as exc:
        raise ValueError(f"an answer's places do not fit its request: {exc}") from None
    return AnswerIn.model_validate({"answers": answers})


async def relay_answer(store: Store, run_id: str, request_id: str, body: AnswerIn, *,
                       wait: float = RELAY_WAIT, poll: float = 0.1) -> dict[str, Any]:
    """Answer a request of a run that waits on a worker (see the module doc); the answer
    record's payload. Raises ``UnknownRequestError`` (404), ``AlreadyAnsweredError`` (409),
    ``ValueError`` (422) or :class:`AnswerNotTakenError` (503)."""
    request, answer = await _answer_record(store, run_id, request_id)
    if answer is not None:
        raise AlreadyAnsweredError(f"request {request_id!r} already has its answer")
    fields = parse_answer(str(request.get("kind")), request, body)  # 422 here, before relaying
    payload = encode_answer(run_id, request_id, body.model_dump(exclude_none=True))
    if len(payload.encode()) > MAX_PAYLOAD:  # long ids: relayed as places in the stored request
        payload = encode_answer(run_id, request_id, answers_at(request, body))
    if len(payload.encode()) > MAX_PAYLOAD:
        raise ValueError("the answer is too large to relay to the worker that runs this run")
    await store.notify(ANSWERS_CHANNEL, payload)
    deadline = time.monotonic() + wait
    while True:
        _request, answer = await _answer_record(store, run_id, request_id)
        if answer is not None:
            mine = answer.get("by") == "user" and all(answer.get(k) == v for k, v in fields.items())
            if not mine:
                raise AlreadyAnsweredError(
                    f"request {request_id!r} got another answer first ({answer.get('decision')}, "
                    f"by {answer.get('by')})")
            return dict(answer)
        if time.monotonic() >= deadline:
            raise AnswerNotTakenError(
                f"the worker that runs run {run_id!r} did not take the answer within {wait:g} s; "
                "nothing was answered: try again")
        await asyncio.sleep(poll)


OnAnswer = Callable[[str, str, AnswerIn], Awaitable[object]]


class AnswerListener(PgListener):
    """A worker's LISTEN on :data:`ANSWERS_CHANNEL`: each answer goes to ``on_answer(run_id,
    request_id, body)`` (which ignores runs it does not run). A lost connection, or one that
    stops answering its ping (every ``ping_interval`` quiet seconds), is opened again
    (backoff up to 5 s; :mod:`..pg_listen`); an answer sent meanwhile is lost, and its API
    server says so (503)."""

    def __init__(self, store: Store, on_answer: OnAnswer, *,
                 ping_interval: float = PING_INTERVAL) -> None:
        super().__init__(store, ANSWERS_CHANNEL, label="the LISTEN connection for answers",
                         ping_interval=ping_interval)
        self.on_answer = on_answer
        self._handlers: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        """Connect (so that no answer sent after this returns is missed), then listen."""
        await self.open("answer-listener")

    async def close(self) -> None:
        """Stop listening, and the answers being given."""
        await super().close()
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)

    async def received(self, payloads: list[str]) -> None:
        for payload in payloads:
            self._dispatch(payload)

    def _dispatch(self, payload: str) -> None:
        decoded = decode_answer(payload)
        if decoded is None:
            return
        run_id, request_id, raw = decoded
        if "answers_at" in raw:  # places in the stored request (answers_at): read in _answer
            body: AnswerIn | dict[str, Any] = raw
        else:
            try:
                body = AnswerIn.model_validate(raw)
            except ValueError:
                return
        task = asyncio.get_running_loop().create_task(self._answer(run_id, request_id, body))
        self._handlers.add(task)
        task.add_done_callback(self._handlers.discard)

    async def _answer(self, run_id: str, request_id: str, body: AnswerIn | dict[str, Any]) -> None:
        try:
            if not isinstance(body, AnswerIn):
                request, _answer = await _answer_record(self.store, run_id, request_id)
                body = answer_from_places(request, body)
            await self.on_answer(run_id, request_id, body)
        except (UnknownRequestError, AlreadyAnsweredError, ValueError):
            pass  # another answer came first, or the API server's check was passed by a stale read
        except Exception as e:
            if not is_transient(e):
                logger.exception("answering request %s of run %s failed", request_id, run_id)
            else:  # not stored, so not given: the API server's wait answers 503, try again
                logger.warning("answering request %s of run %s failed: %s", request_id, run_id,
                               describe_error(e))


__all__ = [
    "ANSWERS_CHANNEL",
    "AnswerListener",
    "AnswerNotTakenError",
    "answer_from_places",
    "answers_at",
    "decode_answer",
    "encode_answer",
    "relay_answer",
]
