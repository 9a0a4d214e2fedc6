"""cursor-agent-api: drive Cursor's coding agent CLI from Python.

The public names live here; the modules behind them are documented in
``docs/architecture.md``. They are imported on first use (PEP 562), so that a program that
needs one part (the simulator, which reads only ``protocol``; the command line's ``--help``)
does not pay for the others at start-up.

Example:
    >>> from cursor_agent_api import Transcript, parse_event, EventType
    >>> parse_event('{"type":"system","subtype":"init","session_id":"s"}').type
    <EventType.SYSTEM_INIT: 'system:init'>
"""

from importlib import import_module

TYPE_CHECKING = False
"""``typing.TYPE_CHECKING`` without importing ``typing`` (type checkers take any
``TYPE_CHECKING`` as true): the console script imports this package before its ``try`` that
turns a Ctrl-C into exit 130, and loading ``typing`` was most of that moment."""

if TYPE_CHECKING:
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
        AgentStartError,
        AgentTimeoutError,
        AuthenticationError,
        CursorAgentError,
        InvalidModelError,
        ProtocolError,
        SessionError,
        SessionFileError,
        TurnCancelledError,
        UsageLimitError,
        WorkspaceNotFoundError,
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
    "AgentStartError",
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
    "SessionFileError",
    "SessionTurn",
    "Skip",
    "StreamingResponse",
    "ToolCall",
    "ToolKind",
    "ToolStatus",
    "Transcript",
    "TurnCancelledError",
    "Usage",
    "UsageLimitError",
    "WorkspaceNotFoundError",
    "WorkspaceTrustError",
    "__version__",
    "create_chat",
    "parse_event",
    "query",
    "query_stream",
]


# name -> the module that defines it, for ``__getattr__`` below
_HOMES = {
    "AsyncCursorAgentClient": ".client",
    "AsyncStreamingResponse": ".client",
    "CursorAgentClient": ".client",
    "StreamingResponse": ".client",
    "query": ".client",
    "query_stream": ".client",
    "AgentConfig": ".config",
    "OutputFormat": ".config",
    "AcpRequestError": ".errors",
    "AgentNotFoundError": ".errors",
    "AgentProcessError": ".errors",
    "AgentStartError": ".errors",
    "AgentTimeoutError": ".errors",
    "AuthenticationError": ".errors",
    "CursorAgentError": ".errors",
    "InvalidModelError": ".errors",
    "ProtocolError": ".errors",
    "SessionError": ".errors",
    "SessionFileError": ".errors",
    "TurnCancelledError": ".errors",
    "UsageLimitError": ".errors",
    "WorkspaceNotFoundError": ".errors",
    "WorkspaceTrustError": ".errors",
    "Accept": ".permissions",
    "Allow": ".permissions",
    "Answer": ".permissions",
    "Cancel": ".permissions",
    "Deny": ".permissions",
    "PermissionRequest": ".permissions",
    "Plan": ".permissions",
    "QuestionRequest": ".permissions",
    "Reject": ".permissions",
    "Skip": ".permissions",
    "AgentEvent": ".protocol",
    "AgentResult": ".protocol",
    "EventReader": ".protocol",
    "EventType": ".protocol",
    "LineFramer": ".protocol",
    "ToolCall": ".protocol",
    "ToolKind": ".protocol",
    "ToolStatus": ".protocol",
    "Transcript": ".protocol",
    "Usage": ".protocol",
    "parse_event": ".protocol",
    "AccountStatus": ".runtime",
    "ModelInfo": ".runtime",
    "AsyncConversationSession": ".sessions",
    "ConversationSession": ".sessions",
    "SessionTurn": ".sessions",
    "create_chat": ".sessions",
}


# the modules that were attributes of the package when it imported them all at once
_MODULES = frozenset({"client", "config", "errors", "permissions", "protocol", "runtime", "sessions"})


def __getattr__(name: str) -> object:
    """Import a public name's module the first time the name is used (PEP 562); the
    modules in ``_MODULES`` are attributes too (``cursor_agent_api.protocol``), as they were.

    Example:
        >>> import cursor_agent_api
        >>> cursor_agent_api.Transcript is cursor_agent_api.protocol.Transcript
        True
    """
    home = _HOMES.get(name)
    if home is not None:
        value = getattr(import_module(home, __name__), name)
    elif name in _MODULES:
        value = import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
