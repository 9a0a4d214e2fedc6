"""The agent's stderr: a bounded tail, and its texts mapped to typed errors.

What lives here: :class:`StderrTail` (keeps the last bytes of a stream that may
be endless; memory stays bounded) and :func:`classify_failure` (PROTOCOL.md §1's
stderr texts -> :mod:`cursor_agent_api.errors`). What does not: reading the
pipe (:mod:`.run` does, concurrently with stdout, so a full stderr pipe never
blocks the agent).

Example:
    >>> tail = StderrTail(limit=1024)
    >>> tail.feed(b"\\x1b[31mError: Authentication required. Please run 'agent login'\\x1b[0m\\n")
    >>> type(classify_failure(1, tail.text())).__name__
    'AuthenticationError'
"""

from __future__ import annotations

import re
import shlex
import signal

from ..errors import (
    AgentProcessError,
    AuthenticationError,
    CursorAgentError,
    InvalidModelError,
    SessionError,
    UsageLimitError,
    WorkspaceTrustError,
)
from ..protocol import strip_ansi
from ..protocol.reason import failure_reason

__all__ = ["CLASSIFIED_CHARS", "StderrTail", "classify_failure", "ended_how", "known_failure",
           "silent_remedy", "stderr_summary"]


class StderrTail:
    """The last ``limit`` bytes of a byte stream; :meth:`text` decodes and strips ANSI.

    ``total`` counts every byte fed. When bytes were dropped, :meth:`text`
    starts at the first whole line that was kept.

    Example:
        >>> t = StderrTail(limit=8)
        >>> t.feed(b"first line\\nlast\\n")
        >>> t.text(), t.total, t.truncated
        ('last\\n', 16, True)
    """

    __slots__ = ("_buf", "limit", "total")

    def __init__(self, limit: int = 64 * 1024) -> None:
        self.limit = limit
        self._buf = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        """Add a chunk; drop the oldest bytes past the limit."""
        self.total += len(data)
        if len(data) >= self.limit:
            self._buf[:] = data[-self.limit:]
            return
        self._buf += data
        extra = len(self._buf) - self.limit
        if extra > 0:
            del self._buf[:extra]

    @property
    def truncated(self) -> bool:
        """True when older bytes were dropped."""
        return self.total > len(self._buf)

    def text(self) -> str:
        """The tail as text: UTF-8 (invalid bytes replaced), ANSI escapes stripped."""
        data = bytes(self._buf)
        if self.truncated:
            nl = data.find(b"\n")
            if 0 <= nl < len(data) - 1:
                data = data[nl + 1:]
        return strip_ansi(data.decode("utf-8", "replace"))


CLASSIFIED_CHARS = 16 * 1024
"""How much of the end of a stderr text :func:`classify_failure` reads (from its first whole
line): the CLI says why it failed in its last lines, and a tail of any size (``stderr_tail_bytes``)
is then classified in the same small time, on the event loop."""

# Every pattern matches within one line and a bounded span (no ``.*``): each try from a
# position costs at most a few hundred steps, so a search is linear in the text (a line of
# ``model model …`` made ``model .* not available`` quadratic: 2 s for 64 KiB, on the loop).
# tests/client/test_stderr_classifier.py checks that no repeat is unbounded.
_RULES: list[tuple[re.Pattern[str], type[CursorAgentError], str]] = [
    (re.compile(r"authentication required|not logged in|agent login|cursor-agent login"
                r"|api key is invalid|invalid api key|unauthori[sz]ed", re.I),
     AuthenticationError, "the agent is not authenticated"),
    (re.compile(r"workspace trust required|trust this workspace|pass --trust", re.I),
     WorkspaceTrustError, "the workspace is not trusted"),
    (re.compile(r"cannot use this model|unknown model|invalid model"
                r"|model\b[^\n]{0,100}?\bnot available",
                re.I),
     InvalidModelError, "the model cannot be used"),
    (re.compile(r"failed to claim persistent session|chat id must be a uuid"
                r"|may still be running|cannot resume|could not resume|session not found"
                r"|chat not found", re.I),
     SessionError, "the chat cannot be resumed"),
    (re.compile(r"usage limit|hit your .{0,40}limit", re.I),
     UsageLimitError, "the account hit its usage limit"),
]


def known_failure(text: str) -> tuple[type[CursorAgentError], str] | None:
    """The typed error a failure's text names, and what that means in words, or ``None``:
    the rules print mode reads its stderr with (:func:`classify_failure`), which ACP mode
    reads the agent's error answers with too (a usage limit, a model it cannot use…). The
    caller bounds the text (:data:`CLASSIFIED_CHARS`).

    Example:
        >>> cls, what = known_failure("Error: You've hit your usage limit for this month")
        >>> cls.__name__, what
        ('UsageLimitError', 'the account hit its usage limit')
        >>> known_failure("Invalid mode ID: yolo") is None
        True
    """
    for pattern, cls, what in _RULES:
        if pattern.search(text):
            return cls, what
    return None


def stderr_summary(stderr: str, limit: int = 300) -> str:
    """The agent's own reason in a stderr text (:func:`~cursor_agent_api.protocol.reason.
    failure_reason`: the last error report, else the first line naming a failure, else the
    last line), read in its last :data:`CLASSIFIED_CHARS`; ``""`` when stderr is empty.

    Example:
        >>> stderr_summary("╭──╮\\n│ ⚠ Workspace Trust Required │\\n╰──╯\\n")
        '⚠ Workspace Trust Required'
    """
    return failure_reason(_last_part(stderr).splitlines(), limit=limit) or ""


def _last_part(text: str, limit: int = CLASSIFIED_CHARS) -> str:
    r"""The last ``limit`` characters of ``text``, from the first whole line among them.

    Example:
        >>> _last_part("first line\nsecond\nlast\n", limit=10)
        'last\n'
        >>> _last_part("first line\nsecond\nlast\n", limit=12)
        'second\nlast\n'
        >>> _last_part("short\n")
        'short\n'
    """
    if len(text) <= limit:
        return text
    part = text[-limit:]
    if text[-limit - 1] == "\n":  # the cut falls between two lines
        return part
    nl = part.find("\n")
    return part[nl + 1:] if 0 <= nl < len(part) - 1 else part


INTERRUPTED_REMEDY = ("something outside stopped the agent (a signal to its process group: a "
                      "Ctrl-C at a terminal, a kill); send the prompt again")
"""What to do when the agent was interrupted (exit 130 or 143) and said nothing on stderr: no
tail to see, and its binary is likely fine (review 47)."""


def silent_remedy(binary: str | None = None) -> str:
    """What to do when the agent failed and said nothing (no stderr, or it closed it): check
    that the program started is Cursor's agent and runs; ``binary`` is that program, as started.

    Example:
        >>> print(silent_remedy("/opt/my agent"))  # doctest: +NORMALIZE_WHITESPACE
        check that '/opt/my agent' is Cursor's agent and runs (`'/opt/my agent' --version`),
        then send the prompt again
        >>> silent_remedy()
        "check that the agent binary is Cursor's agent and runs (its `--version`), then send the prompt again"
    """
    if binary is None:
        return ("check that the agent binary is Cursor's agent and runs (its `--version`), "
                "then send the prompt again")
    return (f"check that {binary!r} is Cursor's agent and runs (`{shlex.quote(binary)} --version`), "
            "then send the prompt again")


def classify_failure(exit_code: int | None, stderr: str, *,
                     binary: str | None = None) -> CursorAgentError:
    """The typed error for a failed run, from its stderr text (PROTOCOL.md §1).

    ``AuthenticationError``, ``WorkspaceTrustError``, ``InvalidModelError``,
    ``SessionError`` (malformed resume id, chat busy), ``UsageLimitError``;
    ANSI escapes are stripped first; only the last :data:`CLASSIFIED_CHARS` are read;
    anything else is an ``AgentProcessError``. The error carries ``exit_code``
    and ``stderr``; its message quotes the agent's own line. With nothing on stderr there is
    no explanation to point at: the remedy is :func:`silent_remedy` (``binary``: the program
    that was started).

    Example:
        >>> e = classify_failure(1, "Cannot use this model: foo. Available models: a, b")
        >>> type(e).__name__, e.exit_code
        ('InvalidModelError', 1)
        >>> str(classify_failure(3, "")).startswith("the agent exited with code 3")
        True
    """
    stderr = strip_ansi(stderr)
    last = _last_part(stderr)
    summary = stderr_summary(last)
    known = known_failure(last)
    if known is not None:
        cls, what = known
        detail = f": {summary}" if summary else ""
        return cls(f"{what} (exit code {exit_code}){detail}", exit_code=exit_code, stderr=stderr)
    how = f"the agent {ended_how(exit_code)}"
    if summary:
        return AgentProcessError(f"{how}: {summary}", exit_code=exit_code, stderr=stderr)
    return AgentProcessError(f"{how} and printed nothing on stderr", exit_code=exit_code,
                             stderr=stderr, remedy=silent_remedy(binary))


def ended_how(exit_code: int | None) -> str:
    """How the agent ended, in words: an exit status of 128 + N is death by signal N (as a shell
    reports it, :func:`~.process.normalize_exit_code`), named.

    Example:
        >>> ended_how(3)
        'exited with code 3'
        >>> ended_how(137)
        'was killed by SIGKILL (exit code 137; out of memory, or killed by another process)'
        >>> ended_how(143)
        'was killed by SIGTERM (exit code 143)'
    """
    if exit_code is not None and 128 < exit_code < 128 + signal.NSIG:
        try:
            name = signal.Signals(exit_code - 128).name
        except ValueError:  # not a signal this system names
            return f"exited with code {exit_code}"
        why = "; out of memory, or killed by another process" if name == "SIGKILL" else ""
        return f"was killed by {name} (exit code {exit_code}{why})"
    return f"exited with code {exit_code}"
