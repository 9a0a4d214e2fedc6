"""The deterministic agent: plans the prompt (:mod:`.planner`), runs the plan's tool calls on
the workspace (:mod:`.executors`) and tells an output what happens (:mod:`.output`) — print
mode's stream-json (:mod:`.stream_json`) or ACP frames (:mod:`.acp_output`).

Nothing here writes to stdout: the frames go to the caller (:mod:`.turn`, :mod:`.acp`).

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> from .ids import Clock, TurnIds
    >>> ws = Path(tempfile.mkdtemp())
    >>> ctx = TurnContext("c1", ws, "Auto", "What is 2+2?", False, False, [], Clock("x"),
    ...                   TurnIds("c1", 0, "What is 2+2?", call_style="call"))
    >>> agent = Agent(ctx)
    >>> [e["type"] for e in agent.events()][-1], agent.result_text
    ('result', '4')
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from . import wire
from . import workspace as tools
from .context import TurnContext, split_text
from .executors import EXECUTORS
from .models import streams_thinking
from .output import Frame, ToolStep, TurnOutput
from .planner import Action, Plan, goal, plan_turn
from .stream_json import StreamJsonOutput

UNICODE_LINE = "Unicode check: naïve café — 日本語 ✓ 🚀"
_READONLY = frozenset({"lsToolCall", "readToolCall", "grepToolCall", "globToolCall"})

__all__ = ["Agent", "TurnContext", "plan_turn", "split_text"]


class Agent:
    """Runs one turn: iterate :meth:`run` (or :meth:`events`, print mode) to get the frames in
    order; tools run as the iteration reaches them, so a killed turn stops where it was.
    """

    def __init__(self, ctx: TurnContext) -> None:
        self.ctx = ctx
        self.segments: list[str] = []
        self.result_text = ""
        self.tool_count = 0

    def _has_file(self, name: str) -> bool:
        path = tools.inside(self.ctx.workspace, name)
        return path is not None and path.is_file()

    def events(self) -> Iterator[dict[str, Any]]:
        """The turn's stream-json objects, from ``system/init`` to ``result``."""
        return self.run(StreamJsonOutput(self.ctx))

    def plan(self) -> Plan:
        """The plan for this turn's prompt (with the ``huge-line`` read when asked)."""
        ctx = self.ctx
        plan = plan_turn(
            ctx.prompt, has_file=self._has_file, history=ctx.history, mode=ctx.mode,
            subagents=ctx.subagents, mcp_tools=ctx.mcp.tools if ctx.mcp is not None else None,
        )
        if ctx.huge_line:
            huge = Action("readToolCall", "I'll read `huge-line.log`.", "huge-line.log", extra="huge")
            if plan.groups and all(a.kind_key in _READONLY for a in plan.groups[0]):
                plan.groups[0].append(huge)
            else:
                plan.groups.insert(0, [huge])
        return plan

    def run(self, out: TurnOutput) -> Iterator[Frame]:
        """Run the turn through ``out``, yielding the frames it returns."""
        clock = self.ctx.clock
        started_ms = clock.now_ms()
        yield from out.begin()
        plan = self.plan()
        yield from self._think(out, f"The user wants me to {plan.goal}.")
        for n, group in enumerate(plan.groups):
            if n:
                yield from self._think(out, f"Next: {' and '.join(goal(a) for a in group)}.")
            yield from self._group(n, group, out)
        if plan.groups:
            yield from self._think(out, "That is everything; writing the answer.")
        final = self._final_text(plan)
        yield from self._say(out, final, None)
        self.result_text = "".join(self.segments)
        duration = max(1, clock.now_ms() - started_ms)
        yield from out.end(self.result_text, self._usage(plan), duration)

    def _think(self, out: TurnOutput, text: str) -> Iterator[Frame]:
        # a per-model trait: GPT-5 Mini streams none (its six recordings), Composer and Auto do
        if streams_thinking(self.ctx.model):
            yield from out.thinking(text)

    def _say(self, out: TurnOutput, text: str, model_call_id: str | None) -> Iterator[Frame]:
        if not text:
            return
        yield from out.say(text, model_call_id)
        self.segments.append(text)

    def _group(self, n: int, group: list[Action], out: TurnOutput) -> Iterator[Frame]:
        ctx = self.ctx
        mcid = ctx.ids.model_call_id(n)
        intro = " ".join(a.intro for a in group if a.intro)
        if intro:
            # Composer models end a segment with a newline (recordings 03, 08), the others do not
            # (04, 07: "…content.I couldn't…" once joined)
            yield from self._say(out, intro + ("\n" if ctx.ids.call_style == "tool" else ""), mcid)
        steps: list[ToolStep] = []
        for k, action in enumerate(group):
            call_id = ctx.ids.call_id(n, k)
            args, description = EXECUTORS[action.kind_key].args(ctx, action, call_id)
            step = ToolStep(action, call_id, args, description, mcid, 0)
            steps.append(step)
            self.tool_count += 1
            yield from out.tool_started(step)
        # parallel calls complete in finish order: the simulator finishes the last started first
        for step in reversed(steps):
            decision = out.decide(step)
            done = EXECUTORS[step.kind].run(ctx, step.action, decision)
            step.action.outcome = done.outcome
            yield from out.tool_completed(step, done)

    def _final_text(self, plan: Plan) -> str:
        if plan.exact is not None:
            text = plan.exact
        elif plan.direct is not None:
            text = plan.direct
        else:
            text = "\n\n".join(a.answer for g in plan.groups for a in g if a.answer)
        if self.ctx.unicode:
            text += "\n" + UNICODE_LINE
        if plan.done and not text.rstrip().endswith("DONE"):
            text += "\nDONE"
        return text

    def _usage(self, plan: Plan) -> dict[str, int]:
        ctx = self.ctx
        history_chars = sum(len(t.prompt) + len(t.result) for t in ctx.history)
        input_tokens = 6000 + len(ctx.prompt) // 4 + history_chars // 4 + 900 * len(plan.groups)
        output_tokens = 40 + len(self.result_text) // 4 + 60 * self.tool_count
        cache_read = 7168 * (len(ctx.history) + 1) if ctx.history else 0
        return wire.usage(input_tokens, output_tokens, cache_read, 0)
