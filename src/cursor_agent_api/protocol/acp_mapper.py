"""ACP traffic -> the same :class:`~.events.AgentEvent` objects print mode produces.

Sans-I/O. :class:`AcpMapper` follows one prompt turn of one ACP session and writes each
thing the agent does as an event of the stream-json dialect, so :class:`~.transcript.Transcript`,
the command line, the server and users' code fold an ACP turn exactly like a print-mode one:

* ``agent_message_chunk`` -> ``ASSISTANT_DELTA``; ``agent_thought_chunk`` -> ``THINKING_DELTA``
  (closed by ``THINKING_COMPLETED`` when something else comes);
* ``tool_call`` / ``tool_call_update`` -> ``TOOL_CALL_STARTED`` / ``TOOL_CALL_COMPLETED``: the
  ACP ``kind`` (``execute``, ``read``, ``edit``, ``search``, ``fetch``, ``other``) becomes a
  :class:`~.tools.ToolKind`, every later frame of an id enriches the first (a repeated
  ``tool_call`` is an update), ``rawOutput`` and ``diff`` content become the result; a call
  the client rejected is ``REJECTED`` although Cursor reports it ``completed``, and so is a
  shell, read or edit completed with no output at all, taken for a call the agent refused by
  itself (an inference: :data:`NOT_RUN`);
* permission requests, questions and plans -> ``INTERACTION_QUERY`` pairs (``request``, then
  ``response`` with the decision taken);
* ``cursor/update_todos`` and ``cursor/task`` -> tool-call events (todos, the subagent task);
* other updates (``plan``, ``session_info_update``, ``available_commands_update``…) ->
  ``UNKNOWN`` events whose ``data["type"]`` is ``acp:<kind>``;
* the end of the prompt -> a ``result`` event: no usage (ACP reports none), the duration
  measured by the caller.

Every event's ``data`` has ``"transport": "acp"`` (:attr:`AgentEvent.transport`).

Example:
    >>> m = AcpMapper("s1", clock=lambda: 1.0)
    >>> events = m.begin("Say ok") + m.update({"sessionUpdate": "agent_message_chunk",
    ...                                          "content": {"type": "text", "text": "ok"}})
    >>> events += m.end("end_turn", duration_ms=12)
    >>> from .transcript import Transcript
    >>> t = Transcript()
    >>> for e in events:
    ...     _ = t.add(e)
    >>> r = t.to_result()
    >>> r.success, r.result, r.usage, r.duration_ms, r.session_id, events[-1].transport
    (True, 'ok', None, 12, 's1', 'acp')
"""

from __future__ import annotations

import difflib
import json
import re
import time
from collections.abc import Callable
from typing import Any

import orjson

from .events import AgentEvent, EventType, event_from_object
from .limits import SHORTEST_TOO_DEEP, exceeds_depth
from .tools import ToolCall, tool_call_from_event_data

__all__ = ["FENCES_READ", "NOT_RUN", "TRANSPORT", "AcpMapper", "acp_tool_call", "clean_diff",
           "fenced_object", "obj", "tool_call_wire"]

TRANSPORT = "acp"

_KEYS = {
    "execute": "shellToolCall",
    "read": "readToolCall",
    "edit": "editToolCall",
    "delete": "deleteToolCall",
    "move": "editToolCall",
    "fetch": "webFetchToolCall",
}


def obj(value: Any) -> dict[str, Any]:
    """``value`` if it is an object, else an empty one."""
    return value if isinstance(value, dict) else {}


def _text_of(content: Any) -> str:
    """The text of a tool call's ``content`` list (text blocks joined)."""
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for item in content:
        if not isinstance(item, dict):
            continue
        inner = item.get("content")
        if isinstance(inner, dict) and isinstance(inner.get("text"), str):
            parts.append(inner["text"])
    return "\n".join(parts)


def _diff_block(content: Any) -> dict[str, Any] | None:
    if isinstance(content, list):
        for item in content:
            if isinstance(item, dict) and item.get("type") == "diff":
                return item
    return None


def clean_diff(old: Any, new: Any) -> tuple[str, str]:
    """Cursor's malformed new-file diffs repaired: ``"-- /dev/null"`` is no old text, and a
    leading ``"++ b/<path>"`` line is no content (ACP.md §7).

    Example:
        >>> clean_diff("-- /dev/null", "++ b/tmp/a.py\\nprint(1)\\n")
        ('', 'print(1)\\n')
    """
    old_text = old if isinstance(old, str) else ""
    new_text = new if isinstance(new, str) else ""
    if old_text.strip() in ("-- /dev/null", "--- /dev/null"):
        old_text = ""
    first, sep, rest = new_text.partition("\n")
    if sep and (first.startswith("++ b/") or first.startswith("+++ b/")):
        new_text = rest
    return old_text, new_text


def _unified(path: str, old: str, new: str) -> str:
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                 fromfile=f"a/{path.lstrip('/')}" if old else "/dev/null",
                                 tofile=f"b/{path.lstrip('/')}")
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _strip_ticks(title: str) -> str:
    t = title.strip()
    if len(t) >= 2 and t[0] == "`" and t[-1] == "`":
        return t[1:-1]
    return ""


def _mcp_names(title: str) -> tuple[str | None, str | None]:
    """``"MCP: tool"`` or a permission's ``"<server>-<tool>: <tool>"`` -> (server, tool)."""
    head, sep, tail = title.partition(":")
    if not sep:
        return None, None
    tool = tail.strip() or None
    if head.strip() == "MCP":
        return None, tool
    if tool and head.endswith("-" + tool):
        return head[: -len(tool) - 1] or None, tool
    return None, tool


def _mcp_identity(tool: dict[str, Any]) -> dict[str, Any]:
    """An MCP permission request's ``toolCall``: its server, tool and arguments (titled
    ``"<server>-<tool>: <tool>"``, the arguments as a fenced JSON block); ``{}`` otherwise.

    Example:
        >>> _mcp_identity({"title": "docs-find: find",
        ...                "content": [{"type": "content", "content": {"type": "text",
        ...                 "text": '```json\\n{"q": "x"}\\n```'}}]})
        {'providerIdentifier': 'docs', 'toolName': 'find', 'args': {'q': 'x'}}
    """
    server, name = _mcp_names(str(tool.get("title") or ""))
    if server is None:
        return {}
    found: dict[str, Any] = {"providerIdentifier": server, "toolName": name}
    args = fenced_object(_text_of(tool.get("content")))
    if args is not None:
        found["args"] = args
    return found


_FENCE_OPENS = re.compile(r"```(?:json)?[ \t]*\n\s*(?=\{)")
_FENCE_CLOSES = re.compile(r"\s*```")
_SCANNER = json.JSONDecoder()
FENCES_READ = 8
"""How many fenced blocks that open with ``{`` :func:`fenced_object` reads at most. Cursor
writes one; each read may run to the end of the text (hostile text: every fence read would
make the time grow with the square of its length, on the event loop)."""


def fenced_object(text: str) -> dict[str, Any] | None:
    r"""The JSON object of the first fenced block of ``text`` that holds exactly one
    (opened by three backticks and ``json``, or by three backticks alone), else ``None``;
    of the first :data:`FENCES_READ` blocks that open with ``{``.

    The value's end is found by a JSON decoder (``raw_decode``), not by the next fence: an
    argument may hold a Markdown fence of its own. The value itself is read as the codec
    reads a line (orjson, within the depth limit): what is read here can be written again.

    Example:
        >>> fenced_object('```json\n{"text": "see ```py\\nx\\n``` above"}\n```')
        {'text': 'see ```py\nx\n``` above'}
        >>> fenced_object("```json\n[1, 2]\n```"), fenced_object("```json\n{oops\n```")
        (None, None)
    """
    for tried, opening in enumerate(_FENCE_OPENS.finditer(text)):
        if tried == FENCES_READ:
            return None
        start = opening.end()
        try:
            _, end = _SCANNER.raw_decode(text, start)
        except (ValueError, RecursionError):  # not JSON; nested deeper than Python recurses
            continue
        if _FENCE_CLOSES.match(text, end) is None:
            continue  # something after the value, or no closing fence
        block = text[start:end]
        try:
            value = orjson.loads(block)
        except orjson.JSONDecodeError:  # a number orjson cannot hold, …
            continue
        if isinstance(value, dict) and not (len(block) >= SHORTEST_TOO_DEEP
                                            and exceeds_depth(value, block)):
            return value
    return None


_MCP_IDENTITY = ("providerIdentifier", "toolName")
"""The arguments of an MCP call that say whose it is: read from titles only."""

_REPORTING = frozenset({"shellToolCall", "readToolCall", "editToolCall", "deleteToolCall"})
"""The calls that always report what they did when they ran (ACP.md §7): a shell its
``rawOutput`` (``exitCode``, ``stdout``, ``stderr``), a read its ``rawOutput.content`` (or
"Permission denied"), an edit, a create, a move or a delete its diff."""

NOT_RUN = ("did not run: the agent refused it by itself (its mode, a deny rule or a policy); "
           "inferred: ACP reports it completed with no output")
"""The reason of a call of :data:`_REPORTING` whose completion carries no output at all, which
ACP reports ``completed`` like a call that ran (ACP.md §6): it is ``rejected`` (the
client's own rejections keep the client's reason)."""


def tool_call_wire(state: dict[str, Any], *, completed: bool, rejected: str | None = None
                   ) -> dict[str, Any]:
    """The stream-json ``tool_call`` object for an ACP tool call's merged ``state``.

    ``rejected`` is the client's reason when it rejected the call (the agent still says
    ``completed``). A shell, read or edit completed with no output at all (no ``rawOutput``,
    no ``content``) is taken for a call the agent refused by itself: ``rejected`` with
    :data:`NOT_RUN` as the reason, marked ``"inferred": true``.

    Example:
        >>> tool_call_wire({"toolCallId": "c", "kind": "execute", "title": "`ls`",
        ...                 "rawInput": {"command": "ls"}}, completed=False)
        {'shellToolCall': {'args': {'command': 'ls'}, 'description': '`ls`'}}
    """
    kind = state.get("kind")
    title_value = state.get("title")
    title = title_value if isinstance(title_value, str) else ""
    raw_in = obj(state.get("rawInput"))
    raw_out = state.get("rawOutput")
    content = state.get("content")
    call_id = str(state.get("toolCallId") or "")
    text = _text_of(content)
    diff = _diff_block(content)
    locations = state.get("locations")
    loc_path = None
    if isinstance(locations, list) and locations and isinstance(locations[0], dict):
        p = locations[0].get("path")
        loc_path = p if isinstance(p, str) else None
    args: dict[str, Any] = {k: v for k, v in raw_in.items() if not k.startswith("_")}
    key = _KEYS.get(kind) if isinstance(kind, str) else None
    tool_name = raw_in.get("_toolName")
    success: dict[str, Any] = {}
    if key == "shellToolCall":
        command = raw_in.get("command") or _strip_ticks(title)
        if command:
            args["command"] = command
        if isinstance(raw_out, dict):
            success.update(raw_out)
    elif key in ("readToolCall", "editToolCall", "deleteToolCall"):
        path = raw_in.get("path") or (diff or {}).get("path") or loc_path
        if isinstance(path, str):
            args["path"] = path
        if key == "readToolCall":
            if isinstance(raw_out, dict) and isinstance(raw_out.get("content"), str):
                success["content"] = raw_out["content"]
            elif text and "Permission denied" not in text:
                success["content"] = text
        if diff is not None:
            old, new = clean_diff(diff.get("oldText"), diff.get("newText"))
            dpath = str(diff.get("path") or path or "")
            success["diffString"] = _unified(dpath, old, new)
            success["afterFullFileContent"] = new
            success["path"] = dpath
    elif key == "webFetchToolCall" or call_id.startswith("web_fetch_"):
        key = "webFetchToolCall"
        if isinstance(raw_out, dict):
            success.update(raw_out)
        if text:
            success.setdefault("markdown", text)
    elif kind == "search":
        if call_id.startswith("web_search_"):
            key = "webSearchToolCall"
        elif "globPattern" in raw_in or (isinstance(raw_out, dict) and "totalFiles" in raw_out):
            key = "globToolCall"
        else:
            key = "grepToolCall"
        if isinstance(raw_out, dict):
            success.update(raw_out)
        if text:
            success.setdefault("output", text)
    elif tool_name == "updateTodos" or ("todos" in args and kind == "other"):
        key = "updateTodosToolCall"
    elif title.startswith("Create Plan") or tool_name == "createPlan":
        key = "createPlanToolCall"
        if text:
            success["output"] = text
    elif title.startswith("MCP:") or _mcp_names(title)[0] is not None:
        key = "mcpToolCall"
        # Whose call it is comes from the titles only (this frame's, its permission request's:
        # ``_mcp``), never ``rawInput`` (``{}`` for MCP calls in every build seen): a name
        # there would make another server's call pass for the client's own, or dodge a deny.
        for name in _MCP_IDENTITY:
            args.pop(name, None)
        server, tool = _mcp_names(title)
        if tool:
            args["toolName"] = tool
        if server:
            args["providerIdentifier"] = server
        for name, value in obj(state.get("_mcp")).items():  # what its permission request said
            if name in _MCP_IDENTITY:
                args[name] = value
            else:
                args.setdefault(name, value)
        if isinstance(raw_out, dict) and "error" in raw_out:
            inner = {"error": {"message": str(raw_out["error"])}}
            return {key: {"args": args, "result": inner, "description": title}} if completed \
                else {key: {"args": args, "description": title}}
        if text:
            success["content"] = [{"text": {"text": text}}]
    if key is None:
        # other / think / unknown: a generic, named call
        name = tool_name if isinstance(tool_name, str) and tool_name else (title or "tool")
        if name == "task":
            name = "Task"
        out: dict[str, Any] = {"name": name, "arguments": args, "description": title}
        if completed:
            result_value: dict[str, Any] = dict(raw_out) if isinstance(raw_out, dict) else {}
            if text:
                result_value.setdefault("output", text)
            out["result"] = ({"rejected": {"reason": rejected}} if rejected is not None
                             else {"failure": result_value} if state.get("status") == "failed"
                             else {"success": result_value})
        return {"function": out}
    inner_call: dict[str, Any] = {"args": args, "description": title}
    if completed:
        if rejected is not None:
            inner_call["result"] = {"rejected": {"reason": rejected}}
        elif state.get("status") == "failed":
            failure = dict(success)
            if text:
                failure.setdefault("message", text)
            inner_call["result"] = {"failure": failure}
        elif key in _REPORTING and not raw_out and not content:
            inner_call["result"] = {"rejected": {"reason": NOT_RUN, "inferred": True}}
        elif key == "shellToolCall" and isinstance(success.get("exitCode"), int) \
                and success["exitCode"] != 0:
            inner_call["result"] = {"failure": success}
        elif key == "readToolCall" and not success and "Permission denied" in text:
            inner_call["result"] = {"permissionDenied": {"reason": text}}
        else:
            if text and key != "readToolCall" and "output" not in success \
                    and key != "mcpToolCall":
                success.setdefault("output", text)
            inner_call["result"] = {"success": success}
    return {key: inner_call}


def acp_tool_call(state: dict[str, Any]) -> ToolCall:
    """A :class:`~.tools.ToolCall` for an ACP ``toolCall`` object (a permission request's).

    Example:
        >>> tc = acp_tool_call({"toolCallId": "c", "kind": "execute", "title": "`rm -rf /`"})
        >>> tc.kind.value, tc.command
        ('shell', 'rm -rf /')
    """
    data = {"type": "tool_call", "subtype": "started", "call_id": str(state.get("toolCallId") or ""),
            "tool_call": tool_call_wire(state, completed=False)}
    tc = tool_call_from_event_data(data)
    assert tc is not None
    return tc


_MERGED = ("title", "kind", "status", "rawInput", "rawOutput", "content", "locations")


class AcpMapper:
    """One prompt turn of one ACP session -> events (see the module's text).

    ``clock`` gives seconds (``time.time``) for the deltas' ``timestamp_ms``. Each method
    returns the events the frame stands for, in order.
    """

    def __init__(self, session_id: str, *, clock: Callable[[], float] = time.time) -> None:
        self.session_id = session_id
        self._clock = clock
        self._calls: dict[str, dict[str, Any]] = {}
        self._emitted: dict[str, dict[str, Any]] = {}
        self._finished: set[str] = set()
        self._rejected: dict[str, str] = {}
        self._thinking = False
        self._text: list[str] = []
        self._ended = False

    # ---- building events -------------------------------------------------------------

    def _event(self, data: dict[str, Any]) -> AgentEvent:
        data["session_id"] = self.session_id
        data["transport"] = TRANSPORT
        return event_from_object(data)

    def _close_thinking(self) -> list[AgentEvent]:
        if not self._thinking:
            return []
        self._thinking = False
        return [self._event({"type": "thinking", "subtype": "completed"})]

    def knows(self, tool_call_id: str) -> bool:
        """True if this turn has seen a tool call with this id."""
        return tool_call_id in self._calls

    def state_of(self, tool_call_id: str) -> dict[str, Any]:
        """What the frames of this tool call said so far, merged (empty if unseen)."""
        return dict(self._calls.get(tool_call_id, {}))

    @property
    def tool_call_ids(self) -> list[str]:
        """The ids of the tool calls seen, in order."""
        return list(self._calls)

    def begin(self, prompt: str | None = None, *, model: str | None = None,
              cwd: str | None = None) -> list[AgentEvent]:
        """The turn's start: ``system/init`` and the prompt's echo (as print mode writes)."""
        init: dict[str, Any] = {"type": "system", "subtype": "init", "apiKeySource": "acp"}
        if model is not None:
            init["model"] = model
        if cwd is not None:
            init["cwd"] = cwd
        events = [self._event(init)]
        if prompt is not None:
            events.append(self._event({"type": "user", "message": {
                "role": "user", "content": [{"type": "text", "text": prompt}]}}))
        return events

    # ---- session/update ----------------------------------------------------------------

    def update(self, update: dict[str, Any]) -> list[AgentEvent]:
        """One ``session/update``'s ``update`` object -> events."""
        kind = update.get("sessionUpdate")
        if kind == "agent_message_chunk" or kind == "agent_thought_chunk":
            content = update.get("content")
            text = content.get("text") if isinstance(content, dict) else None
            if not isinstance(text, str) or not text:
                return []
            stamp = int(self._clock() * 1000)
            if kind == "agent_thought_chunk":
                self._thinking = True
                return [self._event({"type": "thinking", "subtype": "delta", "text": text,
                                     "timestamp_ms": stamp})]
            events = self._close_thinking()
            self._text.append(text)
            events.append(self._event({"type": "assistant", "timestamp_ms": stamp, "message": {
                "role": "assistant", "content": [{"type": "text", "text": text}]}}))
            return events
        if kind == "tool_call" or kind == "tool_call_update":
            call_id = update.get("toolCallId")
            if not isinstance(call_id, str):
                return []
            return self._close_thinking() + self._tool_frame(call_id, update)
        if kind == "user_message_chunk":
            return []  # the prompt's own echo (or a replay): begin() wrote it once
        if not isinstance(kind, str):
            kind = "unknown"
        return [self._event({"type": f"acp:{kind}", "update": update})]

    def _tool_frame(self, call_id: str, frame: dict[str, Any]) -> list[AgentEvent]:
        state = self._calls.get(call_id)
        if state is None:
            state = self._calls[call_id] = {"toolCallId": call_id}
        for key in _MERGED:
            value = frame.get(key)
            if value is None:
                continue
            if key == "rawInput" and isinstance(value, dict) and not value \
                    and state.get("rawInput"):
                continue  # an empty input never erases a filled one
            if key == "content" and isinstance(value, list) and not value:
                continue
            state[key] = value
        return self._emit(call_id)

    def _emit(self, call_id: str) -> list[AgentEvent]:
        state = self._calls[call_id]
        # an update after completion (a late rawOutput) is the completion again, enriched
        completed = call_id in self._finished or state.get("status") in ("completed", "failed")
        events: list[AgentEvent] = []
        wire = tool_call_wire(state, completed=completed, rejected=self._rejected.get(call_id))
        if completed:
            if call_id not in self._emitted:
                started = tool_call_wire(state, completed=False)
                events.append(self._tool_event(call_id, "started", started))
            self._finished.add(call_id)
        elif self._emitted.get(call_id) == wire:
            return []
        self._emitted[call_id] = wire
        events.append(self._tool_event(call_id, "completed" if completed else "started", wire))
        return events

    def _tool_event(self, call_id: str, subtype: str, wire: dict[str, Any]) -> AgentEvent:
        stamp = int(self._clock() * 1000)
        return self._event({"type": "tool_call", "subtype": subtype, "call_id": call_id,
                            "tool_call": wire, "timestamp_ms": stamp})

    # ---- exchanges ---------------------------------------------------------------------

    def _query(self, subtype: str, qtype: str, body: dict[str, Any], **extra: Any) -> AgentEvent:
        data: dict[str, Any] = {"type": "interaction_query", "subtype": subtype,
                                "query_type": qtype}
        data["query" if subtype == "request" else "response"] = body
        data.update(extra)
        return self._event(data)

    def permission_request(self, rid: Any, params: dict[str, Any]) -> list[AgentEvent]:
        """A ``session/request_permission`` as it arrives: the call it is about (opened or
        enriched), then an ``INTERACTION_QUERY`` request."""
        tool = obj(params.get("toolCall"))
        call_id = str(tool.get("toolCallId") or "")
        events = self._close_thinking()
        merged = {k: v for k, v in tool.items() if k != "status"}  # says pending, always
        mcp = _mcp_identity(tool)
        if call_id and mcp:  # the only frame that names an MCP call's server and arguments
            self._calls.setdefault(call_id, {"toolCallId": call_id})["_mcp"] = mcp
        if call_id and (call_id not in self._calls or not self._calls[call_id].get("rawInput")):
            events += self._tool_frame(call_id, merged)
        args = tool_call_wire({**self._calls.get(call_id, {}), **merged}, completed=False)
        key = next(iter(args))
        body = {"id": rid, "permissionRequestQuery": {
            "args": {**args[key].get("args", {}), "toolCallId": call_id},
            "title": tool.get("title"), "reason": _text_of(tool.get("content")) or None,
            "options": params.get("options")}}
        events.append(self._query("request", "permissionRequestQuery", body))
        return events

    def permission_decision(self, rid: Any, params: dict[str, Any], outcome: str,
                            option_id: str | None, reason: str | None = None) -> list[AgentEvent]:
        """The answer sent: ``outcome`` is the chosen option's kind (``allow_once``,
        ``allow_always``, ``reject_once``…) or ``cancelled``. A call not allowed is
        remembered: its completion becomes ``REJECTED``."""
        tool = obj(params.get("toolCall"))
        call_id = str(tool.get("toolCallId") or "")
        allowed = outcome.startswith("allow")
        events: list[AgentEvent] = []
        if not allowed and call_id:
            self._rejected[call_id] = reason or (
                "cancelled" if outcome == "cancelled" else "rejected by the client")
            if call_id in self._finished:
                events += self._emit(call_id)
        case = "approved" if allowed else ("cancelled" if outcome == "cancelled" else "rejected")
        body: dict[str, Any] = {"id": rid, case: {"reason": reason} if reason else {}}
        events.append(self._query("response", "permissionRequestQuery", body, decision=outcome,
                                  option_id=option_id, tool_call_id=call_id))
        return events

    def question_request(self, rid: Any, params: dict[str, Any]) -> list[AgentEvent]:
        """A ``cursor/ask_question`` (or its permission-request fallback) as it arrives."""
        args = {k: v for k, v in params.items()}
        return [self._query("request", "askQuestionInteractionQuery",
                            {"id": rid, "askQuestionInteractionQuery": {"args": args}})]

    def question_answer(self, rid: Any, outcome: dict[str, Any]) -> list[AgentEvent]:
        """The question's answer (``answered`` / ``skipped`` / ``cancelled``)."""
        case = str(outcome.get("outcome") or "skipped")
        detail = {k: v for k, v in outcome.items() if k != "outcome"}
        return [self._query("response", "askQuestionInteractionQuery",
                            {"id": rid, case: detail}, decision=case)]

    def plan_request(self, rid: Any, params: dict[str, Any]) -> list[AgentEvent]:
        """A ``cursor/create_plan`` as it arrives."""
        return [self._query("request", "createPlanRequestQuery",
                            {"id": rid, "createPlanRequestQuery": {"args": dict(params)}})]

    def plan_answer(self, rid: Any, outcome: dict[str, Any]) -> list[AgentEvent]:
        """The plan's answer (``accepted`` / ``rejected`` / ``cancelled``)."""
        case = str(outcome.get("outcome") or "rejected")
        detail = {k: v for k, v in outcome.items() if k != "outcome"}
        return [self._query("response", "createPlanRequestQuery", {"id": rid, case: detail},
                            decision=case)]

    def todos(self, params: dict[str, Any]) -> list[AgentEvent]:
        """``cursor/update_todos``: the todo list, as an ``updateTodosToolCall``."""
        call_id = str(params.get("toolCallId") or f"todos-{len(self._calls)}")
        todos = params.get("todos") if isinstance(params.get("todos"), list) else []
        frame = {"toolCallId": call_id, "kind": "other",
                 "rawInput": {"_toolName": "updateTodos", "todos": todos,
                              "merge": params.get("merge")}}
        if call_id not in self._calls:
            frame["title"] = "Update todos"
        return self._close_thinking() + self._tool_frame(call_id, frame)

    def task(self, params: dict[str, Any]) -> list[AgentEvent]:
        """``cursor/task``: a subagent task's description, as a ``Task`` call."""
        call_id = str(params.get("toolCallId") or f"task-{len(self._calls)}")
        raw = {"_toolName": "task", **{k: v for k, v in params.items() if k != "toolCallId"}}
        frame: dict[str, Any] = {"toolCallId": call_id, "kind": "other", "rawInput": raw}
        if call_id not in self._calls:
            frame["title"] = str(params.get("description") or "Task")
        return self._close_thinking() + self._tool_frame(call_id, frame)

    def note(self, kind: str, **fields: Any) -> AgentEvent:
        """An ``UNKNOWN`` event of this library's own (``acp:context_reset``…)."""
        return self._event({"type": f"acp:{kind}", **fields})

    # ---- the end -----------------------------------------------------------------------

    def end(self, stop_reason: str | None, *, duration_ms: int | None,
            error: str | None = None) -> list[AgentEvent]:
        """The prompt's answer: ``stopReason`` ``end_turn`` is a success; ``cancelled``,
        ``refusal``, ``max_tokens``… and ``error`` are error results. Usage is ``None``."""
        if self._ended:
            return []
        self._ended = True
        events = self._close_thinking()
        data: dict[str, Any] = {"type": "result", "duration_ms": duration_ms,
                                "duration_api_ms": duration_ms, "stop_reason": stop_reason}
        if stop_reason == "end_turn" and error is None:
            data.update(subtype="success", is_error=False, result="".join(self._text))
        else:
            message = error or (
                "the turn was cancelled (session/cancel); the session goes on"
                if stop_reason == "cancelled" else f"the turn stopped: {stop_reason}")
            data.update(subtype="error", is_error=True, error=message)
        events.append(self._event(data))
        assert events[-1].type in (EventType.RESULT_SUCCESS, EventType.RESULT_ERROR)
        return events
