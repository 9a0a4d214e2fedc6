"""Every exception this library raises, in one hierarchy under :class:`CursorAgentError`.

::

    CursorAgentError                 base: catch this to catch everything below
    ├── AgentNotFoundError           the agent binary cannot be started (not installed, not on PATH)
    ├── AuthenticationError          not logged in, or the API key is invalid
    ├── WorkspaceTrustError          the workspace is not trusted (pass trust=True / --trust)
    ├── InvalidModelError            the model slug is not available
    ├── SessionError                 a chat cannot be resumed: malformed id, chat busy, refused
    ├── UsageLimitError              the account hit its usage limit
    ├── AgentProcessError            any other failure exit: carries the exit code and stderr
    ├── AgentTimeoutError            the turn ran past ``timeout`` or was silent past ``idle_timeout``
    └── ProtocolError                the output could not be read (e.g. a line over the size limit)

Each message says what happened and what to do.

Example:
    >>> err = AuthenticationError("not logged in")
    >>> isinstance(err, CursorAgentError), str(err).startswith("not logged in")
    (True, True)
"""

from __future__ import annotations


class CursorAgentError(Exception):
    """Base class of every error of this library.

    ``exit_code`` and ``stderr`` are set when the error comes from a finished agent process.

    Example:
        >>> CursorAgentError("boom", exit_code=1).exit_code
        1
    """

    remedy: str = ""

    def __init__(
        self, message: str, *, exit_code: int | None = None, stderr: str | None = None
    ) -> None:
        self.message = message
        self.exit_code = exit_code
        self.stderr = stderr
        text = message
        if self.remedy and self.remedy not in message:
            text = f"{message} — {self.remedy}"
        super().__init__(text)


class AgentNotFoundError(CursorAgentError):
    """The agent binary could not be started.

    Example:
        >>> "install" in str(AgentNotFoundError("agent: not found"))
        True
    """

    remedy = (
        "install the Cursor CLI (curl https://cursor.com/install -fsS | bash), or set "
        "AgentConfig(agent_binary=...) to its path; to try without it, use the bundled "
        "simulator (cursor-agent-sim, or --simulate on the command line)"
    )


class AuthenticationError(CursorAgentError):
    """Not logged in, or the API key was refused.

    Example:
        >>> "agent login" in str(AuthenticationError("not logged in"))
        True
    """

    remedy = "run `agent login` or set CURSOR_API_KEY (AgentConfig(api_key=...))"


class WorkspaceTrustError(CursorAgentError):
    """The workspace is not trusted and the run is headless.

    Example:
        >>> "trust" in str(WorkspaceTrustError("workspace not trusted"))
        True
    """

    remedy = "pass trust=True (CLI: --trust), or force_approve=True (--force)"


class InvalidModelError(CursorAgentError):
    """The requested model cannot be used.

    Example:
        >>> "list_models" in str(InvalidModelError("bad model"))
        True
    """

    remedy = "pick a slug from client.list_models() (CLI: `agent models`)"


class SessionError(CursorAgentError):
    """A chat could not be resumed or created (malformed id, chat busy, refused).

    Example:
        >>> isinstance(SessionError("chat busy"), CursorAgentError)
        True
    """

    remedy = "check the chat id; wait for the chat's running turn to end; or start a new chat"


class UsageLimitError(CursorAgentError):
    """The account hit its usage limit.

    Example:
        >>> "usage" in str(UsageLimitError("You've hit your usage limit"))
        True
    """

    remedy = "wait for the limit to reset, or raise it in your Cursor account settings"


class AgentProcessError(CursorAgentError):
    """The agent exited with a failure that matches no more specific error.

    Example:
        >>> AgentProcessError("exit 3", exit_code=3, stderr="oops").stderr
        'oops'
    """

    remedy = "see the stderr tail in the error for the agent's own explanation"


class AgentTimeoutError(CursorAgentError):
    """The turn ran past its ``timeout``, or was silent past ``idle_timeout``.

    Example:
        >>> "timeout" in str(AgentTimeoutError("no output for 30 s"))
        True
    """

    remedy = "raise timeout / idle_timeout (silences of 30 s and more are normal)"


class ProtocolError(CursorAgentError):
    """The agent's output could not be read (a line over ``max_line_bytes``, ...).

    Example:
        >>> "max_line_bytes" in str(ProtocolError("line too long"))
        True
    """

    remedy = "raise AgentConfig.max_line_bytes if the line was legitimate"


__all__ = [
    "AgentNotFoundError",
    "AgentProcessError",
    "AgentTimeoutError",
    "AuthenticationError",
    "CursorAgentError",
    "InvalidModelError",
    "ProtocolError",
    "SessionError",
    "UsageLimitError",
    "WorkspaceTrustError",
]
