"""Print mode's output: the turn as stream-json objects (built by :mod:`.wire`), in the
shapes and order of current builds.

Print mode decides alone: a call a deny rule names (``permissions.deny``,
:func:`~.mcp_config.load_rules`) ends ``permissionDenied``, even with ``--force``; without
``--force`` a shell command not allow-listed is rejected (recording 07),
a web fetch is started then rejected through an ``interaction_query`` pair (recording 04),
a web search gets only the query pair and a completion with no ``started`` (recording 03),
and a question is skipped (recording 05). Everything else runs. With ``--mode ask`` edits and
shell commands are refused (no recording: the simulator's reading of ACP.md's "no edits or
command execution"); with ``--mode plan`` the planner writes a plan instead of editing.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> from .agent import Agent
    >>> from .ids import Clock, TurnIds
    >>> ctx = TurnContext("c1", Path(tempfile.mkdtemp()), "Auto", "run `ls`", False, False, [],
    ...                   Clock("x"), TurnIds("c1", 0, "run `ls`", call_style="tool"))
    >>> [e["type"] for e in Agent(ctx).run(StreamJsonOutput(ctx))][:2]
    ['system', 'user']
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from . import wire
from .context import ASK_MODE_REFUSAL, Decision, TurnContext, split_text
from .executors import ASK_SKIPPED, EXECUTORS, Done
from .output import Frame, ToolStep, rules_verdict


class StreamJsonOutput:
    """A :class:`~.output.TurnOutput` that yields stream-json objects."""

    def __init__(self, ctx: TurnContext) -> None:
        self.ctx = ctx
        self._query_id = 0

    def begin(self) -> Iterator[Frame]:
        ctx = self.ctx
        sid = ctx.session_id
        yield wire.system_init(sid, str(ctx.workspace), ctx.model, api_key_source=ctx.api_key_source)
        yield wire.user(sid, ctx.prompt)

    def thinking(self, text: str) -> Iterator[Frame]:
        sid, clock = self.ctx.session_id, self.ctx.clock
        words = split_text(text)
        for i in range(0, len(words), 3):  # a few words per delta, as recorded
            yield wire.thinking_delta(sid, "".join(words[i : i + 3]), clock.now_ms())
        yield wire.thinking_completed(sid, clock.now_ms())

    def say(self, text: str, model_call_id: str | None) -> Iterator[Frame]:
        sid, clock = self.ctx.session_id, self.ctx.clock
        if self.ctx.partial:
            for piece in split_text(text):
                yield wire.assistant_delta(sid, piece, clock.now_ms())
        if model_call_id is not None:
            yield wire.assistant_segment(sid, text, model_call_id, clock.now_ms())
        else:
            yield wire.assistant_final(sid, text)

    def tool_started(self, step: ToolStep) -> Iterator[Frame]:
        ctx = self.ctx
        if step.kind == "askQuestionToolCall":
            yield from self._ask_queries(step.call_id, step.args)
        step.started_ms = ctx.clock.now_ms()
        if step.kind == "webSearchToolCall" and not ctx.force:
            # recording 03: the query pair, then a completion that no `started` preceded
            yield from self._queries("webSearchRequestQuery", step.args, skip_approval=None)
            return
        yield wire.tool_call_started(
            ctx.session_id,
            step.call_id,
            step.kind,
            step.args,
            model_call_id=step.model_call_id,
            started_at_ms=step.started_ms,
            timestamp_ms=ctx.clock.now_ms(),
            description=step.description,
        )
        if step.kind == "webFetchToolCall" and not ctx.force:
            yield from self._queries("webFetchRequestQuery", step.args, skip_approval=False)

    def decide(self, step: ToolStep) -> Decision:
        ctx = self.ctx
        if step.kind == "askQuestionToolCall":
            return Decision(False, reason=ASK_SKIPPED)
        gate = EXECUTORS[step.kind].gate
        if gate == "web" and not ctx.force:
            return Decision.reject("User Rejected")  # its interaction_query said so already
        _, verdict = rules_verdict(ctx, step, ctx.force)
        if verdict is not None and verdict.kind == "deny":
            return Decision.deny(verdict.rule)  # even with --force
        if ctx.mode == "ask" and gate in ("shell", "edit"):
            return Decision.reject(ASK_MODE_REFUSAL)  # even with --force
        if gate == "shell" and (verdict is None or verdict.kind != "allow"):
            return Decision.reject("")  # recording 07: no --force, not allow-listed
        # edits and reads run unless denied; an MCP call's allowlist is the MCP client's
        return Decision(True)

    def tool_completed(self, step: ToolStep, done: Done) -> Iterator[Frame]:
        ctx = self.ctx
        keep = "rejected" not in done.outcome or step.kind == "askQuestionToolCall"
        completed = ctx.clock.now_ms()
        yield wire.tool_call_completed(
            ctx.session_id,
            step.call_id,
            step.kind,
            done.outcome,
            args=step.args if keep else None,
            model_call_id=step.model_call_id,
            started_at_ms=step.started_ms,
            completed_at_ms=completed,
            timestamp_ms=ctx.clock.now_ms(),
            description=step.description if keep else None,
        )

    def end(self, text: str, usage: dict[str, int], duration_ms: int) -> Iterator[Frame]:
        yield wire.result_success(self.ctx.session_id, self.ctx.ids.request_id, text, duration_ms, usage)

    # ---- the interaction queries of print mode ------------------------------------------------

    def _queries(self, qtype: str, args: dict[str, Any], *, skip_approval: bool | None) -> Iterator[Frame]:
        sid, clock = self.ctx.session_id, self.ctx.clock
        qid = self._query_id
        self._query_id += 1
        yield wire.interaction_request(sid, qid, qtype, args, clock.now_ms(), skip_approval=skip_approval)
        yield wire.interaction_response(sid, qid, qtype, wire.rejected("User Rejected"), clock.now_ms())

    def _ask_queries(self, call_id: str, args: dict[str, Any]) -> Iterator[Frame]:
        sid, clock = self.ctx.session_id, self.ctx.clock
        qid = self._query_id
        self._query_id += 1
        qtype = "askQuestionInteractionQuery"
        yield wire.interaction_request(
            sid, qid, qtype, args, clock.now_ms(), skip_approval=None, tool_call_id=call_id
        )
        yield wire.interaction_response(sid, qid, qtype, wire.rejected(ASK_SKIPPED), clock.now_ms())
