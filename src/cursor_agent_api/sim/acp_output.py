"""ACP's output: the deterministic agent's turn as ``session/update`` notifications, and its
decisions asked of the client (ACP.md §5-§9).

* thoughts and text -> ``agent_thought_chunk`` / ``agent_message_chunk``, a word at a time;
* a tool call -> ``tool_call`` (``pending``) with an ACP ``kind``, enriched after it starts
  (a ``tool_call_update``, or a second ``tool_call`` with the same id: the ``enrich`` style),
  ``in_progress`` when it runs, then ``completed`` with ``rawOutput`` (shell: ``exitCode``,
  ``stdout``, ``stderr``) or a ``diff`` (edits); a rejected call ends ``completed`` with no
  output, as the real builds do (``failed`` under the ``reject-failed`` fault), and does not run;
* a call a deny rule names (``permissions.deny`` of ``<config>/cli-config.json`` or the
  project's ``.cursor/cli.json``: ``Shell(*)``, ``Read(**)``, ``Write(**)``, …;
  :func:`~.mcp_config.load_rules`) is refused unasked, even when the session is forced, and
  ends ``completed`` with no output (a read: "Permission denied");
* shell, web and (with ``ask_edits``) edit calls ask ``session/request_permission`` unless the
  session is forced or the call is allow-listed (``permissions.allow``: ``Shell(ls)``,
  ``WebFetch(example.com)``, ``WebSearch(term)``, ``Write(path)``; ``allow-always`` appends
  one to ``<config>/cli-config.json``). In ``ask`` mode they are refused unasked;
* ``ask me …`` -> ``cursor/ask_question``; answered ``-32601``, one permission request per
  question with the ``__ask_question_skip__`` option;
* a plan (plan mode) -> a ``plan`` update, a ``Create Plan: …`` tool call and
  ``cursor/create_plan``; answered ``-32601``, the plan is written to
  ``.cursor/plans/<name>-<id>.plan.md`` and the turn goes on;
* todos -> ``cursor/update_todos`` (a request with an id and no session id, not awaited);
* a subagent Task -> a ``Task: …`` tool call, then ``cursor/task`` (same form) once it completes;
* MCP calls (``mcpToolCall``, for an executor with ``gate="mcp"``) -> kind ``other``, title
  ``MCP: tool``, permission title ``<server>-<tool>: <tool>`` with the args as fenced JSON.

Example:
    >>> acp_kind("shellToolCall"), acp_kind("globToolCall"), acp_kind("updateTodosToolCall")
    ('execute', 'search', 'other')
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from . import workspace as tools
from .context import ASK_MODE_REFUSAL, Decision, TurnContext, split_text
from .executors import EXECUTORS, QUESTIONS, Done, plan_markdown
from .ids import derived_uuid
from .output import Frame, ToolStep, rules_verdict

ALLOW_ONCE, ALLOW_ALWAYS, REJECT_ONCE = "allow-once", "allow-always", "reject-once"
ASK_SKIP = "__ask_question_skip__"
PERMISSION_OPTIONS: list[dict[str, str]] = [
    {"optionId": ALLOW_ONCE, "name": "Allow once", "kind": "allow_once"},
    {"optionId": ALLOW_ALWAYS, "name": "Allow always", "kind": "allow_always"},
    {"optionId": REJECT_ONCE, "name": "Reject", "kind": "reject_once"},
]
"""Exactly the three options of the real builds (never ``reject_always``)."""
AFTER_CANCEL_COMMAND = "touch after-cancel.txt"
"""The call the ``ask-after-cancel`` fault asks about after the cancel (run if allowed)."""

_KINDS = {
    "lsToolCall": "read",
    "readToolCall": "read",
    "grepToolCall": "search",
    "globToolCall": "search",
    "editToolCall": "edit",
    "deleteToolCall": "edit",
    "shellToolCall": "execute",
    "webFetchToolCall": "fetch",
    "webSearchToolCall": "search",
    "mcpToolCall": "other",
}
_GENERIC_TITLES = {
    "execute": "Terminal",
    "read": "Read File",
    "edit": "Edit File",
    "search": "Find",
    "fetch": "Fetch",
    "other": "Tool",
}


def acp_kind(kind_key: str) -> str:
    """The ACP ``kind`` of a print-mode call key (``other`` for todos, questions, plans).

    Example:
        >>> acp_kind("webFetchToolCall")
        'fetch'
    """
    return _KINDS.get(kind_key, "other")


class TurnCancelled(Exception):
    """The client cancelled the turn (``session/cancel``)."""


class AcpHost(Protocol):
    """What :class:`AcpOutput` needs of the server: see :mod:`.acp`."""

    def update(self, session_id: str, update: dict[str, Any]) -> None:
        """Send one ``session/update``."""
        ...

    def ask(self, method: str, params: dict[str, Any]) -> tuple[str, Any]:
        """Send a request and wait: ``("result", r)``, ``("error", e)`` or ``("cancelled", None)``."""
        ...

    def tell(self, method: str, params: dict[str, Any]) -> None:
        """Send a request without waiting for its answer (fire-and-forget)."""
        ...

    def check_cancel(self) -> None:
        """Raise :class:`TurnCancelled` when the turn was cancelled."""
        ...

    def crash_point(self) -> None:
        """Die here when the ``crash`` fault is on."""
        ...

    def remember(self, token: str) -> None:
        """Allow ``token`` from now on (``allow-always``)."""
        ...


@dataclass(slots=True)
class AcpSessionState:
    """What a turn's output needs to know of its session."""

    session_id: str
    mode: str = "agent"
    force: bool = False
    ask_edits: bool = False
    enrich: str = "update"
    reject_completed: bool = True
    fetches: int = 0
    live: dict[str, dict[str, Any]] = field(default_factory=dict)


class AcpOutput:
    """A :class:`~.output.TurnOutput` that writes ACP frames through an :class:`AcpHost`.

    It yields no frames: it writes them itself (ACP interleaves the agent's requests).
    :attr:`updates` keeps what was sent, for the session's replay.
    """

    def __init__(self, ctx: TurnContext, state: AcpSessionState, host: AcpHost) -> None:
        self.ctx = ctx
        self.state = state
        self.host = host
        self.updates: list[dict[str, Any]] = []
        self.text: list[str] = []
        self._acp_ids: dict[str, str] = {}
        self._tools_started = 0

    # ---- plumbing -----------------------------------------------------------------------------

    def _send(self, update: dict[str, Any]) -> None:
        self.host.check_cancel()
        self._sent(update)

    def _sent(self, update: dict[str, Any]) -> None:
        self.host.update(self.state.session_id, update)
        self.updates.append(update)

    def _chunks(self, kind: str, text: str) -> None:
        for piece in split_text(text):
            self._send({"sessionUpdate": kind, "content": {"type": "text", "text": piece}})

    def acp_id(self, step: ToolStep) -> str:
        """The call's ACP id: ``call-<uuid>-<k>\\nfc_<hex>_<k>`` (with the literal newline),
        ``web_fetch_<n>`` or ``web_search_<id>`` (ACP.md §7)."""
        if step.call_id in self._acp_ids:
            return self._acp_ids[step.call_id]
        if step.kind == "webFetchToolCall":
            acp = f"web_fetch_{self.state.fetches}"
            self.state.fetches += 1
        elif step.kind == "webSearchToolCall":
            acp = "web_search_" + derived_uuid("ws", step.call_id).replace("-", "")[:24]
        else:
            uid = derived_uuid("acp", self.ctx.ids.request_id, step.call_id)
            hexes = derived_uuid("fc", step.call_id).replace("-", "")
            acp = f"call-{uid}-0\nfc_{hexes}_0"
        self._acp_ids[step.call_id] = acp
        return acp

    # ---- TurnOutput -----------------------------------------------------------------------------

    def begin(self) -> Iterator[Frame]:
        return iter(())

    def thinking(self, text: str) -> Iterator[Frame]:
        self._chunks("agent_thought_chunk", text)
        return iter(())

    def say(self, text: str, model_call_id: str | None) -> Iterator[Frame]:
        if model_call_id is None and not self._tools_started:
            self.host.crash_point()
        self._chunks("agent_message_chunk", text)
        self.text.append(text)
        return iter(())

    def tool_started(self, step: ToolStep) -> Iterator[Frame]:
        kind = acp_kind(step.kind)
        call_id = self.acp_id(step)
        full = self._enriched(step)
        generic: dict[str, Any] = {"title": _GENERIC_TITLES[kind], "rawInput": {}}
        early = kind in ("execute", "read", "fetch", "other")
        first = full if (self.state.enrich == "update" and early) else generic
        start = {"sessionUpdate": "tool_call", "toolCallId": call_id, "kind": kind, "status": "pending"}
        self._send({**start, **first})
        if first is not full:
            if self.state.enrich == "tool_call":
                self._send({**start, **full})
            else:
                self._send({"sessionUpdate": "tool_call_update", "toolCallId": call_id, **full})
        self._tools_started += 1
        self.host.crash_point()
        return iter(())

    def _enriched(self, step: ToolStep) -> dict[str, Any]:
        a, args = step.action, step.args
        kind = step.kind
        path = str(args.get("path", "")) if isinstance(args.get("path"), str) else ""
        if kind == "shellToolCall":
            return {"title": f"`{a.target}`", "rawInput": {"command": a.target}}
        if kind in ("readToolCall", "lsToolCall"):
            target = path or str(self.ctx.workspace)
            return {"title": target, "rawInput": {"path": target}, "locations": [{"path": target}]}
        if kind in ("grepToolCall", "globToolCall"):
            where = str(self.ctx.workspace)
            return {"title": "Find", "rawInput": {"pattern": a.target, "path": where}}
        if kind in ("editToolCall", "deleteToolCall"):
            title = "Edit File" if kind == "editToolCall" else "Delete File"
            return {"title": title, "rawInput": {"path": path}, "locations": [{"path": path}]}
        if kind == "webFetchToolCall":
            return {"title": f"Fetch {a.target}", "rawInput": {"url": a.target}}
        if kind == "webSearchToolCall":
            return {"title": f"Search the web: {a.target}", "rawInput": {"searchTerm": a.target}}
        if kind == "updateTodosToolCall":
            return {"title": "Update Todos", "rawInput": {"_toolName": "updateTodos"}}
        if kind == "askQuestionToolCall":
            return {"title": "Ask Question", "rawInput": {"_toolName": "askQuestion"}}
        if kind == "createPlanToolCall":
            return {"title": f"Create Plan: {a.target}", "rawInput": {"_toolName": "createPlan"}}
        if kind == "taskToolCall":
            return {"title": f"Task: {a.target}", "rawInput": {"_toolName": "task"}}
        if kind == "mcpToolCall":
            return {"title": f"MCP: {args.get('toolName', '')}", "rawInput": {}}
        return {"title": kind, "rawInput": {}}

    def decide(self, step: ToolStep) -> Decision:
        self.host.check_cancel()
        if step.kind == "askQuestionToolCall":
            decision = self._ask_question(step)
        elif step.kind == "createPlanToolCall":
            decision = self._create_plan(step)
        elif step.kind == "updateTodosToolCall":
            self._update_todos(step)
            decision = Decision(True)
        else:
            decision = self._permission(step)
        self.host.check_cancel()
        if decision.allowed or decision.answers is not None:
            self._send(
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": self.acp_id(step),
                    "status": "in_progress",
                }
            )
        return decision

    def tool_completed(self, step: ToolStep, done: Done) -> Iterator[Frame]:
        call_id = self.acp_id(step)
        update: dict[str, Any] = {"sessionUpdate": "tool_call_update", "toolCallId": call_id}
        if done.rejected and step.kind not in ("askQuestionToolCall", "createPlanToolCall"):
            update["status"] = "completed" if self.state.reject_completed else "failed"
            if done.texts:  # a denied read says "Permission denied" (ACP.md §7)
                update["content"] = [
                    {"type": "content", "content": {"type": "text", "text": t}} for t in done.texts
                ]
            self._send(update)
            return iter(())
        update["status"] = "completed"
        if done.diff is not None:
            path, old, new = done.diff
            if not old and step.kind == "editToolCall":
                # new files arrive malformed on the real builds (ACP.md §7): kept for clients to strip
                diff = {
                    "type": "diff",
                    "path": path,
                    "oldText": "-- /dev/null",
                    "newText": f"++ b/{path}\n{new}",
                }
            else:
                diff = {"type": "diff", "path": path, "oldText": old, "newText": new}
            update["content"] = [diff]
        elif done.texts:
            update["content"] = [
                {"type": "content", "content": {"type": "text", "text": t}} for t in done.texts
            ]
        if done.raw_output is not None:
            update["rawOutput"] = done.raw_output
        self._send(update)
        if step.kind == "taskToolCall":
            # once, after the Task tool completes; a request with an id, no session id (ACP.md §9)
            params = {"toolCallId": call_id, **step.args, "model": self.ctx.model}
            self.host.tell("cursor/task", params)
        return iter(())

    def end(self, text: str, usage: dict[str, int], duration_ms: int) -> Iterator[Frame]:
        return iter(())  # no usage in ACP: the prompt's answer is the server's

    # ---- decisions ------------------------------------------------------------------------------

    def _permission(self, step: ToolStep) -> Decision:
        gate = EXECUTORS[step.kind].gate
        token, verdict = rules_verdict(self.ctx, step, self.state.force)
        if verdict is not None and verdict.kind == "deny":
            return Decision.deny(verdict.rule)  # not asked, even under --force (ACP.md §6)
        if gate is None or (gate == "edit" and not self.state.ask_edits and self.state.mode != "ask"):
            return Decision(True)
        if self.state.mode == "ask" and gate in ("shell", "edit"):
            return Decision.reject(ASK_MODE_REFUSAL)
        if verdict is None or verdict.kind == "allow":
            return Decision(True)
        assert token is not None
        # the reason names the command, domain or term alone, other tokens whole (ACP.md §6)
        shown = token.arg if token.tool in ("Shell", "WebFetch", "WebSearch") else str(token)
        title = self._enriched(step)["title"]
        content = [{"type": "content", "content": {"type": "text", "text": f"Not in allowlist: {shown}"}}]
        if step.kind == "mcpToolCall":  # ACP.md §7: "<server>-<tool>: <tool>", the args as fenced JSON
            title = f"{step.args.get('name', '')}: {step.args.get('toolName', '')}"
            fenced = "```json\n" + orjson.dumps(step.args.get("args", {})).decode() + "\n```"
            content.append({"type": "content", "content": {"type": "text", "text": fenced}})
        tool_call: dict[str, Any] = {
            "toolCallId": self.acp_id(step),
            "title": title,
            "kind": acp_kind(step.kind),
            "status": "pending",
            "content": content,
        }
        params = {"sessionId": self.state.session_id, "toolCall": tool_call, "options": PERMISSION_OPTIONS}
        status, answer = self.host.ask("session/request_permission", params)
        picked = _selected(answer) if status == "result" else None
        if picked == ALLOW_ALWAYS:
            self.host.remember(str(token))
        if picked in (ALLOW_ONCE, ALLOW_ALWAYS):
            return Decision(True)
        return Decision.reject("User Rejected")

    def _ask_question(self, step: ToolStep) -> Decision:
        params = {
            "toolCallId": self.acp_id(step),
            "title": step.args.get("title", ""),
            "questions": QUESTIONS,
        }
        status, answer = self.host.ask("cursor/ask_question", params)
        if status == "error" and _code(answer) == -32601:
            return self._ask_by_permission(step)
        outcome = answer.get("outcome") if status == "result" and isinstance(answer, dict) else None
        if not isinstance(outcome, dict) or outcome.get("outcome") != "answered":
            return Decision(False, reason=str((outcome or {}).get("reason") or "skipped"))
        picked: list[str] = []
        for item in outcome.get("answers") or []:
            if isinstance(item, dict):
                picked += [str(x) for x in item.get("selectedOptionIds") or []]
        return Decision(True, answers=tuple(picked))

    def _ask_by_permission(self, step: ToolStep) -> Decision:
        """The fallback of builds whose client answers ``cursor/ask_question`` with ``-32601``."""
        picked: list[str] = []
        for question in QUESTIONS:
            if question.get("allowMultiple"):
                continue  # multi-select questions are dropped by the fallback
            options = [
                {"optionId": o["id"], "name": o["label"], "kind": "allow_once"} for o in question["options"]
            ]
            options.append({"optionId": ASK_SKIP, "name": "Skip", "kind": "reject_once"})
            tool_call = {
                "toolCallId": self.acp_id(step),
                "title": question["prompt"],
                "kind": "other",
                "status": "pending",
            }
            params = {"sessionId": self.state.session_id, "toolCall": tool_call, "options": options}
            status, answer = self.host.ask("session/request_permission", params)
            choice = _selected(answer) if status == "result" else None
            if choice is None or choice == ASK_SKIP:
                return Decision(False, reason="skipped")
            picked.append(choice)
        return Decision(True, answers=tuple(picked))

    def _create_plan(self, step: ToolStep) -> Decision:
        a = step.action
        steps = a.text.split("\n")
        entries = [{"content": s, "priority": "medium", "status": "pending"} for s in steps]
        self._send({"sessionUpdate": "plan", "entries": entries})
        todos = [{"id": f"step-{i}", "content": s, "status": "pending"} for i, s in enumerate(steps, 1)]
        params = {
            "toolCallId": self.acp_id(step),
            "name": a.target,
            "overview": f"{len(steps)} step{'s' if len(steps) != 1 else ''}",
            "plan": plan_markdown(a),
            "todos": todos,
            "isProject": False,
            "phases": [],
        }
        status, answer = self.host.ask("cursor/create_plan", params)
        if status == "error" and _code(answer) == -32601:
            return Decision(True, fallback=True)
        outcome = answer.get("outcome") if status == "result" and isinstance(answer, dict) else None
        if isinstance(outcome, dict) and outcome.get("outcome") == "accepted":
            return Decision(True)
        reason = outcome.get("reason") if isinstance(outcome, dict) else None
        return Decision.reject(str(reason or "Plan rejected"))

    def _update_todos(self, step: ToolStep) -> None:
        status = {"TODO_STATUS_IN_PROGRESS": "in_progress", "TODO_STATUS_PENDING": "pending"}
        todos = [
            {
                "id": str(t.get("id")),
                "content": str(t.get("content")),
                "status": status.get(str(t.get("status")), "pending"),
            }
            for t in step.args.get("todos", [])
            if isinstance(t, dict)
        ]
        # a request with an id and no session id, not awaited (ACP.md §9)
        self.host.tell(
            "cursor/update_todos", {"toolCallId": self.acp_id(step), "todos": todos, "merge": False}
        )

    def after_cancel(self) -> None:
        """The ``ask-after-cancel`` fault, once the turn was cancelled: a build still finishing
        a step asks about one more call (:data:`AFTER_CANCEL_COMMAND`), waits for the answer
        (or another cancel) and runs the call if it was allowed."""
        command = AFTER_CANCEL_COMMAND
        call_id = f"call-{derived_uuid('after-cancel', self.ctx.ids.request_id)}-0"
        call = {"toolCallId": call_id, "title": f"`{command}`", "kind": "execute", "status": "pending"}
        self._sent({"sessionUpdate": "tool_call", **call, "rawInput": {"command": command}})
        reason = {"type": "content", "content": {"type": "text", "text": "Not in allowlist: touch"}}
        params = {"sessionId": self.state.session_id, "toolCall": {**call, "content": [reason]},
                  "options": PERMISSION_OPTIONS}
        status, answer = self.host.ask("session/request_permission", params)
        done: dict[str, Any] = {"sessionUpdate": "tool_call_update", "toolCallId": call_id,
                                "status": "completed"}
        if status == "result" and _selected(answer) in (ALLOW_ONCE, ALLOW_ALWAYS):
            self._sent({"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "in_progress"})
            _, code, out, err, _ = tools.run_shell(self.ctx.workspace, command)
            done["rawOutput"] = {"exitCode": code, "stdout": out, "stderr": err}
        self._sent(done)

    # ---- replay ---------------------------------------------------------------------------------

    def replay_updates(self, turn: int) -> list[dict[str, Any]]:
        """This turn as ``session/load`` replays it: the prompt, chunks coalesced, each tool call
        once in its final state under a replay-local id (ACP.md §10)."""
        out: list[dict[str, Any]] = [
            {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": self.ctx.prompt}}
        ]
        calls: dict[str, dict[str, Any]] = {}
        for u in self.updates:
            kind = u.get("sessionUpdate")
            if kind in ("agent_thought_chunk", "agent_message_chunk"):
                last = out[-1]
                if last.get("sessionUpdate") == kind:
                    last["content"] = {"type": "text", "text": last["content"]["text"] + u["content"]["text"]}
                else:
                    out.append({"sessionUpdate": kind, "content": dict(u["content"])})
            elif kind in ("tool_call", "tool_call_update"):
                live_id = str(u.get("toolCallId"))
                call = calls.get(live_id)
                if call is None:
                    call = {"sessionUpdate": "tool_call", "toolCallId": f"replay-{turn}-{len(calls)}"}
                    calls[live_id] = call
                    out.append(call)
                call.update({k: v for k, v in u.items() if k not in ("sessionUpdate", "toolCallId")})
            elif kind == "plan":
                out.append(dict(u))
        return out


def _selected(answer: Any) -> str | None:
    outcome = answer.get("outcome") if isinstance(answer, dict) else None
    if isinstance(outcome, dict) and outcome.get("outcome") == "selected":
        option = outcome.get("optionId")
        return option if isinstance(option, str) else None
    return None


def _code(error: Any) -> int | None:
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, int) else None
