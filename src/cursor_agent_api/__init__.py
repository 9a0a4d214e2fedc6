"""cursor-agent-api: drive Cursor's coding agent CLI from Python.

The public names live here; the modules behind them are documented in
``docs/architecture.md``.

Example:
    >>> from cursor_agent_api import Transcript, parse_event, EventType
    >>> parse_event('{"type":"system","subtype":"init","session_id":"s"}').type
    <EventType.SYSTEM_INIT: 'system:init'>
"""

from .client import (
    AsyncCursorAgentClient,
    AsyncStreamingResponse,
    CursorAgentClient,
    StreamingResponse,
    query,
    query_stream,
)
from .config import AgentConfig, OutputFormat
from .errors import (
    AcpRequestError,
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
from .permissions import (
    Accept,
    Allow,
    Answer,
    Cancel,
    Deny,
    PermissionRequest,
    Plan,
    QuestionRequest,
    Reject,
    Skip,
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
from .runtime import AccountStatus, ModelInfo
from .sessions import AsyncConversationSession, ConversationSession, SessionTurn, create_chat

__version__ = "0.1.0"

__all__ = [
    "Accept",
    "AccountStatus",
    "AcpRequestError",
    "AgentConfig",
    "AgentEvent",
    "AgentNotFoundError",
    "AgentProcessError",
    "AgentResult",
    "AgentTimeoutError",
    "Allow",
    "Answer",
    "AsyncConversationSession",
    "AsyncCursorAgentClient",
    "AsyncStreamingResponse",
    "AuthenticationError",
    "Cancel",
    "ConversationSession",
    "CursorAgentClient",
    "CursorAgentError",
    "Deny",
    "EventReader",
    "EventType",
    "InvalidModelError",
    "LineFramer",
    "ModelInfo",
    "OutputFormat",
    "PermissionRequest",
    "Plan",
    "ProtocolError",
    "QuestionRequest",
    "Reject",
    "SessionError",
    "SessionTurn",
    "Skip",
    "StreamingResponse",
    "ToolCall",
    "ToolKind",
    "ToolStatus",
    "Transcript",
    "Usage",
    "UsageLimitError",
    "WorkspaceTrustError",
    "__version__",
    "create_chat",
    "parse_event",
    "query",
    "query_stream",
]
