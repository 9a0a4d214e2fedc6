"""What one turn of the deterministic agent works with, shared by the agent, its executors
and its outputs: :class:`TurnContext`, the :class:`Decision` an output takes on a tool call,
and :func:`split_text` (word-sized deltas).

Example:
    >>> Decision(True).allowed, Decision.reject("no").reason
    (True, 'no')
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .ids import Clock, TurnIds
from .store import Turn

if TYPE_CHECKING:
    from .mcp_client import McpSession


@dataclass(slots=True)
class TurnContext:
    """Everything one turn needs (see :class:`~.agent.Agent` for an example).

    ``mode`` is the ACP session mode (``agent``, ``plan``, ``ask``), or print mode's ``--mode``.
    ``subagents``: the agent may start Tasks (ACP only). ``acp``: the turn runs behind
    ``cursor-agent-sim acp`` (a refusal is the client's answer, not a missing ``--force``).
    ``config_dir``: where ``cli-config.json`` (the permission rules) lives; ``None``: only the
    project's ``.cursor/cli.json`` counts. ``waiting``: called every 0.1 s or so while a shell
    command or an MCP call runs (ACP serves its stdin there, and raises to cancel the turn:
    the command is killed, the call abandoned); ``None`` in print mode.
    """

    session_id: str
    workspace: Path
    model: str
    prompt: str
    force: bool
    partial: bool
    history: list[Turn]
    clock: Clock
    ids: TurnIds
    api_key_source: str = "login"
    huge_line: bool = False
    unicode: bool = False
    mode: str = "agent"
    subagents: bool = False
    mcp: McpSession | None = None
    acp: bool = False
    config_dir: Path | None = None
    waiting: Callable[[], None] | None = None


ASK_MODE_REFUSAL = "Ask mode: no edits or command execution"
"""Why a call is refused in ask mode (ACP.md §4's description of the mode)."""


@dataclass(frozen=True, slots=True)
class Decision:
    """What the output decided about a tool call before it runs.

    ``allowed``: the call may run. ``answers``: the option ids picked for a question (``None``:
    skipped). ``fallback``: the client did not implement the extension method (a plan is then
    written to a local file, as Cursor does). ``denied``: a deny rule refused it (print mode's
    ``permissionDenied``; ``reason`` names the rule).

    Example:
        >>> Decision(False, reason="User Rejected").allowed
        False
    """

    allowed: bool
    answers: tuple[str, ...] | None = None
    reason: str = ""
    fallback: bool = False
    extra: dict[str, str] = field(default_factory=dict)
    denied: bool = False

    @classmethod
    def reject(cls, reason: str = "User Rejected") -> Decision:
        """A refusal with its reason.

        Example:
            >>> Decision.reject().reason
            'User Rejected'
        """
        return cls(False, reason=reason)

    @classmethod
    def deny(cls, rule: str) -> Decision:
        """A refusal by the deny rule ``rule`` (``permissions.deny``).

        Example:
            >>> Decision.deny("Shell(*)").reason
            'Denied by the permission rule Shell(*)'
        """
        return cls(False, reason=f"Denied by the permission rule {rule}", denied=True)


def split_text(text: str) -> list[str]:
    """Cut ``text`` into word-sized deltas the way real builds do (" word" with its space).

    Example:
        >>> split_text("River remembers\\nthe sea")
        ['River', ' remembers', '\\n', 'the', ' sea']
    """
    return re.findall(r"[ \t]*[^\s]+|\s", text) if text else []
