"""Every exception this library raises, in one hierarchy under :class:`CursorAgentError`.

::

    CursorAgentError                 base: catch this to catch everything below
    ├── AgentStartError              the agent cannot be started: the system is out of open files,
    │   │                            processes or memory (``errno`` says which)
    │   ├── AgentNotFoundError       the agent binary cannot be started (not installed, not on PATH,
    │   │                            not executable)
    │   └── WorkspaceNotFoundError   the workspace is not an existing directory (missing, a file)
    ├── AuthenticationError          not logged in, or the API key is invalid
    ├── WorkspaceTrustError          the workspace is not trusted (pass trust=True / --trust)
    ├── InvalidModelError            the model slug is not available
    ├── SessionError                 a chat cannot be resumed: malformed id, chat busy, refused
    │   └── SessionFileError         a file given to ``ConversationSession.load`` is not a session
    ├── UsageLimitError              the account hit its usage limit
    ├── AgentProcessError            any other failure exit: carries the exit code and stderr
    ├── AgentTimeoutError            the turn ran past ``timeout`` or was silent past ``idle_timeout``
    ├── TurnCancelledError           the turn was cancelled on request (``cancel()``, a cancelled
    │                                task, ACP ``session/cancel``): nothing failed
    ├── ProtocolError                the output could not be read (e.g. a line over the size limit)
    └── AcpRequestError              ACP mode: the agent answered a request with a JSON-RPC error

Each message says what happened and what to do. The remedy is written once, with the
setting's name in Python and on the command line side by side (``{trust=True|--trust}``):
``str(err)`` gives the Python phrasing, :meth:`CursorAgentError.cli_message` the command
line's.

Example:
    >>> err = AuthenticationError("not logged in")
    >>> isinstance(err, CursorAgentError), str(err).startswith("not logged in")
    (True, True)
"""

from __future__ import annotations

import errno as errno_module
import re
from typing import Any


class CursorAgentError(Exception):
    """Base class of every error of this library.

    ``exit_code`` and ``stderr`` are set when the error comes from a finished agent process.
    ``remedy``, when given, is this failure's own (the same in Python's and the command
    line's words), in place of its class's.

    Example:
        >>> CursorAgentError("boom", exit_code=1).exit_code
        1
        >>> err = AgentProcessError("it hung", remedy="restart it")
        >>> str(err), err.cli_message()
        ('it hung — restart it', 'it hung — restart it')
    """

    remedy: str = ""
    """What to do, in Python's words (``AgentConfig`` fields, client methods)."""
    cli_remedy: str = ""
    """What to do, in the command line's words (its flags)."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        # A class declares ``remedy`` once; ``{python|cli}`` marks where the two phrasings
        # differ. Split it into the two attributes here.
        super().__init_subclass__(**kwargs)
        template = cls.__dict__.get("remedy")
        if isinstance(template, str):
            cls.remedy, cls.cli_remedy = _phrasings(template)

    def __init__(
        self, message: str, *, exit_code: int | None = None, stderr: str | None = None,
        remedy: str | None = None,
    ) -> None:
        if remedy is not None:  # this failure's own remedy, in place of its class's (both phrasings)
            self.remedy = self.cli_remedy = remedy
        self.message = message
        self.exit_code = exit_code
        self.stderr = stderr
        text = message
        if self.remedy and self.remedy not in message:
            text = f"{message} — {self.remedy}"
        super().__init__(text)

    def __reduce__(self) -> tuple[Any, ...]:
        """Copied or pickled (``multiprocessing``, ``copy``) as it is: its text, attributes and
        own remedy, not made again from its text (which added its class's remedy a second time).

        Example:
            >>> import pickle
            >>> err = AgentProcessError("it hung", remedy="restart it", exit_code=143)
            >>> again = pickle.loads(pickle.dumps(err))
            >>> str(again), again.exit_code, type(again).__name__
            ('it hung — restart it', 143, 'AgentProcessError')
        """
        return _restored, (type(self), self.args, self.__dict__)

    def cli_message(self) -> str:
        """The message with the remedy in the command line's words (its flags).

        Example:
            >>> WorkspaceTrustError("workspace not trusted").cli_message()
            'workspace not trusted — pass --trust, or --force'
        """
        if self.cli_remedy and self.cli_remedy not in self.message:
            return f"{self.message} — {self.cli_remedy}"
        return self.message


def _restored(cls: type[CursorAgentError], args: tuple[Any, ...],
              state: dict[str, Any]) -> CursorAgentError:
    """An error of ``cls`` as it was pickled (:meth:`CursorAgentError.__reduce__`)."""
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


_ALTERNATIVE = re.compile(r"\{([^{}|]*)\|([^{}]*)\}")


def _phrasings(template: str) -> tuple[str, str]:
    """The Python and the command line phrasing of a remedy template.

    Example:
        >>> _phrasings("pass {trust=True|--trust} or wait")
        ('pass trust=True or wait', 'pass --trust or wait')
    """
    return _ALTERNATIVE.sub(r"\1", template), _ALTERNATIVE.sub(r"\2", template)


class AgentStartError(CursorAgentError):
    """The agent process could not be started, though its binary is there: the system is out
    of a resource a new process needs (open files, processes, memory). ``errno`` says which;
    the remedy names the limit. Its subclasses: the binary cannot be started
    (:class:`AgentNotFoundError`), the workspace to start it in is not there
    (:class:`WorkspaceNotFoundError`). :meth:`of` turns the ``OSError`` of a failed start into this
    error or its subclass :class:`AgentNotFoundError`.

    Example:
        >>> import errno
        >>> err = AgentStartError.of("agent", OSError(errno.EMFILE, "Too many open files"))
        >>> type(err).__name__, err.errno == errno.EMFILE
        ('AgentStartError', True)
        >>> print(str(err).replace(" — ", "\\n— "))
        cannot start the agent: too many open files in this process (EMFILE)
        — close some, or raise the limit (`ulimit -n`)
        >>> type(AgentStartError.of("agent", FileNotFoundError(errno.ENOENT, "No such file"))).__name__
        'AgentNotFoundError'
    """

    remedy = "retry once the system has room again (see the reason above)"

    def __init__(self, message: str, *, errno: int | None = None, remedy: str | None = None,
                 exit_code: int | None = None, stderr: str | None = None) -> None:
        self.errno = errno  # remedy: the limit it hit (CursorAgentError's per-failure remedy)
        super().__init__(message, exit_code=exit_code, stderr=stderr, remedy=remedy)

    @classmethod
    def of(cls, program: str, exc: OSError) -> AgentStartError:
        """The error for ``exc``, raised starting ``program``: :class:`AgentNotFoundError` when
        the binary is missing or cannot be executed, else this class, its remedy by errno."""
        code = exc.errno
        reason = exc.strerror or str(exc)
        if code in _NOT_FOUND:
            return AgentNotFoundError(
                f"cannot start the agent: {program!r} was not found ({reason})", errno=code)
        if code in _NOT_EXECUTABLE:
            return AgentNotFoundError(
                f"cannot start the agent: {program!r} is not executable ({reason})", errno=code)
        name = errno_module.errorcode.get(code, "") if code is not None else ""
        what, remedy = _SHORT_OF.get(code, (reason, None)) if code is not None else (reason, None)
        return cls(f"cannot start the agent: {what}" + (f" ({name})" if name else ""),
                   errno=code, remedy=remedy)


_NOT_FOUND = frozenset({errno_module.ENOENT, errno_module.ENOTDIR, errno_module.ELOOP,
                        errno_module.ENAMETOOLONG})
_NOT_EXECUTABLE = frozenset({errno_module.EACCES, errno_module.EPERM, errno_module.EISDIR,
                             errno_module.ENOEXEC, errno_module.ETXTBSY})
_SHORT_OF: dict[int, tuple[str, str]] = {
    errno_module.EMFILE: ("too many open files in this process",
                          "close some, or raise the limit (`ulimit -n`)"),
    errno_module.ENFILE: ("too many open files on this system",
                          "close some elsewhere, or raise the system's limit (fs.file-max)"),
    errno_module.EAGAIN: ("the process limit is reached",
                          "end some processes, or raise the limit (`ulimit -u`, or the "
                          "container's pids limit)"),
    errno_module.ENOMEM: ("out of memory", "free some memory (end other programs) and retry"),
}


class AgentNotFoundError(AgentStartError):
    """The agent binary could not be started: not installed, not on ``PATH``, or not
    executable (``errno`` says which, when the system said).

    Example:
        >>> "install" in str(AgentNotFoundError("agent: not found"))
        True
    """

    remedy = (
        "install the Cursor CLI (curl https://cursor.com/install -fsS | bash), or "
        "{set AgentConfig(agent_binary=...) to its path|pass its path with --agent-binary}; "
        "to try without it, use the bundled simulator ({cursor-agent-sim, or --simulate on the command line"
        "|--simulate})"
    )


class WorkspaceNotFoundError(AgentStartError):
    """The workspace a turn (or a new chat) would run in is not an existing directory: it
    does not exist, or it is a file. Checked before the agent starts, in both transports
    (``runtime/argv.py``); ``errno`` is ``ENOENT`` or ``ENOTDIR``.

    Example:
        >>> err = WorkspaceNotFoundError("the workspace directory does not exist: '/x'")
        >>> isinstance(err, AgentStartError), "existing directory" in str(err)
        (True, True)
        >>> print(err.cli_message().split(" — ")[1])  # doctest: +NORMALIZE_WHITESPACE
        pass --workspace an existing directory (or create it); a chat's workspace must still
        be there when it runs
    """

    remedy = ("{set AgentConfig(workspace=...) to|pass --workspace} an existing directory (or "
              "create it); a chat's workspace must still be there when it runs")


class AuthenticationError(CursorAgentError):
    """Not logged in, or the API key was refused.

    Example:
        >>> "agent login" in str(AuthenticationError("not logged in"))
        True
    """

    remedy = "run `agent login` or set CURSOR_API_KEY{ (AgentConfig(api_key=...))|}"


class WorkspaceTrustError(CursorAgentError):
    """The workspace is not trusted and the run is headless.

    Example:
        >>> "trust" in str(WorkspaceTrustError("workspace not trusted"))
        True
    """

    remedy = "pass {trust=True (CLI: --trust)|--trust}, or {force_approve=True (--force)|--force}"


class InvalidModelError(CursorAgentError):
    """The requested model cannot be used.

    Example:
        >>> "list_models" in str(InvalidModelError("bad model"))
        True
    """

    remedy = (
        "pick a slug from {client.list_models() (CLI: `agent models`)"
        "|`agent models` and pass it with --model}"
    )


class SessionError(CursorAgentError):
    """A chat could not be resumed or created (malformed id, chat busy, refused).

    Example:
        >>> isinstance(SessionError("chat busy"), CursorAgentError)
        True
    """

    remedy = (
        "check the chat id{| (cursor-agent-api sessions list)}; wait for the chat's running "
        "turn to end; or start a new chat{| (without --resume)}"
    )


class SessionFileError(SessionError):
    """A file read as a saved session is not one (not JSON, a wrong shape, a setting the
    library refuses); the message names the file and what is wrong with it.

    Example:
        >>> err = SessionFileError("cannot load the session from 'x.json': not JSON")
        >>> isinstance(err, SessionError), "not a saved session" in str(err)
        (True, True)
    """

    remedy = (
        "the file is not a saved session (as {ConversationSession.save()|cursor-agent-api} "
        "writes them), or it was damaged: check the path{|, `cursor-agent-api sessions list`}, "
        "or start a new {session|chat}"
    )


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

    remedy = (
        "raise {timeout / idle_timeout|--timeout / --idle-timeout} "
        "(silences of 30 s and more are normal)"
    )


class TurnCancelledError(CursorAgentError):
    """The turn was cancelled on request before its result: ``stream.cancel()``, a cancelled
    task that awaited it (``asyncio.timeout``, ``wait_for``, ``task.cancel()``), ACP's
    ``session/cancel``. Nothing failed; ``result.cancelled`` is true. (A turn stopped because
    its event loop shut down is a plain :class:`CursorAgentError`; an agent stopped by a
    signal from outside is an :class:`AgentProcessError`.)

    Example:
        >>> err = TurnCancelledError("the turn was cancelled")
        >>> isinstance(err, CursorAgentError), str(err).startswith("the turn was cancelled")
        (True, True)
    """

    remedy = "nothing failed: it was stopped on request; send the prompt again to run it"


class ProtocolError(CursorAgentError):
    """The agent's output could not be read (a line over ``max_line_bytes``, ...).

    Its message (the runtime's words, never the agent's) may name a setting as a remedy
    does, ``{python|cli}``: ``str()`` and :attr:`message` give the Python phrasing,
    :meth:`cli_message` the command line's.

    Example:
        >>> "max_line_bytes" in str(ProtocolError("line too long"))
        True
        >>> err = ProtocolError("passed {max_line_bytes|--max-line-bytes}=8")
        >>> err.message
        'passed max_line_bytes=8'
        >>> print(err.cli_message())  # doctest: +NORMALIZE_WHITESPACE
        passed --max-line-bytes=8 — raise --max-line-bytes if the line was legitimate
    """

    remedy = (
        "raise {AgentConfig.max_line_bytes|--max-line-bytes} if the line was legitimate"
    )

    def __init__(self, message: str, *, exit_code: int | None = None,
                 stderr: str | None = None) -> None:
        python, self._cli_text = _phrasings(message)
        super().__init__(python, exit_code=exit_code, stderr=stderr)

    def cli_message(self) -> str:
        """The message and its remedy in the command line's words."""
        if self.cli_remedy and self.cli_remedy not in self._cli_text:
            return f"{self._cli_text} — {self.cli_remedy}"
        return self._cli_text


class AcpRequestError(CursorAgentError):
    """ACP mode: the agent answered one of the client's requests with a JSON-RPC error;
    ``method``, ``code`` and ``data`` say which and why.

    Example:
        >>> e = AcpRequestError.of("session/set_mode", -32603, "Invalid mode ID: x")
        >>> e.code, e.message
        (-32603, 'the agent refused session/set_mode: Invalid mode ID: x (JSON-RPC error -32603)')
    """

    remedy = ("see the agent's reason in the message; ACP mode and model ids are the agent's "
              "own, not print mode's (docs/acp.md)")

    def __init__(self, message: str, *, method: str = "", code: int = 0, data: object = None,
                 exit_code: int | None = None, stderr: str | None = None) -> None:
        super().__init__(message, exit_code=exit_code, stderr=stderr)
        self.method = method
        self.code = code
        self.data = data

    @classmethod
    def of(cls, method: str, code: int, detail: str, data: object = None) -> AcpRequestError:
        """The error for ``method``'s JSON-RPC error answer."""
        return cls(f"the agent refused {method}: {detail} (JSON-RPC error {code})",
                   method=method, code=code, data=data)


__all__ = [
    "AcpRequestError",
    "AgentNotFoundError",
    "AgentProcessError",
    "AgentStartError",
    "AgentTimeoutError",
    "AuthenticationError",
    "CursorAgentError",
    "InvalidModelError",
    "ProtocolError",
    "SessionError",
    "SessionFileError",
    "TurnCancelledError",
    "UsageLimitError",
    "WorkspaceNotFoundError",
    "WorkspaceTrustError",
]
