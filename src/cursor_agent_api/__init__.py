"""cursor-agent-api: drive Cursor's coding agent CLI from Python.

The public names live here; the modules behind them are documented in
``docs/architecture.md``.

Example:
    >>> from cursor_agent_api import Transcript, parse_event, EventType
    >>> parse_event('{"type":"system","subtype":"init","session_id":"s"}').type
    <EventType.SYSTEM_INIT: 'system:init'>
"""

from .errors import (
    AgentNotFoundError,
    AgentProcessError,
    AgentTimeoutError,
    AuthenticationError,
    CursorAgentError,
    InvalidModelError,
    ProtocolError,
    SessionError,
    UsageLimitError,
    WorkspaceTrustError,
)
from .protocol import (
    AgentEvent,
    AgentResult,
    EventReader,
    EventType,
    LineFramer,
    ToolCall,
    ToolKind,
    ToolStatus,
    Transcript,
    Usage,
    parse_event,
)

__version__ = "0.1.0"

__all__ = [
    "AgentEvent",
    "AgentNotFoundError",
    "AgentProcessError",
    "AgentResult",
    "AgentTimeoutError",
    "AuthenticationError",
    "CursorAgentError",
    "EventReader",
    "EventType",
    "InvalidModelError",
    "LineFramer",
    "ProtocolError",
    "SessionError",
    "ToolCall",
    "ToolKind",
    "ToolStatus",
    "Transcript",
    "Usage",
    "UsageLimitError",
    "WorkspaceTrustError",
    "__version__",
    "parse_event",
]
