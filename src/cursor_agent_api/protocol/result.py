"""The outcome of one turn: :class:`AgentResult` (seed 004's fields and more).

Built by :meth:`~cursor_agent_api.protocol.transcript.Transcript.to_result`;
the runtime adds what only a process can tell (exit code, stderr, exception).

Example:
    >>> r = AgentResult(success=True, result="4", session_id="s1")
    >>> r.raise_for_error() is r
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import CursorAgentError
from .events import AgentEvent, Usage
from .tools import ToolCall


@dataclass(slots=True)
class AgentResult:
    """What one turn produced.

    ``result`` is ``result.result`` when a result event arrived, else the
    reassembled text; ``text`` is always the reassembled text. On failure,
    ``success`` is ``False``, ``error`` says why and ``exception`` holds the
    typed error (see :mod:`cursor_agent_api.errors`). ``events``: the turn's events, an
    :class:`~.event_log.EventLog` (read-only, each event kept as its line until read) when
    they were kept, else ``[]``.

    Example:
        >>> r = AgentResult(success=False, result="", session_id=None, error="boom",
        ...                 exception=CursorAgentError("boom"))
        >>> try:
        ...     r.raise_for_error()
        ... except CursorAgentError as e:
        ...     print(e)
        boom
    """

    success: bool
    result: str
    session_id: str | None
    request_id: str | None = None
    duration_ms: int | None = None
    duration_api_ms: int | None = None
    error: str | None = None
    events: Sequence[AgentEvent] = field(default_factory=list)
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None
    exit_code: int | None = None
    stderr: str = ""
    exception: CursorAgentError | None = None
    cancelled: bool = False
    model: str | None = None

    def raise_for_error(self) -> AgentResult:
        """Raise :attr:`exception` (or a :class:`CursorAgentError`) if the turn failed."""
        if self.success:
            return self
        if self.exception is not None:
            raise self.exception
        raise CursorAgentError(self.error or "the turn failed")

    def to_dict(self, *, include_events: bool = False) -> dict[str, Any]:
        """A JSON-ready dict of the result (events only when asked).

        Example:
            >>> AgentResult(success=True, result="ok", session_id="s").to_dict()["result"]
            'ok'
        """
        d: dict[str, Any] = {
            "success": self.success,
            "result": self.result,
            "text": self.text,
            "session_id": self.session_id,
            "request_id": self.request_id,
            "duration_ms": self.duration_ms,
            "duration_api_ms": self.duration_api_ms,
            "error": self.error,
            "error_type": type(self.exception).__name__ if self.exception else None,
            "exit_code": self.exit_code,
            "cancelled": self.cancelled,
            "model": self.model,
            "usage": self.usage.to_dict() if self.usage else None,
            "tool_calls": [tc.to_dict() for tc in self.tool_calls],
            "stderr": self.stderr,
        }
        if include_events:
            d["events"] = [e.to_dict() for e in self.events]
        return d
