"""The shapes of the API's answers, for ``/openapi.json`` only: the routes build their bodies
themselves (big pages as prepared JSON), so these models describe and never validate an
answer (``tests/server/test_openapi_contract.py`` checks real answers against them).

Each model allows more fields than it names (a field added later is not a break); the
fields it names are there, with the types given.

Example:
    >>> sorted(ChatView.model_json_schema()["required"])[:3]
    ['created_ms', 'id', 'last_seq']
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

RunStatusName = Literal["queued", "running", "succeeded", "failed", "cancelled", "interrupted"]
ChatStatusName = Literal["idle", "queued", "running", "succeeded", "failed", "cancelled", "interrupted"]


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class CutField(_Open):
    """A field longer than ``max_field_bytes``, cut: where (a JSON pointer) and its whole size."""

    field: str
    bytes: int


class RunView(_Open):
    """A run (``GET /api/runs/{id}``, pages of runs, a ``run`` record's ``payload.run``)."""

    id: str
    chat_id: str
    prompt: str
    status: RunStatusName
    pid: int | None
    exit_code: int | None
    error: str | None
    error_type: str | None
    result: str | None
    usage: dict[str, Any] | None
    session_id: str | None
    first_seq: int | None
    last_seq: int | None
    created_ms: int
    started_ms: int | None
    ended_ms: int | None
    duration_ms: int | None = Field(description="the server's wall time from started to ended")


class ChatView(_Open):
    """A chat: ``status`` is its latest run's (``idle`` before the first)."""

    id: str
    session_id: str | None
    workspace: str
    model: str | None
    options: dict[str, Any]
    title: str
    created_ms: int
    updated_ms: int
    last_seq: int
    status: ChatStatusName
    latest_run: RunView | None = Field(default=None, description="GET /api/chats/{id} only")


class ChatList(_Open):
    """``GET /api/chats``: most recently active first; page on with ``before = next_before``."""

    chats: list[ChatView]
    has_more: bool
    next_before: str | None


class RunsPage(_Open):
    """``GET /api/chats/{id}/runs``: oldest first; page back with ``before_run``."""

    chat_id: str
    runs: list[RunView]
    has_more: bool
    next_before_run: str | None


class CancelPending(RunView):
    """202 of ``POST /api/runs/{id}/cancel``: the run, not marked yet; the cancel stays asked for."""

    detail: str


class Record(_Open):
    """A stored record (docs/websocket.md, "Records")."""

    seq: int
    chat_id: str
    run_id: str | None
    ts_ms: int
    source: str
    type: str
    subtype: str | None
    payload: dict[str, Any]
    raw: Any = Field(default=None, description="the agent's line as it came (include_raw only)")
    truncated: list[CutField] = Field(default_factory=list, description="the cut fields, if any")


class EventsPage(_Open):
    """``GET /api/chats/{id}/events``: page on with ``after_seq = next_after_seq``."""

    chat_id: str
    events: list[Record]
    next_after_seq: int
    has_more: bool
    last_seq: int


class ToolCall(_Open):
    """A tool call of a page of ``…/tool-calls``."""

    chat_id: str
    run_id: str
    index: int
    call_id: str | None
    kind: str | None
    name: str | None
    status: str | None
    args: Any
    result: Any
    output: Any
    started_seq: int | None
    completed_seq: int | None


class ToolCallsPage(_Open):
    """``GET …/tool-calls``: page on with ``after_seq = next_after_seq``."""

    tool_calls: list[ToolCall]
    has_more: bool
    next_after_seq: int


class TurnItem(_Open):
    """One item of a turn: ``text``, ``thinking``, ``tool_call`` (its card in ``view``),
    ``request`` (ACP) or ``error``, in the order they appeared (``seq``)."""

    type: Literal["text", "thinking", "tool_call", "request", "error"]
    index: int
    seq: int


class Turn(_Open):
    """A run and its folded turn."""

    run: RunView
    turn: dict[str, Any] | None
    items: list[TurnItem]


class TurnsPage(_Open):
    """``GET /api/chats/{id}/turns``: the state at ``last_seq``; page back with ``before_run``."""

    chat_id: str
    last_seq: int
    has_more: bool
    next_before_run: str | None
    runs: list[Turn]


class LoginCode(_Open):
    """``POST /api/auth/codes``."""

    code: str
    url: str
    expires_in: int


def ok(model: type[BaseModel], status: int = 200, description: str = "") -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for a route's success answer described by ``model``.

    Example:
        >>> ok(ChatView, 201)[201]["model"].__name__
        'ChatView'
    """
    return {status: {"model": model, "description": description or (model.__doc__ or "").split("\n")[0]}}


__all__ = [
    "CancelPending", "ChatList", "ChatView", "CutField", "EventsPage", "LoginCode", "Record",
    "RunView", "RunsPage", "ToolCall", "ToolCallsPage", "Turn", "TurnItem", "TurnsPage", "ok",
]
