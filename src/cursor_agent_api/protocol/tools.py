"""Tool calls: every wire shape of a tool call read into one :class:`ToolCall`.

Three dialects carry tool calls (PROTOCOL.md §3.5 and §4):

* current builds: ``{"type": "tool_call", "call_id", "tool_call": {"<kind>ToolCall":
  {"args", "result"}, "startedAtMs", ...}}``, legacy ``"function": {"name", "arguments"}``;
* seed 002's envelope: ``{"payload": {"toolCall": {"id", "<kind>ToolCall": {...}, "result"}}}``;
* seed 004's flat form: ``{"type": "tool-call-started", "tool_name", "tool_call_id",
  "parameters"}`` and ``tool-call-completed`` with ``result`` and ``duration_ms``.

:func:`tool_call_from_event_data` reads any of them. Pairing ``started`` and
``completed`` events is the job of :class:`~cursor_agent_api.protocol.transcript.Transcript`.

Example:
    >>> tc = tool_call_from_event_data({
    ...     "type": "tool_call", "subtype": "completed", "call_id": "c1",
    ...     "tool_call": {"shellToolCall": {"args": {"command": "ls"},
    ...         "result": {"success": {"exitCode": 0, "stdout": "a\\n", "stderr": ""}}}}})
    >>> (tc.kind, tc.status, tc.exit_code, tc.output)
    (<ToolKind.SHELL: 'shell'>, <ToolStatus.SUCCEEDED: 'succeeded'>, 0, 'a\\n')
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from .ansi import json_text
from .limits import wire_int


class ToolKind(str, enum.Enum):
    """What a tool call does, whatever name the wire gave it."""

    READ = "read"
    WRITE = "write"
    EDIT = "edit"
    DELETE = "delete"
    SHELL = "shell"
    LS = "ls"
    GLOB = "glob"
    GREP = "grep"
    SEM_SEARCH = "sem_search"
    TODOS = "todos"
    MCP = "mcp"
    MCP_TOOLS = "mcp_tools"
    WEB_FETCH = "web_fetch"
    WEB_SEARCH = "web_search"
    ASK_QUESTION = "ask_question"
    CREATE_PLAN = "create_plan"
    FUNCTION = "function"
    UNKNOWN = "unknown"


class ToolStatus(str, enum.Enum):
    """Where a tool call stands. ``RUNNING`` until its completion arrives;
    ``ABANDONED`` when the turn ended without one."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    REJECTED = "rejected"
    DENIED = "denied"
    ERROR = "error"
    TIMEOUT = "timeout"
    ABANDONED = "abandoned"

    @property
    def finished(self) -> bool:
        """True for every status but ``RUNNING``."""
        return self is not ToolStatus.RUNNING


# Enum attribute access costs ~100 ns on CPython 3.10/3.11: hot paths use these constants.
_RUNNING = ToolStatus.RUNNING
_SUCCEEDED = ToolStatus.SUCCEEDED
_UNKNOWN_KIND = ToolKind.UNKNOWN

# Wire key (current dialect, seed 002's envelope) -> kind.
_KEY_KINDS: dict[str, ToolKind] = {
    "readToolCall": ToolKind.READ,
    "writeToolCall": ToolKind.WRITE,
    "writeFileToolCall": ToolKind.WRITE,
    "editToolCall": ToolKind.EDIT,
    "deleteToolCall": ToolKind.DELETE,
    "shellToolCall": ToolKind.SHELL,
    "lsToolCall": ToolKind.LS,
    "globToolCall": ToolKind.GLOB,
    "grepToolCall": ToolKind.GREP,
    "semSearchToolCall": ToolKind.SEM_SEARCH,
    "updateTodosToolCall": ToolKind.TODOS,
    "mcpToolCall": ToolKind.MCP,
    "getMcpToolsToolCall": ToolKind.MCP_TOOLS,
    "webFetchToolCall": ToolKind.WEB_FETCH,
    "webSearchToolCall": ToolKind.WEB_SEARCH,
    "askQuestionToolCall": ToolKind.ASK_QUESTION,
    "createPlanToolCall": ToolKind.CREATE_PLAN,
    "function": ToolKind.FUNCTION,
}

# Model-facing tool names (seed 001's list, seed 004's tool_name) -> kind.
_NAME_KINDS: dict[str, ToolKind] = {
    "shell": ToolKind.SHELL,
    "read": ToolKind.READ,
    "write": ToolKind.WRITE,
    "strreplace": ToolKind.EDIT,
    "edit": ToolKind.EDIT,
    "multiedit": ToolKind.EDIT,
    "applypatch": ToolKind.EDIT,
    "editnotebook": ToolKind.EDIT,
    "glob": ToolKind.GLOB,
    "grep": ToolKind.GREP,
    "ls": ToolKind.LS,
    "delete": ToolKind.DELETE,
    "todowrite": ToolKind.TODOS,
    "semanticsearch": ToolKind.SEM_SEARCH,
    "webfetch": ToolKind.WEB_FETCH,
    "websearch": ToolKind.WEB_SEARCH,
    "listmcpresources": ToolKind.MCP_TOOLS,
    "fetchmcpresource": ToolKind.MCP,
}

# Result key -> status (PROTOCOL.md §3.5).
_OUTCOMES: dict[str, ToolStatus] = {
    "success": ToolStatus.SUCCEEDED,
    "failure": ToolStatus.FAILED,
    "rejected": ToolStatus.REJECTED,
    "permissionDenied": ToolStatus.DENIED,
    "error": ToolStatus.ERROR,
    "spawnError": ToolStatus.ERROR,
    "toolNotFound": ToolStatus.ERROR,
    "serverNotFound": ToolStatus.ERROR,
    "timeout": ToolStatus.TIMEOUT,
}

# interaction_query type -> kind of the tool call it asks about.
QUERY_KINDS: dict[str, ToolKind] = {
    "webFetchRequestQuery": ToolKind.WEB_FETCH,
    "webSearchRequestQuery": ToolKind.WEB_SEARCH,
    "askQuestionInteractionQuery": ToolKind.ASK_QUESTION,
    "createPlanRequestQuery": ToolKind.CREATE_PLAN,
}


def kind_for_key(key: str) -> ToolKind:
    """The kind for a wire key (``readToolCall``) or a tool name (``Read``).

    Example:
        >>> kind_for_key("readLintsToolCall"), kind_for_key("StrReplace")
        (<ToolKind.UNKNOWN: 'unknown'>, <ToolKind.EDIT: 'edit'>)
    """
    kind = _KEY_KINDS.get(key)
    if kind is not None:
        return kind
    return _NAME_KINDS.get(key.replace("_", "").lower(), ToolKind.UNKNOWN)


def _function_kind(name: str) -> ToolKind:
    """The kind of a legacy ``function: {name}`` call: a known tool name (``Shell``) gives its
    kind, any other name ``FUNCTION``.

    Example:
        >>> _function_kind("Shell"), _function_kind("my_tool")
        (<ToolKind.SHELL: 'shell'>, <ToolKind.FUNCTION: 'function'>)
    """
    kind = kind_for_key(name)
    return ToolKind.FUNCTION if kind is _UNKNOWN_KIND else kind


OWN_TOOL_SERVER_PREFIX = "python-tools-"
"""The ``mcp.json`` key (the wire's ``providerIdentifier``) of a client's own tool server is
this prefix and 8 hex digits, random per client (see :mod:`cursor_agent_api.tools`)."""

_OWN_SERVER = re.compile(re.escape(OWN_TOOL_SERVER_PREFIX) + r"[0-9a-f]{8}")


def is_own_tool_server(name: str) -> bool:
    """True if ``name`` is the ``mcp.json`` key a client gives its own tool server.

    Example:
        >>> is_own_tool_server("python-tools-0a1b2c3d"), is_own_tool_server("github")
        (True, False)
    """
    return _OWN_SERVER.fullmatch(name) is not None


def _local_dict(local: Any) -> dict[str, Any] | None:
    to_dict = getattr(local, "to_dict", None)
    value = to_dict() if callable(to_dict) else None
    return value if isinstance(value, dict) else None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


@dataclass(slots=True)
class ToolCall:
    """One tool call, normalized.

    ``call_id`` is kept exactly as written (it may contain a newline). ``name``
    is the tool's key on the wire (``readToolCall``, ``readLintsToolCall``,
    ``Shell``); ``kind`` what it does. ``args`` and ``result`` are the raw
    objects; the properties below read them for each kind.

    Example:
        >>> tc = ToolCall(call_id="c1", kind=ToolKind.READ, name="readToolCall",
        ...               args={"path": "a.txt"})
        >>> tc.status, tc.path
        (<ToolStatus.RUNNING: 'running'>, 'a.txt')
    """

    call_id: str
    kind: ToolKind = ToolKind.UNKNOWN
    name: str = ""
    args: dict[str, Any] = field(default_factory=dict)
    status: ToolStatus = ToolStatus.RUNNING
    result: dict[str, Any] | None = None
    description: str | None = None
    model_call_id: str | None = None
    started_at_ms: int | None = None
    completed_at_ms: int | None = None
    reported_duration_ms: int | None = None
    local: Any = field(default=None, compare=False, repr=False)
    """What the host process did for this call when it was one of its own ``@tool`` functions
    (a :class:`cursor_agent_api.tools.LocalInvocation`: arguments, value or exception,
    duration), linked by the client; ``None`` otherwise."""

    @property
    def is_own_tool(self) -> bool:
        """True for an MCP call served by a client's own tool server (``@tool`` functions).

        Example:
            >>> ToolCall("c", ToolKind.MCP, "mcpToolCall",
            ...          args={"providerIdentifier": "python-tools-0a1b2c3d"}).is_own_tool
            True
        """
        server = self.mcp_server if self.kind is ToolKind.MCP else None
        return server is not None and is_own_tool_server(server)

    # ---- the outcome -------------------------------------------------------------------

    @property
    def outcome(self) -> str | None:
        """The result's outcome key (``success``, ``rejected``, ...), if it has one."""
        result = self.result
        if not result:
            return None
        for key in result:
            if key in _OUTCOMES:
                return key
        return None

    @property
    def outcome_value(self) -> dict[str, Any]:
        """The object under the outcome key; for dialects without one, the result itself."""
        result = self.result
        if not result:
            return {}
        key = self.outcome
        if key is None:
            return result
        value = result.get(key)
        # Seed 004's flat results say {"success": true, "output": ...}: the outcome
        # key holds a flag, and the fields stand beside it.
        return value if isinstance(value, dict) else result

    @property
    def error_message(self) -> str | None:
        """Why the call did not succeed (reason, message or error text), if known."""
        if self.status in (ToolStatus.SUCCEEDED, ToolStatus.RUNNING):
            return None
        if self.status is ToolStatus.ABANDONED:
            return "abandoned: the turn ended before the tool call completed"
        value = self.outcome_value
        for key in ("reason", "message", "error", "errorMessage", "stderr"):
            text = value.get(key)
            if isinstance(text, str) and text:
                return text
            if isinstance(text, dict):
                inner = _str(text.get("message"))
                if inner:
                    return inner
        if self.result and isinstance(self.result.get("error"), str):
            return str(self.result["error"])
        if self.kind in (ToolKind.MCP, ToolKind.MCP_TOOLS) and value.get("isError") is True:
            text = self.mcp_output  # a tool that raised: its content says why
            if text:
                return text
        if self.status is ToolStatus.REJECTED:
            return "rejected: not approved (force_approve / --force allows it)"
        if self.status is ToolStatus.DENIED:
            return "denied by a permission rule"
        return str(self.status.value)

    @property
    def duration_ms(self) -> int | None:
        """Milliseconds from start to completion, when the wire tells."""
        if self.started_at_ms is not None and self.completed_at_ms is not None:
            return wire_int(max(0, self.completed_at_ms - self.started_at_ms))
        if self.reported_duration_ms is not None:
            return self.reported_duration_ms
        return wire_int(self.outcome_value.get("executionTime"))

    # ---- conveniences per kind ---------------------------------------------------------

    def _pick(self, *keys: str) -> Any:
        args = self.args
        value = self.outcome_value
        for key in keys:
            if key in args and args[key] not in (None, ""):
                return args[key]
            if key in value and value[key] not in (None, ""):
                return value[key]
        return None

    @property
    def command(self) -> str | None:
        """Shell: the command line."""
        return _str(self._pick("command"))

    @property
    def exit_code(self) -> int | None:
        """Shell: the exit code (``None`` when the command never ran)."""
        value = self.outcome_value
        for key in ("exitCode", "exit_code"):
            if key in value:
                return wire_int(value[key])
        return None

    @property
    def stdout(self) -> str | None:
        """Shell: standard output."""
        value = self.outcome_value
        text = _str(value.get("stdout"))
        if text is None:
            text = _str(value.get("output"))
        return text

    @property
    def stderr(self) -> str | None:
        """Shell: standard error."""
        return _str(self.outcome_value.get("stderr"))

    @property
    def path(self) -> str | None:
        """Read, write, edit, delete, ls: the file or directory."""
        return _str(self._pick("path", "file_path", "filePath", "targetFile"))

    @property
    def diff(self) -> str | None:
        """Edit: the unified diff of the change."""
        return _str(self.outcome_value.get("diffString"))

    @property
    def new_content(self) -> str | None:
        """Write and edit: the file's content after the call, when the wire carries it."""
        value = self.outcome_value
        return _str(
            value.get("afterFullFileContent")
            or self.args.get("fileText")
            or self.args.get("contents")
            or self.args.get("streamContent")
        )

    @property
    def content(self) -> str | None:
        """Read: the text that was read."""
        return _str(self.outcome_value.get("content")) if self.kind is ToolKind.READ else None

    @property
    def read_range(self) -> tuple[int, int] | None:
        """Read: the ``(start_line, end_line)`` that was read."""
        rr = _dict(self.outcome_value.get("readRange"))
        start, end = wire_int(rr.get("startLine")), wire_int(rr.get("endLine"))
        if start is None or end is None:
            return None
        return (start, end)

    @property
    def pattern(self) -> str | None:
        """Grep, glob, search: the pattern or query."""
        return _str(self._pick("pattern", "globPattern", "query", "searchTerm"))

    @property
    def url(self) -> str | None:
        """Web fetch: the URL."""
        return _str(self._pick("url"))

    @property
    def mcp_server(self) -> str | None:
        """MCP: the server."""
        return _str(self._pick("serverIdentifier", "providerIdentifier", "server"))

    @property
    def mcp_tool(self) -> str | None:
        """MCP: the tool's name on its server."""
        return _str(self._pick("toolName"))

    @property
    def mcp_output(self) -> str | None:
        """MCP: the text of the result (the nested ``content[].text.text`` joined)."""
        content = self.outcome_value.get("content")
        if isinstance(content, str):
            return content
        if not isinstance(content, list):
            return None
        parts: list[str] = []
        for item in content:
            if not isinstance(item, dict):
                continue
            text = item.get("text")
            if isinstance(text, dict):
                text = text.get("text")
            if isinstance(text, str):
                parts.append(text)
        return "\n".join(parts)

    @property
    def references(self) -> list[dict[str, Any]]:
        """Web search: ``[{title, url, chunk}]``."""
        refs = self.outcome_value.get("references")
        return [r for r in refs if isinstance(r, dict)] if isinstance(refs, list) else []

    @property
    def todos(self) -> list[dict[str, Any]]:
        """Todos: the list after the call (or as asked, while running)."""
        todos = self.outcome_value.get("todos")
        if not isinstance(todos, list):
            todos = self.args.get("todos")
        return [t for t in todos if isinstance(t, dict)] if isinstance(todos, list) else []

    @property
    def files(self) -> list[str]:
        """Glob: the files found."""
        files = self.outcome_value.get("files")
        if not isinstance(files, list):
            return []
        return [f if isinstance(f, str) else str(_dict(f).get("path", f)) for f in files]

    @property
    def grep_matches(self) -> list[tuple[str, int | None, str]]:
        """Grep: ``(file, line_number, line)`` for every matching line."""
        out: list[tuple[str, int | None, str]] = []
        roots = _dict(self.outcome_value.get("workspaceResults"))
        for root in roots.values():
            content = _dict(_dict(root).get("content"))
            for file_hit in content.get("matches") or []:
                file_hit = _dict(file_hit)
                name = str(file_hit.get("file", ""))
                for m in file_hit.get("matches") or []:
                    m = _dict(m)
                    if m.get("isContextLine"):
                        continue
                    out.append((name, wire_int(m.get("lineNumber")), str(m.get("content", ""))))
        return out

    @property
    def output(self) -> str:
        """The one text a person would want to see for this call.

        Shell: its output; read: the content; edit: the diff; MCP: its text;
        a call that did not succeed: why.
        """
        if self.status is ToolStatus.RUNNING:
            return ""
        if self.status is not ToolStatus.SUCCEEDED:
            if self.kind is ToolKind.SHELL and self.status is ToolStatus.FAILED:
                return self._shell_output() or (self.error_message or "")
            return self.error_message or ""
        kind = self.kind
        value = self.outcome_value
        if kind is ToolKind.SHELL:
            return self._shell_output()
        if kind is ToolKind.READ:
            return self.content or ""
        if kind is ToolKind.EDIT:
            return self.diff or _str(value.get("message")) or ""
        if kind is ToolKind.WRITE:
            lines = wire_int(value.get("linesCreated"))
            path = _str(value.get("path")) or self.path or ""
            return f"{path}: {lines} lines written" if lines is not None else path
        if kind is ToolKind.DELETE:
            return f"{self.path or ''} deleted"
        if kind is ToolKind.LS:
            return _render_tree(value.get("directoryTreeRoot"))
        if kind is ToolKind.GLOB:
            return "\n".join(self.files)
        if kind is ToolKind.GREP:
            return "\n".join(
                f"{f}:{n}:{line}" if n is not None else f"{f}:{line}"
                for f, n, line in self.grep_matches
            )
        if kind in (ToolKind.MCP, ToolKind.MCP_TOOLS):
            return self.mcp_output or ""
        if kind is ToolKind.WEB_FETCH:
            return _str(value.get("markdown")) or ""
        if kind is ToolKind.WEB_SEARCH:
            return "\n".join(f"{r.get('title', '')} — {r.get('url', '')}" for r in self.references)
        if kind is ToolKind.TODOS:
            return "\n".join(_todo_line(t) for t in self.todos)
        if any(k in value for k in ("stdout", "stderr", "interleavedOutput")):
            return self._shell_output()
        for key in ("output", "content", "text", "message"):
            if isinstance(value.get(key), str):
                return str(value[key])
        if not value:
            return ""
        return json_text(value)

    def _shell_output(self) -> str:
        value = self.outcome_value
        inter = _str(value.get("interleavedOutput"))
        if inter:
            return inter
        out, err = self.stdout or "", self.stderr or ""
        return out + err if out and err else out or err

    def summary(self) -> str:
        """A short form of the args: the command, the path, the pattern, the URL.

        Example:
            >>> ToolCall("c", ToolKind.GREP, "grepToolCall", {"pattern": "TODO"}).summary()
            'TODO'
        """
        for text in (self.command, self.pattern, self.url, self.path):
            if text:
                return text
        if self.kind in (ToolKind.MCP, ToolKind.MCP_TOOLS):
            return f"{self.mcp_server or ''}/{self.mcp_tool or ''}".strip("/")
        if self.kind is ToolKind.TODOS:
            return f"{len(self.todos)} todos"
        title = self.args.get("title")
        return title if isinstance(title, str) else ""

    # ---- pairing -----------------------------------------------------------------------

    def update(self, later: ToolCall) -> None:
        """Fold a later event of the same call (its completion) into this one.

        What the later event omits (rejected completions omit ``args``; seed 002's
        completions omit the kind) is kept from this one.
        """
        if later.name and (later.kind is not _UNKNOWN_KIND or self.kind is _UNKNOWN_KIND):
            self.kind = later.kind
            self.name = later.name
        if later.args:
            self.args = later.args
        if later.result is not None or later.status is not _RUNNING:
            self.result = later.result
            self.status = later.status
        self.description = later.description or self.description
        self.model_call_id = later.model_call_id or self.model_call_id
        self.started_at_ms = self.started_at_ms or later.started_at_ms
        self.completed_at_ms = later.completed_at_ms or self.completed_at_ms
        if later.reported_duration_ms is not None:
            self.reported_duration_ms = later.reported_duration_ms
        if later.local is not None:
            self.local = later.local

    def copy(self) -> ToolCall:
        """A shallow copy (the args and result objects are shared)."""
        return ToolCall(
            self.call_id,
            self.kind,
            self.name,
            self.args,
            self.status,
            self.result,
            self.description,
            self.model_call_id,
            self.started_at_ms,
            self.completed_at_ms,
            self.reported_duration_ms,
            self.local,
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: the fields plus ``output``, ``exit_code`` and ``duration_ms``.

        Example:
            >>> ToolCall("c", ToolKind.LS, "lsToolCall").to_dict()["status"]
            'running'
        """
        return {
            "call_id": self.call_id,
            "kind": self.kind.value,
            "name": self.name,
            "status": self.status.value,
            "args": self.args,
            "result": self.result,
            "description": self.description,
            "model_call_id": self.model_call_id,
            "started_at_ms": self.started_at_ms,
            "completed_at_ms": self.completed_at_ms,
            "duration_ms": self.duration_ms,
            "exit_code": self.exit_code,
            "output": self.output,
            "own_tool": self.is_own_tool,
            "local": _local_dict(self.local),
        }


def _todo_line(todo: dict[str, Any]) -> str:
    status = str(todo.get("status", ""))
    mark = {
        "TODO_STATUS_COMPLETED": "[x]",
        "TODO_STATUS_IN_PROGRESS": "[~]",
        "TODO_STATUS_CANCELLED": "[-]",
    }.get(status, "[ ]")
    return f"{mark} {todo.get('content', '')}"


def _render_tree(node: Any, depth: int = 0, limit: int = 2000) -> str:
    """Render an ``lsToolCall`` ``directoryTreeRoot`` as an indented listing."""
    lines: list[str] = []

    def walk(n: Any, d: int) -> None:
        if len(lines) >= limit or not isinstance(n, dict):
            return
        name = n.get("absPath") or n.get("path") or n.get("name") or ""
        if d == 0:
            lines.append(str(name))
        for child in n.get("childrenDirs") or []:
            child_name = _dict(child).get("absPath") or _dict(child).get("name") or ""
            lines.append("  " * (d + 1) + str(child_name).rstrip("/").rsplit("/", 1)[-1] + "/")
            walk(child, d + 1)
        for f in n.get("childrenFiles") or []:
            f_name = _dict(f).get("name") if isinstance(f, dict) else f
            lines.append("  " * (d + 1) + str(f_name))

    walk(node, depth)
    return "\n".join(lines)


def _parse_arguments(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed = orjson.loads(value)
        except orjson.JSONDecodeError:
            return {"arguments": value}
        return parsed if isinstance(parsed, dict) else {"arguments": parsed}
    return {}


def status_for_result(result: Any) -> ToolStatus:
    """The status a completion's ``result`` object stands for.

    Example:
        >>> status_for_result({"rejected": {"reason": ""}})
        <ToolStatus.REJECTED: 'rejected'>
        >>> status_for_result({"exitCode": 2, "stdout": ""})
        <ToolStatus.FAILED: 'failed'>
    """
    if not isinstance(result, dict):
        if result is False:
            return ToolStatus.FAILED
        return _SUCCEEDED
    for key, value in result.items():
        status = _OUTCOMES.get(key)
        if status is None:
            continue
        if status is _SUCCEEDED:
            if value is False:
                break  # seed 004's {"success": false, ...}: decided below
            if isinstance(value, dict) and value.get("isError") is True:
                return ToolStatus.FAILED
        return status
    if result.get("success") is False or result.get("is_error") is True:
        return ToolStatus.FAILED
    if result.get("isError") is True:
        return ToolStatus.FAILED
    for key in ("exitCode", "exit_code"):
        code = result.get(key)
        if isinstance(code, int) and not isinstance(code, bool):
            return ToolStatus.SUCCEEDED if code == 0 else ToolStatus.FAILED
    return _SUCCEEDED


def _find_kind_key(obj: dict[str, Any]) -> str | None:
    for key in obj:
        if key.endswith("ToolCall") or key == "function":
            return key
    return None


def shown_read_range(read_range: tuple[int, int] | None, content: str | None) -> list[int] | None:
    r"""The lines a read returned, as a person counts them (the page's card shows this range;
    the server's store keeps it for a read whose content it cuts, counted on the whole content).

    The CLI counts the empty "line" after a final newline (``"alpha\nbeta\n"`` is read as
    lines 1-3); the range shown ends at the content's last line.

    Example:
        >>> shown_read_range((1, 3), "alpha\nbeta\n")
        [1, 2]
        >>> shown_read_range((5, 6), "e\nf")
        [5, 6]
        >>> shown_read_range((1, 1), None), shown_read_range(None, "x")
        ([1, 1], None)
    """
    if read_range is None:
        return None
    start, end = read_range
    if content:
        lines = content.count("\n") + (0 if content.endswith("\n") else 1)
        end = min(end, start + lines - 1)
    return [start, end]


def tool_call_from_event_data(data: dict[str, Any]) -> ToolCall | None:
    """Read the tool call carried by one event object, in any dialect.

    Returns ``None`` when the object carries no tool call. A ``started`` event
    gives a ``RUNNING`` call; a ``completed`` one the call with its outcome.
    """
    raw_type = data.get("type")
    if raw_type in ("tool-call-started", "tool-call-completed"):
        return _flat_tool_call(data, completed=raw_type == "tool-call-completed")
    completed = data.get("subtype") == "completed"
    tc = data.get("tool_call")
    if isinstance(tc, dict):
        return _current_tool_call(data, tc, completed)
    payload = data.get("payload")
    if isinstance(payload, dict):
        env = payload.get("toolCall") or payload.get("tool_call")
        if isinstance(env, dict):
            return _envelope_tool_call(env, completed)
    return None


def _current_tool_call(data: dict[str, Any], tc: dict[str, Any], completed: bool) -> ToolCall:
    call_id = data.get("call_id")
    if call_id.__class__ is not str:
        call_id = tc.get("toolCallId")
        call_id = call_id if isinstance(call_id, str) else str(call_id or "")
    key = None
    for k in tc:  # the kind is the one key ending in "ToolCall"
        if k.endswith("ToolCall") or k == "function":
            key = k
            break
    model_call_id = data.get("model_call_id")
    if model_call_id.__class__ is not str:
        model_call_id = None
    started = tc.get("startedAtMs")
    if started is not None:
        started = wire_int(started)
    done = tc.get("completedAtMs")
    if done is not None:
        done = wire_int(done)
    if started is None or (done is None and completed):
        # no tool clock on the call (an lsToolCall): the event timestamps stand in
        stamp = wire_int(data.get("timestamp_ms"))
        if stamp is not None:
            if completed:
                done = stamp if done is None else done
            elif started is None:
                started = stamp
    if key is None:
        status = _SUCCEEDED if completed else _RUNNING
        return ToolCall(call_id, _UNKNOWN_KIND, "", {}, status, None, None,
                        model_call_id, started, done)
    inner = tc[key]
    if inner.__class__ is not dict:
        inner = {}
    if key == "function":
        name = inner.get("name")
        name = name if isinstance(name, str) and name else key
        args = _parse_arguments(inner.get("arguments"))
        kind = _function_kind(name)
    else:
        name = key
        found = inner.get("args")
        args = found if found.__class__ is dict else {}
        kind = _KEY_KINDS.get(key, _UNKNOWN_KIND)
    description = inner.get("description")
    if description.__class__ is not str:
        description = None
    result = inner.get("result")
    status = _RUNNING
    if completed or result is not None:
        status = status_for_result(result)
        if result.__class__ is not dict:
            result = None
    else:
        result = None
    return ToolCall(call_id, kind, name, args, status, result,
                    description, model_call_id, started, done)


def _envelope_tool_call(env: dict[str, Any], completed: bool) -> ToolCall:
    call_id = env.get("id") or env.get("toolCallId") or ""
    call = ToolCall(call_id if isinstance(call_id, str) else str(call_id))
    key = _find_kind_key(env)
    if key is not None:
        inner = _dict(env.get(key))
        call.kind = _KEY_KINDS.get(key, ToolKind.UNKNOWN)
        call.name = key
        if "args" in inner:
            call.args = _parse_arguments(inner.get("args"))
        else:
            call.args = {k: v for k, v in inner.items() if k not in ("name", "result")}
        if key == "function":
            call.name = _str(inner.get("name")) or key
            call.args = _parse_arguments(inner.get("arguments"))
            call.kind = _function_kind(call.name)
        result = inner.get("result", env.get("result"))
    else:
        result = env.get("result")
    if completed or result is not None:
        call.result = result if isinstance(result, dict) else {"success": result}
        call.status = status_for_result(result)
    return call


def _flat_tool_call(data: dict[str, Any], completed: bool) -> ToolCall:
    call_id = data.get("tool_call_id") or data.get("call_id") or ""
    name = _str(data.get("tool_name")) or ""
    call = ToolCall(call_id if isinstance(call_id, str) else str(call_id))
    call.name = name
    call.kind = kind_for_key(name) if name else ToolKind.UNKNOWN
    call.args = _parse_arguments(data.get("parameters"))
    call.reported_duration_ms = wire_int(data.get("duration_ms"))
    if completed:
        result = data.get("result")
        call.result = result if isinstance(result, dict) else {"output": result}
        call.status = status_for_result(result)
    return call
