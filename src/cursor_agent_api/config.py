"""Configuration of a client: :class:`AgentConfig` and :class:`OutputFormat`.

What lives here: the settings of a turn (seed 004's fields plus the process
rules of issue 4), validated when the object is built, so a wrong value fails
where it was written and not in the middle of a run. What does not: building
argv/env (:mod:`cursor_agent_api.runtime.argv`), running anything.

Example:
    >>> config = AgentConfig(workspace="/tmp", model="sonnet-4.6", timeout=600)
    >>> config.with_overrides(model="gpt-5").model
    'gpt-5'
    >>> AgentConfig(timeout=-1)
    Traceback (most recent call last):
    ...
    ValueError: AgentConfig.timeout must be a positive number of seconds or None, got -1
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import json
import math
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .permissions import CanUseTool, OnPlan, OnQuestion, PermissionMode, check_rule
from .protocol import DEFAULT_MAX_LINE_BYTES

if TYPE_CHECKING:
    from .runtime.transport import Transport

__all__ = [
    "DEFAULT_AGENT_BINARY",
    "DEFAULT_KILL_GRACE",
    "DEFAULT_RESULT_GRACE",
    "MODEL_ID_MAX_LENGTH",
    "MODEL_ID_PATTERN",
    "MODEL_ID_RULE",
    "AgentConfig",
    "OutputFormat",
    "OutputFormatName",
    "is_chat_id",
    "is_model_slug",
    "model_id_problem",
]

TRANSPORT_NAMES = ("print", "acp")
"""The transports ``AgentConfig.transport`` may name."""

DEFAULT_AGENT_BINARY = "agent"
"""The agent CLI's executable name when none is given (``cursor-agent`` before 2026)."""

DEFAULT_RESULT_GRACE = 3.0
"""Seconds the agent gets to exit by itself after its first ``result`` event."""

DEFAULT_KILL_GRACE = 2.0
"""Seconds between the stop signal (SIGTERM) and SIGKILL to the agent's process group."""

DEFAULT_STDERR_TAIL_BYTES = 64 * 1024
"""How much of the agent's stderr is kept (the last bytes)."""

MCP_SCOPE_ENV = "CURSOR_AGENT_API_MCP_SCOPE"
"""The agent's environment variable whose value is the scope of the MCP sessions it opens
(:mod:`.tools.mcp_scopes`): set per turn, so never one of an ``agent acp`` process's
settings (in ACP the client resolves it per session)."""


class OutputFormat(str, enum.Enum):
    """The agent's ``--output-format`` (seed 004).

    The client reads ``STREAM_JSON`` (the default) event by event; ``JSON`` gives
    one ``result`` event at the end; ``TEXT`` gives each non-blank line as a ``RAW``
    event, the turn succeeds when the agent exits 0, and ``AgentResult.result`` (and
    ``text``) is stdout exactly, blank lines and final newline included — up to
    ``max_line_bytes`` (past it the turn fails with ``ProtocolError``); none with
    ``keep_content=False``.

    Example:
        >>> OutputFormat("stream-json") is OutputFormat.STREAM_JSON
        True
    """

    TEXT = "text"
    JSON = "json"
    STREAM_JSON = "stream-json"


OutputFormatName = Literal["text", "json", "stream-json"]
"""What ``AgentConfig(output_format=...)`` takes besides an :class:`OutputFormat`: its value."""


class _OutputFormatField:
    """``AgentConfig.output_format``: set from an :class:`OutputFormat` or its value (a type
    checker takes both), read as an :class:`OutputFormat` (a dataclass field with a
    descriptor: ``__set__``'s type is the constructor's). A value that is neither is kept as
    given, for :meth:`AgentConfig.validate` to refuse naming the field.

    Example:
        >>> AgentConfig(output_format="json").output_format
        <OutputFormat.JSON: 'json'>
        >>> AgentConfig().output_format is OutputFormat.STREAM_JSON
        True
    """

    def __set_name__(self, owner: type, name: str) -> None:
        self._attr = f"_{name}"

    def __get__(self, obj: object, owner: type | None = None) -> OutputFormat:
        if obj is None:  # the class's: the field's default (what dataclass reads)
            return OutputFormat.STREAM_JSON
        value: OutputFormat = getattr(obj, self._attr)
        return value

    def __set__(self, obj: object, value: OutputFormat | OutputFormatName) -> None:
        with contextlib.suppress(ValueError, TypeError):  # (validate() refuses it)
            value = OutputFormat(value)
        setattr(obj, self._attr, value)


_CHAT_ID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
MODEL_ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._:/+@-]*(?:\[[A-Za-z0-9._:/+@=,-]*\])?"
"""What a ``model`` may be, here and in the server's requests (a regex, anchored by its user):
a slug of ``agent models`` (``gpt-5``, ``sonnet-4.6``) or an ACP model id, a slug with its
parameters in brackets (``default[]``, ``claude-opus-5[thinking=true]``)."""
MODEL_ID_RULE = ("a slug of letters, digits and . _ : / + @ - (starting with a letter or digit, "
                 "no spaces), optionally with ACP parameters in brackets: default[], "
                 "gpt-5[effort=high], claude-opus-5[thinking=true]")
""":data:`MODEL_ID_PATTERN` in words, for the messages that refuse a model."""
_MODEL = re.compile(MODEL_ID_PATTERN)


def is_chat_id(value: object) -> bool:
    """True if ``value`` is a chat id as the agent writes them: a UUID (``8-4-4-4-12`` hex).

    Chat ids come from the agent's output and from requests; only these are ever passed
    to ``--resume``.

    Example:
        >>> is_chat_id("8b72ae6d-ab42-4854-991e-6ecf580e66c2"), is_chat_id("--force")
        (True, False)
    """
    return isinstance(value, str) and _CHAT_ID.fullmatch(value) is not None


MODEL_ID_MAX_LENGTH = 200
"""The longest ``model`` accepted, in characters (here and in the server's requests)."""


def model_id_problem(value: str) -> str | None:
    """What keeps ``value`` from being a model id, in words that follow "the model"
    (``must …``), or ``None`` if it is one: the length, when that is what failed, names
    :data:`MODEL_ID_MAX_LENGTH`; anything else, :data:`MODEL_ID_RULE`.

    Example:
        >>> model_id_problem("sonnet-4.6") is None
        True
        >>> model_id_problem("a" * 201)
        'must be at most 200 characters long (it has 201)'
        >>> model_id_problem("gpt 5")  # doctest: +ELLIPSIS
        'must be a slug of letters, digits and . _ : / + @ - (starting with a letter or digit, ...'
    """
    if _MODEL.fullmatch(value) is None:
        return f"must be {MODEL_ID_RULE}"
    if len(value) > MODEL_ID_MAX_LENGTH:
        return f"must be at most {MODEL_ID_MAX_LENGTH} characters long (it has {len(value):,})"
    return None


def is_model_slug(value: object) -> bool:
    """True if ``value`` can be a model slug or ACP model id (:data:`MODEL_ID_RULE`, at most
    :data:`MODEL_ID_MAX_LENGTH` characters): no spaces, no leading dash (never an option).

    Example:
        >>> is_model_slug("sonnet-4.6"), is_model_slug("gpt 5"), is_model_slug("-f")
        (True, False, False)
        >>> is_model_slug("claude-opus-5[thinking=true]"), is_model_slug("gpt-5[a=1,b=2]")
        (True, True)
        >>> is_model_slug("gpt-5[x]y"), is_model_slug("a=b")
        (False, False)
    """
    return isinstance(value, str) and model_id_problem(value) is None


def _fail(name: str, why: str, value: Any, exc: type[Exception] = ValueError) -> Exception:
    return exc(f"AgentConfig.{name} {why}, got {value!r}")


def _fail_secret(name: str, why: str, value: Any, exc: type[Exception] = ValueError) -> Exception:
    """Like :func:`_fail`, without the value (an API key, an environment value)."""
    what = type(value).__name__ if not isinstance(value, str) else f"a string of {len(value)} characters"
    return exc(f"AgentConfig.{name} {why} (got {what}; the value is not shown)")


def _check_seconds(name: str, value: Any, *, allow_zero: bool = False) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _fail(name, "must be a number of seconds or None", value, TypeError)
    try:
        seconds = float(value)
    except OverflowError:  # an int past float's range (shown by its size: its digits may not print)
        raise ValueError(f"AgentConfig.{name} must be a number of seconds or None, got an integer "
                         f"too large for a float ({int(value).bit_length()} bits)") from None
    if math.isnan(seconds) or seconds < 0 or (seconds == 0 and not allow_zero):
        what = "a non-negative" if allow_zero else "a positive"
        raise _fail(name, f"must be {what} number of seconds or None", value)
    return seconds


_HEADER_NAME = re.compile(r"[A-Za-z][A-Za-z0-9-]{0,39}")
_HEADER_NAME_END = re.compile(r"[ \t=:]")


def _header_start(header: str) -> str:
    """How a refused header is named in its error: only a leading header-name-like token.

    The line may hold a credential anywhere (``Authorization Bearer sk-...``, or the bare
    key), so nothing but a token that looks like a header name (a letter, then letters,
    digits and ``-``, up to 40) and ends at a space, ``=`` or ``:`` is shown.

    Example:
        >>> _header_start("Authorization Bearer sk-live-0123")
        "one starting 'Authorization'"
        >>> _header_start("sk-live-0123456789abcdef")
        'one that does not start with a header name (not shown: it may hold a credential)'
        >>> _header_start("--force: x")
        'one that does not start with a header name (not shown: it may hold a credential)'
    """
    stripped = header.lstrip()
    end = _HEADER_NAME_END.search(stripped)
    if end is not None and _HEADER_NAME.fullmatch(stripped[:end.start()]):
        return f"one starting {stripped[:end.start()]!r}"
    return "one that does not start with a header name (not shown: it may hold a credential)"


def _check_optional_text(name: str, value: Any, *, secret: bool = False) -> str | None:
    if value is None:
        return None
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    fail = _fail_secret if secret else _fail
    if not isinstance(value, str):
        raise fail(name, "must be a string or None", value, TypeError)
    if not value.strip():
        raise fail(name, "must not be empty (use None to leave it unset)", value)
    if "\x00" in value or "\n" in value or "\r" in value:
        raise fail(name, "must not contain NUL or newline characters", value)
    return value


def _check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise _fail(name, "must be True or False", value, TypeError)
    return value


def _check_str_list(name: str, value: Any) -> list[str]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise _fail(name, "must be a list of strings", value, TypeError)
    out = list(value)
    for i, item in enumerate(out):  # items may hold credentials: never shown
        if not isinstance(item, str):
            raise _fail_secret(f"{name}[{i}]", "must be a string", item, TypeError)
        if "\x00" in item:
            raise _fail_secret(f"{name}[{i}]", "must not contain NUL characters", item)
    return out


def _check_mcp_servers(value: Any) -> dict[str, dict[str, Any]]:
    """``mcp_servers``: ``mcp.json``'s ``mcpServers`` shape (entries may hold credentials: never shown)."""
    if not isinstance(value, Mapping):
        raise _fail_secret("mcp_servers", "must be a mapping of server names to mcp.json entries",
                           value, TypeError)
    out: dict[str, dict[str, Any]] = {}
    for name, entry in value.items():
        if not isinstance(name, str) or not name.strip() or any(c in name for c in "\x00\n\r"):
            raise _fail("mcp_servers", "keys must be non-empty server names", name)
        if not isinstance(entry, Mapping):
            raise _fail_secret("mcp_servers", f"[{name!r}] must be an entry like "
                               '{"command": ..., "args": [...]} or {"url": ...}', entry, TypeError)
        if not isinstance(entry.get("command"), str) and not isinstance(entry.get("url"), str):
            raise _fail_secret("mcp_servers", f"[{name!r}] needs a \"command\" or a \"url\" string",
                               entry)
        try:
            out[name] = json.loads(json.dumps(dict(entry)))
        except (TypeError, ValueError):
            raise _fail_secret("mcp_servers", f"[{name!r}] must hold only JSON values",
                               entry, TypeError) from None
    return out


@dataclass(eq=True)
class AgentConfig:
    """How to run the agent: seed 004's fields plus the process rules.

    Seed 004: ``workspace`` (``--workspace``), ``model`` (``--model``),
    ``force_approve`` (``--force``), ``approve_mcps`` (``--approve-mcps``),
    ``api_key`` (sent as ``CURSOR_API_KEY`` in the environment, never in argv),
    ``headers`` (``-H`` each, ``"Name: Value"``), ``agent_binary`` (``"agent"``;
    when that is not on ``PATH`` but ``cursor-agent`` is, that one is used).

    Added: ``output_format``, ``stream_partial_output``
    (``--stream-partial-output``), ``trust`` (``--trust``; off by default:
    trusting a workspace is the caller's decision), ``resume`` (a chat id,
    ``--resume``), ``env`` (extra environment variables merged over the
    parent's; a ``None`` value removes a variable), ``timeout`` (seconds for
    the whole turn, ``None`` = none), ``idle_timeout`` (seconds without any
    output on stdout or stderr, ``None`` = off; real runs are silent for 30 s
    and more, so there is no short default), ``extra_args`` (appended to argv
    as given), ``max_line_bytes`` (longest stdout line kept; a longer line fails
    the turn with :class:`~cursor_agent_api.errors.ProtocolError`),
    ``keep_events`` (keep every event in ``StreamingResponse.events`` and
    ``AgentResult.events``, each as its line until it is read: see
    :mod:`~cursor_agent_api.protocol.event_log`; ``False`` keeps memory flat on endless
    streams),
    ``keep_content`` (keep the assistant text, thinking and tool calls' results for
    ``AgentResult.text``, ``.tool_calls`` and the ``result`` of a turn without a result
    event; ``False``: the events still carry them, but the client keeps no second copy,
    for a consumer that stores events itself; see docs/client.md),
    ``result_grace`` (seconds the agent may take to exit after its first
    ``result``, or after it closed stdout and stderr without one: then its group is
    stopped), ``kill_grace`` (seconds between the stop signal and SIGKILL),
    ``stderr_tail_bytes`` (how much stderr is kept), ``mcp_servers`` (MCP servers for the
    agent, in ``mcp.json``'s ``mcpServers`` shape: ``{name: {"command", "args", "env"} |
    {"url", "headers"}}``; each turn shows them to the agent in the workspace's
    ``.cursor/mcp.json``, restored afterwards, and approves exactly them with approval entries,
    not ``--approve-mcps``; see docs/tools.md).

    ``transport`` says how a turn runs: ``"print"``, the default (``agent --print`` per turn, a
    child process), ``"acp"`` (one long-lived ``agent acp`` per client, steered: docs/acp.md), or
    a :class:`~cursor_agent_api.runtime.transport.Transport` object such as the in-memory
    :class:`~cursor_agent_api.testing.ScriptTransport` of the tests. ACP mode's
    settings: ``can_use_tool``,
    ``on_question``, ``on_plan`` (callbacks, sync or async; see
    :mod:`cursor_agent_api.permissions`), ``permission_mode`` (``"deny"``, ``"allow"``,
    ``"read-only"``, ``"ask"``), ``allowed_tools`` / ``denied_tools`` (rules such as
    ``Shell(ls)``, ``Write(src/**)``, ``Mcp(server:tool)``; they answer the requests the agent
    sends, and current builds ask nothing before an edit or a delete: ``"read-only"`` does not
    stop edits, ``session_mode="plan"`` does), ``permission_timeout`` (seconds
    until an unanswered request is rejected; none by default), ``images`` (image files sent
    with the prompt), ``session_mode`` (the session's mode, such as ``"plan"``: set with
    ``session/set_mode`` before each prompt whose session is in another mode; ``None`` leaves it).
    With ``transport="print"`` they are refused (``ValueError``): print mode cannot be steered.
    With ``transport="acp"`` and ``force_approve=True`` (``agent --force acp``: the agent runs
    every tool call without asking), ``can_use_tool``, ``denied_tools`` and a
    ``permission_mode`` of ``"ask"`` or ``"read-only"`` are refused the same way: they would
    never be consulted. ``allowed_tools``, ``permission_mode="allow"``, ``on_question``,
    ``on_plan`` and ``permission_timeout`` stay (they widen nothing force does not, or steer
    questions and plans, which the agent still asks).

    Every field is checked when the object is built (and again by
    :meth:`with_overrides`): a wrong value raises ``TypeError`` or
    ``ValueError`` naming the field and the reason.

    Example:
        >>> cfg = AgentConfig(model="sonnet-4.6", headers=["X-Team: infra"], trust=True)
        >>> cfg.headers, cfg.trust
        (['X-Team: infra'], True)
        >>> AgentConfig(headers=["no colon"])
        Traceback (most recent call last):
        ...
        ValueError: AgentConfig.headers items must look like 'Name: Value', got one starting 'no'
    """

    workspace: str | None = None
    model: str | None = None
    force_approve: bool = False
    approve_mcps: bool = False
    api_key: str | None = field(default=None, repr=False)
    headers: list[str] = field(default_factory=list)
    agent_binary: str = DEFAULT_AGENT_BINARY
    output_format: _OutputFormatField = _OutputFormatField()
    stream_partial_output: bool = False
    trust: bool = False
    resume: str | None = None
    env: Mapping[str, str | None] = field(default_factory=dict, repr=False)
    timeout: float | None = None
    idle_timeout: float | None = None
    extra_args: list[str] = field(default_factory=list)
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    keep_events: bool = True
    keep_content: bool = True
    result_grace: float = DEFAULT_RESULT_GRACE
    kill_grace: float = DEFAULT_KILL_GRACE
    stderr_tail_bytes: int = DEFAULT_STDERR_TAIL_BYTES
    # ACP mode (docs/acp.md): one long-lived `agent acp` per client, steered turn by turn
    transport: str | Transport = "print"
    can_use_tool: CanUseTool | None = field(default=None, repr=False, compare=False)
    on_question: OnQuestion | None = field(default=None, repr=False, compare=False)
    on_plan: OnPlan | None = field(default=None, repr=False, compare=False)
    permission_mode: str = "deny"
    allowed_tools: list[str] = field(default_factory=list)
    denied_tools: list[str] = field(default_factory=list)
    permission_timeout: float | None = None
    images: list[str] = field(default_factory=list)
    session_mode: str | None = None
    mcp_servers: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Check (and normalize) every field; raise ``TypeError``/``ValueError`` naming it.

        Runs at construction; the client runs it again before each turn, in
        case a field was assigned afterwards.

        Example:
            >>> cfg = AgentConfig()
            >>> cfg.kill_grace = 0
            >>> cfg.validate()
            Traceback (most recent call last):
            ...
            ValueError: AgentConfig.kill_grace must be a positive number of seconds or None, got 0
        """
        self.workspace = _check_optional_text("workspace", self.workspace)
        self.model = _check_optional_text("model", self.model)
        problem = None if self.model is None else model_id_problem(self.model)
        if problem is not None and len(self.model or "") > MODEL_ID_MAX_LENGTH:
            # (a value past the limit is not repeated: its length is the news)
            raise ValueError(f"AgentConfig.model {problem} (see list_models())")
        if problem is not None:
            raise _fail("model", f"{problem} (see list_models())", self.model)
        self.resume = _check_optional_text("resume", self.resume)
        if self.resume is not None and not is_chat_id(self.resume):
            raise _fail("resume", "must be a UUID, the form of every chat id "
                        "(such as 8b72ae6d-ab42-4854-991e-6ecf580e66c2)", self.resume)
        self.api_key = _check_optional_text("api_key", self.api_key, secret=True)
        if self.agent_binary is None or (isinstance(self.agent_binary, str)
                                         and not self.agent_binary.strip()):
            raise _fail("agent_binary", "must name the agent executable (by default 'agent', "
                        "or 'cursor-agent' when only that is on PATH)", self.agent_binary)
        binary = _check_optional_text("agent_binary", self.agent_binary)
        assert binary is not None
        self.agent_binary = binary
        for name in ("force_approve", "approve_mcps", "stream_partial_output", "trust",
                     "keep_events", "keep_content"):
            _check_bool(name, getattr(self, name))
        if not isinstance(self.output_format, OutputFormat):  # (its field converts a value)
            raise _fail("output_format", "must be 'stream-json', 'json' or 'text'",
                        self.output_format)
        self.headers = _check_str_list("headers", self.headers)
        for header in self.headers:
            name, sep, _ = header.partition(":")
            if not sep or not name.strip() or any(c.isspace() for c in name.strip()) \
                    or name.strip().startswith("-") or "\n" in header or "\r" in header:
                raise ValueError("AgentConfig.headers items must look like 'Name: Value', "
                                 f"got {_header_start(header)}")
        self.extra_args = _check_str_list("extra_args", self.extra_args)
        if not isinstance(self.env, Mapping):
            raise _fail("env", "must be a mapping of variable names to strings", self.env,
                        TypeError)
        env: dict[str, str | None] = {}
        for key, value in self.env.items():
            if not isinstance(key, str) or not key or "=" in key or "\x00" in key:
                raise _fail("env", "keys must be non-empty names without '=' or NUL", key)
            if value is not None and not isinstance(value, str):
                raise _fail_secret("env", f"[{key!r}] must be a string or None", value, TypeError)
            if value is not None and "\x00" in value:
                raise _fail_secret("env", f"[{key!r}] must not contain NUL characters", value)
            env[key] = value
        self.env = env
        self.mcp_servers = _check_mcp_servers(self.mcp_servers)
        self.timeout = _check_seconds("timeout", self.timeout)
        self.idle_timeout = _check_seconds("idle_timeout", self.idle_timeout)
        grace = _check_seconds("result_grace", self.result_grace, allow_zero=True)
        if grace is None:
            raise _fail("result_grace", "must be a number of seconds", None, TypeError)
        self.result_grace = grace
        kill = _check_seconds("kill_grace", self.kill_grace)
        if kill is None:
            raise _fail("kill_grace", "must be a number of seconds", None, TypeError)
        self.kill_grace = kill
        if isinstance(self.transport, str):
            if self.transport not in TRANSPORT_NAMES:
                raise _fail("transport", f"must be one of {', '.join(TRANSPORT_NAMES)} or a "
                            "Transport", self.transport)
        elif not callable(getattr(self.transport, "open_turn", None)):
            raise _fail("transport", "must be a transport name or have open_turn()",
                        type(self.transport).__name__, TypeError)
        self._validate_acp()
        for name in ("max_line_bytes", "stderr_tail_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise _fail(name, "must be an integer number of bytes", value, TypeError)
            if value < 1:
                raise _fail(name, "must be at least 1", value)
            if value > sys.maxsize:  # past 64 bits: no buffer is that long, nor can JSON save it
                raise _fail(name, f"must be at most {sys.maxsize}", value)

    def _validate_acp(self) -> None:
        """The ACP fields: ``transport`` ``"print"`` (``agent --print``, the default) or
        ``"acp"`` (``agent acp``), the permission settings and callbacks, ``images``."""
        try:
            self.permission_mode = PermissionMode(self.permission_mode).value
        except ValueError:
            raise _fail("permission_mode", "must be 'ask', 'allow', 'read-only' or 'deny'",
                        self.permission_mode) from None
        for name in ("can_use_tool", "on_question", "on_plan"):
            if getattr(self, name) is not None and not callable(getattr(self, name)):
                raise _fail(name, "must be a function or None", getattr(self, name), TypeError)
        if self.permission_mode == "ask" and self.can_use_tool is None:
            raise _fail("permission_mode", "'ask' needs a can_use_tool callback",
                        self.permission_mode)
        for name in ("allowed_tools", "denied_tools"):
            rules = _check_str_list(name, getattr(self, name))
            for rule in rules:
                try:
                    check_rule(rule)
                except ValueError as exc:
                    raise ValueError(f"AgentConfig.{name}: {exc}") from None
            setattr(self, name, [r.strip() for r in rules])
        self.permission_timeout = _check_seconds("permission_timeout", self.permission_timeout)
        self.images = [os.fspath(p) for p in _check_str_list("images", [
            os.fspath(p) if isinstance(p, os.PathLike) else p for p in self.images])]
        if any(not p.strip() for p in self.images):
            raise _fail("images", "must be paths of image files (one is empty)", self.images)
        if self.images and self.transport != "acp":
            raise _fail("images", "need transport='acp' (print mode takes text prompts only)",
                        self.images)
        self.session_mode = _check_optional_text("session_mode", self.session_mode)
        if self.session_mode is not None and self.transport != "acp":
            raise _fail("session_mode", "needs transport='acp' (a session mode is ACP's "
                        "session/set_mode)", self.session_mode)
        if self.transport == "acp" and self.force_approve:
            # `agent --force acp` runs every tool call without asking (ACP.md §6): rules and a
            # callback that would stop a call are never consulted, so a denied call would run
            never_asked = {"can_use_tool": self.can_use_tool is not None,
                           "denied_tools": bool(self.denied_tools),
                           "permission_mode": self.permission_mode in ("ask", "read-only")}
            for name, given in never_asked.items():
                if given:
                    raise ValueError(
                        f"AgentConfig.force_approve and AgentConfig.{name} cannot go together "
                        "in ACP mode: with force_approve the agent runs every tool call without "
                        f"asking, so {name} would never be consulted (a call it refuses would "
                        "run); drop force_approve to steer the calls")
        if self.transport == "print":  # steering is ACP's: in print mode it would do nothing
            steering = {"can_use_tool": self.can_use_tool is not None,
                        "on_question": self.on_question is not None,
                        "on_plan": self.on_plan is not None,
                        "permission_mode": self.permission_mode != "deny",
                        "allowed_tools": bool(self.allowed_tools),
                        "denied_tools": bool(self.denied_tools),
                        "permission_timeout": self.permission_timeout is not None}
            for name, given in steering.items():
                if given:
                    raise ValueError(
                        f"AgentConfig.{name} needs transport='acp': print mode cannot be "
                        "steered (the agent runs its tools as --force and the workspace allow)")

    def with_overrides(self, **overrides: Any) -> AgentConfig:
        """A validated copy with some fields replaced (the ``**overrides`` of ``query``).

        Example:
            >>> AgentConfig(model="a").with_overrides(model="b", timeout=30).timeout
            30.0
            >>> AgentConfig().with_overrides(modle="b")
            Traceback (most recent call last):
            ...
            TypeError: unknown AgentConfig field 'modle' (fields: workspace, model, ...)
        """
        if not overrides:
            return dataclasses.replace(self)
        names = {f.name for f in dataclasses.fields(self)}
        for key in overrides:
            if key not in names:
                raise TypeError(
                    f"unknown AgentConfig field {key!r} (fields: workspace, model, ...)"
                )
        return dataclasses.replace(self, **overrides)
