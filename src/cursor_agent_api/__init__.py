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
from .runtime import AccountStatus, ModelInfo
from .sessions import AsyncConversationSession, ConversationSession, SessionTurn, create_chat

__version__ = "0.1.0"

__all__ = [
    "Accept",
    "AcpRequestError",
    "Allow",
    "Answer",
    "Cancel",
    "Deny",
    "PermissionRequest",
    "Plan",
    "QuestionRequest",
    "Reject",
    "Skip",
    "AccountStatus",
    "AgentConfig",
    "AgentEvent",
    "AgentNotFoundError",
    "AgentProcessError",
    "AgentResult",
    "AgentTimeoutError",
    "AsyncConversationSession",
    "AsyncCursorAgentClient",
    "AsyncStreamingResponse",
    "AuthenticationError",
    "ConversationSession",
    "CursorAgentClient",
    "CursorAgentError",
    "EventReader",
    "EventType",
    "InvalidModelError",
    "LineFramer",
    "ModelInfo",
    "OutputFormat",
    "ProtocolError",
    "SessionError",
    "SessionTurn",
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
