"""The result event the client adds when the agent wrote none: :class:`ClientResultEvent`.

Every turn's stream has a result event, and the first one is the turn's outcome. When the
agent wrote one, that is it (an agent that writes on after it has those events passed on as
data; the fold ignores them). When it wrote none — a crash, an auth failure, a usage limit,
an untrusted workspace, a timeout, a cancel — the runtime adds a ``RESULT_ERROR`` shaped
like seed 004's error result (``{"type": "result", "subtype": "error", "is_error": true,
"error": …}``) plus
``error_type``, ``exit_code`` and ``"added_by_client": true``; the typed error is its
:attr:`~ClientResultEvent.exception`. Process-level ``ERROR`` events may come before it. In
text mode a successful turn ends with a ``RESULT_SUCCESS`` whose ``result`` is stdout,
exactly.

Example:
    >>> from cursor_agent_api.errors import AuthenticationError
    >>> e = client_result_event(AuthenticationError("not logged in", exit_code=1))
    >>> e.type.value, e.data["error_type"], e.data["added_by_client"], e.exception.exit_code
    ('result:error', 'AuthenticationError', True, 1)
    >>> e.data["error"].startswith("not logged in")
    True
"""

from __future__ import annotations

from typing import Any

from ..errors import CursorAgentError
from ..protocol import AgentEvent, EventType

__all__ = ["ClientResultEvent", "client_result_event"]


class ClientResultEvent(AgentEvent):
    """A result event added by the client (the agent wrote none); see the module's text.

    Example:
        >>> client_result_event(None, result="hi\\n\\nthere\\n").text
        'hi\\n\\nthere\\n'
    """

    __slots__ = ("_exception",)

    def __init__(self, type: EventType, data: dict[str, Any],
                 exception: CursorAgentError | None = None) -> None:
        super().__init__(type, data)
        self._exception = exception

    @property
    def exception(self) -> CursorAgentError | None:
        """The typed error of the turn (``None`` for a success)."""
        return self._exception


def client_result_event(
    exception: CursorAgentError | None,
    *,
    result: str | None = None,
    session_id: str | None = None,
    exit_code: int | None = None,
) -> ClientResultEvent:
    """The result event of a turn whose agent wrote none: ``RESULT_ERROR`` carrying
    ``exception`` (its message in ``error``), or with ``exception=None`` a
    ``RESULT_SUCCESS`` carrying ``result`` (text mode).

    Example:
        >>> client_result_event(None, result="ok", exit_code=0).data["subtype"]
        'success'
    """
    data: dict[str, Any] = {"type": "result"}
    if exception is not None:
        data.update(subtype="error", is_error=True, error=str(exception),
                    error_type=type(exception).__name__)
        etype = EventType.RESULT_ERROR
    else:
        data.update(subtype="success", is_error=False, result=result or "")
        etype = EventType.RESULT_SUCCESS
    data["session_id"] = session_id
    data["exit_code"] = exit_code if exit_code is not None else (
        exception.exit_code if exception is not None else None)
    data["added_by_client"] = True
    return ClientResultEvent(etype, data, exception)
