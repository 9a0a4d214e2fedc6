"""The agent's short subcommands: ``status``, ``models`` and ``create-chat``.

What lives here: :func:`fetch_status` -> :class:`AccountStatus`,
:func:`fetch_models` -> a list of :class:`ModelInfo`, :func:`create_chat` -> a
chat id, all async, each run as a turn with another argv (:class:`~.run.AgentRun`, text
output: own process group, stderr mapped to typed errors, the group stopped at the end,
a timeout). ``create-chat`` prints a UUID and, in 2026 builds, never exits: the first
line is read, then its group is stopped.

Example:
    >>> models = parse_models("Available models\\n\\nauto - Auto\\ngpt-5 - GPT-5 (current)\\n")
    >>> [(m.slug, m.display_name, m.current) for m in models]
    [('auto', 'Auto', False), ('gpt-5', 'GPT-5', True)]
    >>> parse_status("✓ Logged in as ada@example.com\\n")
    AccountStatus(logged_in=True, account='ada@example.com', message='✓ Logged in as ada@example.com')
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..config import AgentConfig, OutputFormat
from ..errors import AgentProcessError, AgentTimeoutError, SessionError
from ..protocol import AgentEvent, Changes, strip_ansi
from .argv import build_env, check_workspace, resolve_binary
from .run import AgentRun
from .sinks import EventSink
from .stderr import classify_failure
from .stop_policy import StopReason
from .transport import run_to_end

__all__ = [
    "AccountStatus",
    "ModelInfo",
    "create_chat",
    "fetch_models",
    "fetch_status",
    "parse_models",
    "parse_status",
    "run_command",
]

DEFAULT_COMMAND_TIMEOUT = 60.0
COMMAND_OUTPUT_LIMIT = 8 * 1024 * 1024
"""Bytes of stdout a short command may print; past them its group is stopped (an error)."""


@dataclass(frozen=True, slots=True)
class AccountStatus:
    """Who the agent is logged in as (from ``agent status``).

    ``logged_in``; ``account`` (the e-mail or name the CLI printed, if any);
    ``message`` (the CLI's text, ANSI stripped).

    Example:
        >>> AccountStatus(False, None, "Not logged in").logged_in
        False
    """

    logged_in: bool
    account: str | None
    message: str


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """A model the account can use (a line ``slug - Display Name`` of ``agent models``).

    Example:
        >>> ModelInfo("gpt-5", "GPT-5").slug
        'gpt-5'
    """

    slug: str
    display_name: str
    current: bool = False


# The agent's output is parsed on the caller's event loop: each pattern is linear in its text
# (no ``(.+?)\s*$``, whose every lazy step rescans a run of spaces; no search whose every start
# rescans the same word). Trailing spaces are stripped in Python instead; an e-mail is tried only
# from the start of a word (the lookbehind), so a long word without ``@`` is read once, not once
# per character. tests/client/test_command_parsing.py runs megabytes of near misses.
_MODEL_LINE = re.compile(r"\s*(?:[*>•]\s*)?([A-Za-z0-9][A-Za-z0-9._:/+@-]*)\s+-\s+(.+)")
_MARK = re.compile(r"\((current|default|selected)(?:,\s*(?:current|default|selected))*\)$", re.I)
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_AS = re.compile(r"logged in as\s+(\S[^\n]*)", re.I)
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def parse_models(text: str) -> list[ModelInfo]:
    """The ``slug - Display Name`` lines of ``agent models`` output.

    Example:
        >>> parse_models("gpt-5 - GPT-5 (default)")[0].current
        True
    """
    models: list[ModelInfo] = []
    for line in strip_ansi(text).splitlines():
        m = _MODEL_LINE.match(line)
        if not m:
            continue
        name = m.group(2).rstrip()
        mark = _MARK.search(name)
        if mark:
            name = name[: mark.start()]
        models.append(ModelInfo(m.group(1), name.strip(), mark is not None))
    return models


def parse_status(text: str) -> AccountStatus:
    """Read ``agent status`` output: logged in or not, and as whom.

    Example:
        >>> parse_status("Not logged in").logged_in
        False
    """
    clean = strip_ansi(text).strip()
    low = clean.lower()
    if "not logged in" in low or "not authenticated" in low or "logged out" in low:
        return AccountStatus(False, None, clean)
    account: str | None = None
    m = _AS.search(clean)
    if m:
        account = m.group(1).strip().rstrip(".")
    else:
        e = _EMAIL.search(clean)
        account = e.group(0) if e else None
    logged_in = account is not None or "logged in" in low or "authenticated" in low
    return AccountStatus(logged_in, account, clean)


async def run_command(
    config: AgentConfig,
    args: list[str],
    *,
    timeout: float | None = DEFAULT_COMMAND_TIMEOUT,
    first_line: bool = False,
    cwd: str | None = None,
    limit: int = COMMAND_OUTPUT_LIMIT,
) -> tuple[int | None, str, str]:
    """Run ``agent <args>``: ``(exit_code, stdout, stderr)``; its group is always stopped.

    A turn (:class:`~.run.AgentRun`, text output) with another argv: the same process rules.
    With ``first_line=True`` the process is stopped once stdout has a complete line. Raises
    ``AgentNotFoundError`` when the binary cannot start, ``AgentTimeoutError`` past ``timeout``,
    ``AgentProcessError`` once stdout passes ``limit`` bytes (the group is stopped then: a
    broken binary does not fill memory until the timeout).

    Example:
        >>> import asyncio
        >>> asyncio.run(run_command(AgentConfig(agent_binary="echo"), ["hi"]))
        (0, 'hi\\n', '')
    """
    env = build_env(config)
    argv = [resolve_binary(config, env), *args]
    config = config.with_overrides(output_format=OutputFormat.TEXT, stream_partial_output=False,
                                   timeout=timeout, idle_timeout=None, keep_events=False,
                                   keep_content=True,
                                   max_line_bytes=min(limit, config.max_line_bytes))
    output = _Output(first_line=first_line, limit=limit)
    run = output.run = AgentRun(config, None, argv=argv, env=env, cwd=cwd, sink=output)
    result = await run_to_end(run)  # a cancelled caller: the group still goes
    if output.printed > limit:
        raise AgentProcessError(
            f"`{' '.join(args)}` printed more than {_size(limit)}; its process group was stopped",
            exit_code=result.exit_code, stderr=result.stderr)
    if run.stop_reason == StopReason.TIMEOUT:
        raise AgentTimeoutError(
            f"`{' '.join(args)}` did not finish within {timeout:g} s; its process group was stopped",
            exit_code=result.exit_code, stderr=result.stderr)
    return result.exit_code, result.text, result.stderr or ""


class _Output(EventSink):
    """Where a short command's turn hands its output lines (one event each, kept nowhere: it
    is never full): it counts their bytes and stops the command at its first line
    (``first_line``) or once past ``limit``."""

    def __init__(self, *, first_line: bool, limit: int) -> None:
        super().__init__(high_water=1, low_water=1)
        self.first_line, self.limit, self.printed = first_line, limit, 0
        self.run: AgentRun | None = None

    def put(self, events: list[AgentEvent], changes: list[Changes]) -> None:
        for event in events:
            self.printed += len(event.line or b"") + 1
            if (self.first_line or self.printed > self.limit) and self.run is not None:
                self.run.cancel()

    def close(self) -> None:
        """The command has ended."""


def _size(n: int) -> str:
    """``8 MiB``, ``64 KiB``, ``100 bytes``."""
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} bytes"


async def fetch_status(config: AgentConfig, *, timeout: float | None = DEFAULT_COMMAND_TIMEOUT
                       ) -> AccountStatus:
    """``agent status``: logged in or not, and as whom. Typed errors on failure.

    "Not logged in" is a normal answer (exit 0), not an error.

    Example:
        >>> import asyncio
        >>> asyncio.run(fetch_status(AgentConfig(agent_binary="echo"))).message
        'status'
    """
    code, out, err = await run_command(config, ["status"], timeout=timeout)
    if code != 0:
        raise classify_failure(code, err or out)
    return parse_status(out if out.strip() else err)


async def fetch_models(config: AgentConfig, *, timeout: float | None = DEFAULT_COMMAND_TIMEOUT
                       ) -> list[ModelInfo]:
    """``agent models``: the models the account can use. Needs auth (AuthenticationError).

    Example:
        >>> import asyncio
        >>> asyncio.run(fetch_models(AgentConfig(agent_binary="echo")))
        []
    """
    code, out, err = await run_command(config, ["models"], timeout=timeout)
    if code != 0:
        raise classify_failure(code, err or out)
    models = parse_models(out)
    if not models:
        failure = classify_failure(code, err or out)
        if type(failure) is not AgentProcessError:
            raise failure
    return models


async def create_chat(config: AgentConfig, *, timeout: float | None = DEFAULT_COMMAND_TIMEOUT
                      ) -> str:
    """``agent create-chat``: a new chat id (read from the first line; the process is stopped).

    Runs in ``config.workspace`` when set (local chats are stored per workspace).
    Raises :class:`~cursor_agent_api.errors.SessionError` when no id is printed.

    Example:
        >>> import asyncio
        >>> asyncio.run(create_chat(AgentConfig(agent_binary="echo")))
        Traceback (most recent call last):
        ...
        cursor_agent_api.errors.SessionError: `create-chat` printed no chat id ...
    """
    cwd = config.workspace
    check_workspace(cwd)
    code, out, err = await run_command(config, ["create-chat"], timeout=timeout,
                                       first_line=True, cwd=cwd)
    first = strip_ansi(out).strip().splitlines()
    m = _UUID.search(first[0]) if first else None
    if m:
        return m.group(0)
    if not first and code not in (None, 0, 143):
        raise classify_failure(code, err or out)
    raise SessionError(f"`create-chat` printed no chat id (stdout: {out[:200]!r}, "
                       f"stderr: {err[-200:]!r})", exit_code=code, stderr=err)
