"""The seam between the deterministic agent and the protocol it speaks: :class:`TurnOutput`.

The agent (:mod:`.agent`) runs a plan and tells its output what happens — thinking, text,
a tool call starting, a decision needed, a tool call done, the end. An output turns that
into frames: :class:`~.stream_json.StreamJsonOutput` yields print mode's stream-json
objects; :class:`~.acp_output.AcpOutput` writes ACP ``session/update`` notifications and
asks the client (``session/request_permission``, ``cursor/ask_question``, …) for decisions.

Every method but :meth:`TurnOutput.decide` returns the frames to emit, in order (an output
that writes them itself returns none); the agent yields them, so a print-mode turn still
runs tool by tool as its reader consumes it.

Example:
    >>> step = ToolStep(Action("lsToolCall", ""), "tool_1", {}, None, "m-0", 1)
    >>> step.kind
    'lsToolCall'
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from .context import Decision, TurnContext
from .executors import Done
from .mcp_config import Token, Verdict, call_token, load_rules
from .planner import Action


@dataclass(slots=True)
class ToolStep:
    """One tool call as the outputs see it: the planned action, its id, its print-mode
    arguments, its description, the model call it belongs to, when it started."""

    action: Action
    call_id: str
    args: dict[str, Any]
    description: str | None
    model_call_id: str
    started_ms: int

    @property
    def kind(self) -> str:
        """The call's print-mode wire key (``shellToolCall``)."""
        return self.action.kind_key


Frame = dict[str, Any]


def rules_verdict(ctx: TurnContext, step: ToolStep, force: bool) -> tuple[Token | None, Verdict | None]:
    """The call's permission token and what the rules say of it (both ``None`` for a kind no
    rule names), as both outputs decide (:mod:`.mcp_config`: the files are read anew; under
    ACP the project file's allow rules do not count).

    Example:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from .ids import Clock, TurnIds
        >>> ctx = TurnContext("c", Path(tempfile.mkdtemp()), "m", "p", False, False, [], Clock(),
        ...                   TurnIds("c", 0, "p", call_style="tool"))
        >>> step = ToolStep(Action("shellToolCall", "", "ls -la"), "tool_1", {}, None, "m-0", 1)
        >>> token, verdict = rules_verdict(ctx, step, force=False)
        >>> str(token), verdict
        ('Shell(ls)', Verdict(kind='ask', rule=''))
    """
    token = call_token(step.kind, step.action.target, step.args, ctx.workspace)
    if token is None:
        return None, None
    rules = load_rules(ctx.workspace, ctx.config_dir, project_allow=not ctx.acp)
    return token, rules.verdict(token, force)


class TurnOutput(Protocol):
    """Where a turn goes. See the module's docstring."""

    def begin(self) -> Iterable[Frame]:
        """The turn starts (before any thinking)."""
        ...

    def thinking(self, text: str) -> Iterable[Frame]:
        """A thought, whole; the output cuts it as its protocol does."""
        ...

    def say(self, text: str, model_call_id: str | None) -> Iterable[Frame]:
        """Assistant text: an intro before tool calls (``model_call_id``) or the final answer."""
        ...

    def tool_started(self, step: ToolStep) -> Iterable[Frame]:
        """A tool call starts (parallel calls of one model call all start first)."""
        ...

    def decide(self, step: ToolStep) -> Decision:
        """May the call run (and, for a question, what was answered)? Asked just before it runs."""
        ...

    def tool_completed(self, step: ToolStep, done: Done) -> Iterable[Frame]:
        """The call finished (or was refused and did not run)."""
        ...

    def end(self, text: str, usage: dict[str, int], duration_ms: int) -> Iterable[Frame]:
        """The turn's answer is complete."""
        ...
