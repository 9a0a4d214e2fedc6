"""Answering the agent's requests in ACP mode: permissions, questions, plans.

:class:`Steering` holds one turn's (or the background's) settings — rules, mode, callbacks,
timeout — and turns each agent request into the JSON-RPC result to send back, reporting the
exchange to the turn's :class:`~cursor_agent_api.protocol.acp_mapper.AcpMapper` (so it becomes
``INTERACTION_QUERY`` events). Callbacks may be sync (each call on a daemon thread of its own,
:func:`~.daemon_thread.in_daemon_thread`, so a terminal prompt never blocks the event loop, and
a call the timeout or a cancel gave up on neither holds the program's exit nor takes a worker
thread from later calls) or async. Each wait is bounded by ``permission_timeout``
(none by default) and by the turn's cancel, which answers ``cancelled``: once the turn is
cancelled, every request is answered ``cancelled``, whatever rules, mode or defaults say. A
callback that raises counts as ``Deny`` / ``Skip`` / ``Reject``; its traceback goes to this
module's logger.

Answers are picked by option *kind*: ``Allow()`` -> ``allow_once``, ``Allow(remember=True)``
-> ``allow_always``, ``Deny`` -> ``reject_once``; a permission request offering
``__ask_question_skip__`` is a question in disguise and goes to ``on_question``.

The client's own tools (``tools=``: the server its config's ``mcp_servers`` names
``python-tools-<8 hex>``) are allowed as print mode allows them, by an implicit allow rule
``Mcp(<that server>:*)`` beside ``allowed_tools``: a deny rule still wins, and neither the
callback nor the mode is asked. ``Allow(remember=True)`` for a call of any such per-client
server is sent as ``allow_once``: "allow always" would write a token for a server name no
later client has to Cursor's global allowlist.

Example:
    >>> import asyncio
    >>> from cursor_agent_api.config import AgentConfig
    >>> from cursor_agent_api.permissions import Deny
    >>> steer = Steering(AgentConfig(transport="acp", can_use_tool=lambda req: Deny("no")),
    ...                  session_id="s")
    >>> params = {"sessionId": "s", "toolCall": {"toolCallId": "c", "kind": "execute",
    ...           "title": "`rm -rf /`"}, "options": [
    ...           {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
    ...           {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"}]}
    >>> asyncio.run(steer.permission(0, params))
    {'outcome': {'outcome': 'selected', 'optionId': 'reject-once'}}
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
from collections.abc import Callable
from typing import Any

from ..config import AgentConfig
from ..permissions import (
    Accept,
    Allow,
    Answer,
    Cancel,
    Deny,
    PermissionDecision,
    PermissionOption,
    PermissionRequest,
    Plan,
    PlanDecision,
    Question,
    QuestionDecision,
    QuestionOption,
    QuestionRequest,
    Reject,
    Skip,
    decide_by_rules,
)
from ..protocol.acp_mapper import AcpMapper, acp_tool_call
from ..protocol.acp_mapper import obj as _obj
from ..protocol.tools import ToolKind, is_own_tool_server
from .daemon_thread import in_daemon_thread

__all__ = ["CALLBACK_OF", "SKIP_OPTION", "TURN_SESSIONS", "Steering"]

TURN_SESSIONS: contextvars.ContextVar[tuple[object, ...]] = contextvars.ContextVar(
    "cursor_agent_api_turn_sessions", default=())
"""The marks of the conversation sessions whose turns the running code is part of: a
session adds its mark around the start of its turn
(:class:`~cursor_agent_api.sessions.ConversationSession`), the turn keeps what it was started
with (:attr:`Steering.sessions`), and its callbacks run with it (:data:`CALLBACK_OF`). A mark
is a plain object: a context that outlives the turn (a task started meanwhile, the client's
tool server) holds no session."""

CALLBACK_OF: contextvars.ContextVar[Steering | None] = contextvars.ContextVar(
    "cursor_agent_api_callback_of", default=None)
"""The turn's :class:`Steering` whose callback the running code is (on the loop, or on the
callback's daemon thread; a task or thread the callback starts inherits it). A callback
that ``send()``s on one of the turn's sessions while the turn waits on a callback
(:attr:`Steering.pending`) would wait for the turn that waits for it: the session refuses
at once."""

log = logging.getLogger(__name__)

SKIP_OPTION = "__ask_question_skip__"
"""The option id Cursor adds when it asks a question through a permission request."""

class _Cancelled(Exception):
    pass


class _TimedOut(Exception):
    pass


def _list(value: Any) -> list[Any]:
    """``value`` if it is a list, else ``[]``: the agent's JSON is data, of any type."""
    return value if isinstance(value, list) else []


def _options(params: dict[str, Any]) -> list[PermissionOption]:
    out = []
    for item in _list(params.get("options")):
        if isinstance(item, dict) and isinstance(item.get("optionId"), str):
            out.append(PermissionOption(item["optionId"], str(item.get("name") or item["optionId"]),
                                        str(item.get("kind") or "")))
    return out


def _pick(options: list[PermissionOption], *kinds: str) -> PermissionOption | None:
    for kind in kinds:
        for option in options:
            if option.kind == kind and option.option_id != SKIP_OPTION:
                return option
    return None


def _selected(option: PermissionOption) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": option.option_id}}


_CANCELLED = {"outcome": {"outcome": "cancelled"}}


def _resolved(answer: Answer, questions: list[Question]) -> Answer | Skip:
    """``answer`` with option ids only: a value that is no option's id but the label of
    exactly one option of its question stands for that option. A value that is neither, a
    question id the agent did not ask, or more than one option for a single-choice question
    (``allow_multiple`` false) makes the answer a :class:`Skip` (logged as a warning), never an
    answer with that choice silently left out or sent as is.

    Example:
        >>> q = [Question("q1", "Which?", (QuestionOption("small", "Small change"),
        ...                                QuestionOption("full", "Full rewrite")))]
        >>> _resolved(Answer("Small change"), q)
        Answer(choices={'q1': ['small']})
        >>> print(_resolved(Answer("medium"), q).reason)  # doctest: +NORMALIZE_WHITESPACE
        on_question answered 'medium' to question 'q1', which is neither an option id nor the
        label of exactly one option (options: 'small' 'Small change', 'full' 'Full rewrite')
    """
    options: dict[str, list[QuestionOption]] = {}  # two questions with one id: both's options
    # how many options an id takes: one per single-choice question with it (an agent may
    # give two questions one id), any with a multiple-choice one (None)
    takes: dict[str, int | None] = {}
    for q in questions:
        options.setdefault(q.id, []).extend(q.options)
        counted = takes.get(q.id, 0)
        takes[q.id] = None if q.allow_multiple or counted is None else counted + 1
    chosen: dict[str, list[str]] = {}
    for qid, values in answer.selected(questions).items():
        if qid not in options:
            asked = ", ".join(repr(q) for q in options) or "none"
            problem = (f"on_question answered question {qid!r}, which the agent did not ask "
                       f"(asked: {asked})")
            log.warning("%s; the questions are skipped", problem)
            return Skip(problem)
        ids = []
        for value in values:
            by_label = [o.id for o in options[qid] if o.label == value]
            if any(o.id == value for o in options[qid]):
                ids.append(value)
            elif len(by_label) == 1:
                ids.append(by_label[0])
            else:
                offered = ", ".join(f"{o.id!r} {o.label!r}" for o in options[qid]) or "none"
                problem = (f"on_question answered {value!r} to question {qid!r}, which is neither "
                           f"an option id nor the label of exactly one option (options: {offered})")
                log.warning("%s; the questions are skipped", problem)
                return Skip(problem)
        ids = list(dict.fromkeys(ids))  # an option named by its id and its label: one choice
        most = takes.get(qid)
        if most is not None and len(ids) > most:
            named = ", ".join(repr(i) for i in ids)
            what = "one option" if most == 1 else f"{most} options (one per question)"
            problem = f"on_question answered {named} to question {qid!r}, which takes {what}"
            log.warning("%s; the questions are skipped", problem)
            return Skip(problem)
        chosen[qid] = ids
    return Answer(chosen)


class CallbackExited(Exception):
    """A steering callback raised a ``BaseException`` that is not an ``Exception``
    (``sys.exit()``, ``KeyboardInterrupt``): it failed, as one raising an exception does.
    ``str()`` names it as it was raised.

    Example:
        >>> str(CallbackExited(SystemExit(3)))
        'SystemExit: 3'
    """

    def __init__(self, raised: BaseException) -> None:
        text = str(raised)
        super().__init__(f"{type(raised).__name__}: {text}" if text else type(raised).__name__)
        self.raised = raised


def _cancelling() -> bool:
    """Whether the current task is being cancelled (``Task.cancelling()``, Python 3.11+;
    on 3.10, which cannot tell, false).

    Example:
        >>> import asyncio
        >>> async def main() -> bool:
        ...     return _cancelling()
        >>> asyncio.run(main())
        False
    """
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no running loop
        return False
    cancelling = getattr(task, "cancelling", None)
    return bool(cancelling()) if cancelling is not None else False


def _raised(what: str, exc: Exception) -> str:
    """How a failed callback is said: ``can_use_tool raised KeyError: 'x'``."""
    if isinstance(exc, CallbackExited):
        return f"{what} raised {exc}"
    return f"{what} raised {type(exc).__name__}: {exc}"


class Steering:
    """Answers for one turn's requests (see the module's text).

    ``emit`` receives the events of each exchange (the turn delivers them); ``on_cancel``
    is called when a callback answered :class:`~cursor_agent_api.permissions.Cancel`.
    """

    def __init__(self, config: AgentConfig, *, session_id: str = "",
                 mapper: AcpMapper | None = None,
                 emit: Callable[[list[Any]], None] | None = None,
                 on_cancel: Callable[[], None] | None = None) -> None:
        self.config = config
        self.session_id = session_id
        self.mapper = mapper if mapper is not None else AcpMapper(session_id)
        self.emit = emit
        self.on_cancel = on_cancel
        self._cancelled: asyncio.Event | None = None
        self.pending = 0
        self.sessions: tuple[object, ...] = ()
        """The marks of the sessions the turn is part of (:data:`TURN_SESSIONS`)."""

    def _emit(self, events: list[Any]) -> None:
        if self.emit is not None and events:
            self.emit(events)

    def cancel_pending(self) -> None:
        """Answer every pending request ``cancelled`` (and every later one, whatever a rule,
        the mode or a default would have answered)."""
        if self._cancelled is None:
            self._cancelled = asyncio.Event()
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        """True once :meth:`cancel_pending` was called."""
        return self._cancelled is not None and self._cancelled.is_set()

    async def _decide(self, what: str, fn: Callable[[Any], Any], arg: Any) -> Any:
        """``fn(arg)`` (the callback named ``what``), sync (on a daemon thread of its own) or
        async, raced against cancel and the timeout. What it raises is logged, then raised;
        a ``SystemExit`` or ``KeyboardInterrupt`` (any ``BaseException`` that is not an
        ``Exception``) as a :class:`CallbackExited`, so it fails the callback, as an exception
        does, on both faces (it would otherwise end the event loop: the sync client's thread);
        so is an ``asyncio.CancelledError`` the callback raised itself (only a cancel of this
        call, the turn's or the client's, goes through as one)."""
        if self._cancelled is None:
            self._cancelled = asyncio.Event()
        if self._cancelled.is_set():
            raise _Cancelled
        stopped = False  # set as this call is cancelled here (the cancel, the timeout)

        async def call() -> Any:
            # (this task's context; a daemon thread copies it): a turn the callback starts
            # is part of this one's sessions too, and a send on them waits for this turn
            TURN_SESSIONS.set(self.sessions)
            CALLBACK_OF.set(self)
            try:
                if inspect.iscoroutinefunction(fn):
                    return await fn(arg)
                value = await in_daemon_thread(lambda: fn(arg), f"cursor-agent-api {what}")
                return await value if inspect.isawaitable(value) else value
            except Exception:
                raise
            except asyncio.CancelledError as exc:
                if stopped or _cancelling():  # this call is cancelled (the turn, the
                    raise                     # timeout, its loop ending)
                raise CallbackExited(exc) from exc  # the callback's own: it failed
            except BaseException as exc:
                raise CallbackExited(exc) from exc
        work = asyncio.ensure_future(call())
        stop = asyncio.ensure_future(self._cancelled.wait())
        self.pending += 1
        try:
            done, _ = await asyncio.wait({work, stop}, timeout=self.config.permission_timeout,
                                         return_when=asyncio.FIRST_COMPLETED)
        finally:
            self.pending -= 1
            stop.cancel()
        if work in done:
            error = work.exception()
            if error is not None:
                log.warning("%s", _raised(what, error) if isinstance(error, Exception)
                            else f"{what} raised {type(error).__name__}",
                            exc_info=error.raised if isinstance(error, CallbackExited) else error)
            return work.result()
        stopped = True
        work.cancel()
        if stop in done:
            raise _Cancelled
        raise _TimedOut

    # ---- permissions -------------------------------------------------------------------

    def request_of(self, params: dict[str, Any]) -> PermissionRequest:
        """The :class:`PermissionRequest` for a ``session/request_permission``'s params."""
        tool = _obj(params.get("toolCall"))
        state = dict(tool)
        call_id = str(tool.get("toolCallId") or "")
        if self.mapper.knows(call_id):
            # what the turn already knows of the call (its command, its diff) + this frame
            state = {**self.mapper.state_of(call_id),
                     **{k: v for k, v in tool.items() if v not in (None, {}, [])}}
        content = tool.get("content")
        reason = None
        if isinstance(content, list):
            texts = [c["content"]["text"] for c in content if isinstance(c, dict)
                     and isinstance(c.get("content"), dict)
                     and isinstance(c["content"].get("text"), str)]
            reason = "\n".join(texts) or None
        return PermissionRequest(str(params.get("sessionId") or self.session_id),
                                 acp_tool_call(state), _options(params),
                                 str(tool.get("title") or ""), reason, params)

    async def permission(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        """The answer to a ``session/request_permission``."""
        options = _options(params)
        if any(o.option_id == SKIP_OPTION for o in options):
            return await self._question_fallback(rid, params, options)
        self._emit(self.mapper.permission_request(rid, params))
        if self.cancelled:  # the turn is cancelled: no rule or mode approves a call now
            return self._answer_permission(rid, params, None, "cancelled", None)
        request = self.request_of(params)
        cfg = self.config
        own = [f"Mcp({name}:*)" for name in cfg.mcp_servers if is_own_tool_server(name)]
        decision: PermissionDecision | None = decide_by_rules(
            request, mode=cfg.permission_mode if cfg.can_use_tool is None else "ask",
            allowed=[*cfg.allowed_tools, *own], denied=cfg.denied_tools)
        reason: str | None = None
        if decision is None and cfg.can_use_tool is not None:
            try:
                decision = await self._decide("can_use_tool", cfg.can_use_tool, request)
            except _Cancelled:
                return self._answer_permission(rid, params, None, "cancelled", None)
            except _TimedOut:
                decision = Deny(f"no decision within the permission timeout ({cfg.permission_timeout:g} s)")
            except Exception as exc:
                decision = Deny(_raised("can_use_tool", exc))
        if decision is None:
            decision = Deny("no callback decided")
        if isinstance(decision, Cancel):
            if self.on_cancel is not None:
                self.on_cancel()
            return self._answer_permission(rid, params, None, "cancelled", "cancelled by the client")
        if isinstance(decision, Allow):
            remember = decision.remember and not (
                request.kind is ToolKind.MCP and is_own_tool_server(request.mcp_server or ""))
            option = (_pick(options, "allow_always", "allow_once") if remember
                      else _pick(options, "allow_once"))
            if option is None:
                reason = "no matching allow option was offered"
                option = _pick(options, "reject_once", "reject_always")
        else:
            if not isinstance(decision, Deny):
                decision = Deny(f"can_use_tool returned {type(decision).__name__}, "
                                "not Allow, Deny or Cancel")
            reason = decision.reason or None
            option = _pick(options, "reject_once", "reject_always")
        if option is None:
            return self._answer_permission(rid, params, None, "cancelled", reason)
        return self._answer_permission(rid, params, option, option.kind, reason)

    def _answer_permission(self, rid: Any, params: dict[str, Any],
                           option: PermissionOption | None, outcome: str,
                           reason: str | None) -> dict[str, Any]:
        self._emit(self.mapper.permission_decision(
            rid, params, outcome, option.option_id if option else None, reason))
        return _selected(option) if option is not None else dict(_CANCELLED)

    # ---- questions ---------------------------------------------------------------------

    async def _ask(self, request: QuestionRequest) -> QuestionDecision | None:
        """The decision of ``on_question`` (``None``: cancelled)."""
        fn = self.config.on_question
        if self.cancelled:
            return None
        if fn is None:
            return Skip("no on_question callback")
        try:
            answer = await self._decide("on_question", fn, request)
        except _Cancelled:
            return None
        except _TimedOut:
            return Skip(f"no answer within the permission timeout ({self.config.permission_timeout:g} s)")
        except Exception as exc:
            return Skip(_raised("on_question", exc))
        if isinstance(answer, Answer):
            return _resolved(answer, request.questions)
        return answer if isinstance(answer, Skip) else Skip("on_question gave no Answer")

    async def question(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        """The answer to a ``cursor/ask_question``."""
        self._emit(self.mapper.question_request(rid, params))
        questions: list[Question] = []
        for q in _list(params.get("questions")):
            if not isinstance(q, dict):
                continue
            opts = tuple(QuestionOption(str(o.get("id")), str(o.get("label") or o.get("id")))
                         for o in _list(q.get("options")) if isinstance(o, dict))
            questions.append(Question(str(q.get("id") or ""), str(q.get("prompt") or ""), opts,
                                      bool(q.get("allowMultiple"))))
        tool_call_id = params.get("toolCallId")
        request = QuestionRequest(self.session_id, str(params.get("title") or ""), questions,
                                  tool_call_id if isinstance(tool_call_id, str) else None)
        decision = await self._ask(request)
        outcome: dict[str, Any]
        if decision is None:
            outcome = {"outcome": "cancelled"}
        elif isinstance(decision, Answer):
            answers = [{"questionId": qid, "selectedOptionIds": ids}
                       for qid, ids in decision.selected(questions).items()]
            outcome = {"outcome": "answered", "answers": answers}
        else:
            outcome = {"outcome": "skipped", "reason": decision.reason or "skipped"}
        self._emit(self.mapper.question_answer(rid, outcome))
        return {"outcome": outcome}

    async def _question_fallback(self, rid: Any, params: dict[str, Any],
                                 options: list[PermissionOption]) -> dict[str, Any]:
        tool = _obj(params.get("toolCall"))
        title = str(tool.get("title") or "")
        choices = tuple(QuestionOption(o.option_id, o.name) for o in options
                        if o.option_id != SKIP_OPTION)
        question = Question("q1", title, choices)
        self._emit(self.mapper.question_request(rid, {
            "toolCallId": tool.get("toolCallId"), "title": title, "fallback": True,
            "questions": [{"id": "q1", "prompt": title, "allowMultiple": False,
                           "options": [{"id": c.id, "label": c.label} for c in choices]}]}))
        request = QuestionRequest(self.session_id, title, [question],
                                  str(tool.get("toolCallId") or "") or None, fallback=True)
        decision = await self._ask(request)
        option_id = SKIP_OPTION
        outcome: dict[str, Any] = {"outcome": "skipped", "reason": "skipped"}
        if decision is None:
            self._emit(self.mapper.question_answer(rid, {"outcome": "cancelled"}))
            return dict(_CANCELLED)
        if isinstance(decision, Answer):
            ids = decision.selected([question]).get("q1") or []
            picked = next((i for i in ids if any(c.id == i for c in choices)), None)
            if picked is not None:
                option_id = picked
                outcome = {"outcome": "answered",
                           "answers": [{"questionId": "q1", "selectedOptionIds": [picked]}]}
        elif decision.reason:
            outcome["reason"] = decision.reason
        self._emit(self.mapper.question_answer(rid, outcome))
        return {"outcome": {"outcome": "selected", "optionId": option_id}}

    # ---- plans -------------------------------------------------------------------------

    async def plan(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        """The answer to a ``cursor/create_plan`` (no ``on_plan``: accepted, as print mode)."""
        self._emit(self.mapper.plan_request(rid, params))
        todos = params.get("todos")
        tool_call_id = params.get("toolCallId")
        plan = Plan(self.session_id, str(params.get("name") or ""), str(params.get("plan") or ""),
                    str(params.get("overview") or ""),
                    [t for t in todos if isinstance(t, dict)] if isinstance(todos, list) else [],
                    tool_call_id if isinstance(tool_call_id, str) else None)
        fn = self.config.on_plan
        decision: PlanDecision | None = None if self.cancelled else Accept()
        if fn is not None and decision is not None:
            try:
                got = await self._decide("on_plan", fn, plan)
                decision = got if isinstance(got, (Accept, Reject)) else Reject(
                    "on_plan gave neither Accept nor Reject")
            except _Cancelled:
                decision = None
            except _TimedOut:
                decision = Reject(f"no answer within the permission timeout "
                                  f"({self.config.permission_timeout:g} s)")
            except Exception as exc:
                decision = Reject(_raised("on_plan", exc))
        outcome: dict[str, Any]
        if decision is None:
            outcome = {"outcome": "cancelled"}
        elif isinstance(decision, Accept):
            outcome = {"outcome": "accepted"}
        else:
            outcome = {"outcome": "rejected", "reason": decision.reason or "rejected"}
        self._emit(self.mapper.plan_answer(rid, outcome))
        return {"outcome": outcome}

