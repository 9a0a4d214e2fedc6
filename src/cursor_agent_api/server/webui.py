"""What the web UI needs from the server: its static files, served safely, and tool-call views.

* :class:`WebUIFiles` serves ``cursor_agent_api/web/`` (shipped in the package, no build
  step) with ``no-cache`` so a new version is picked up at once; its strict
  Content-Security-Policy — no inline script or style, nothing from another origin — and
  the other security headers are those of every answer (:mod:`.checks.headers`).
* :func:`text_item` and :func:`tool_call_item` turn the stored rows of a folded turn into the
  items of ``GET /api/chats/{id}/turns`` (a tool call with its card fields).
* :func:`tool_call_view` turns the stored payload of a ``tool-call-started`` or
  ``tool-call-completed`` record into the plain fields a card shows (command, exit code,
  path, diff, read range, matches, MCP server and tool, todos, ...). The protocol layer
  reads the wire's dialects; the page never does.

Nothing here touches the database. See ``docs/web.md``.

Example:
    >>> view = tool_call_view({"data": {"type": "tool_call", "subtype": "started",
    ...     "call_id": "c1", "tool_call": {"shellToolCall": {"args": {"command": "ls"}}}}})
    >>> view["kind"], view["status"], view["command"]
    ('shell', 'running', 'ls')
"""

from __future__ import annotations

import copy
from collections.abc import MutableMapping
from typing import Any

from starlette.staticfiles import StaticFiles

from ..errors import CursorAgentError
from ..protocol.tools import (
    ToolCall,
    ToolKind,
    ToolStatus,
    shown_read_range,
    tool_call_from_event_data,
)

TEXT_LIMIT = 200_000
"""Characters of one text field a view carries; longer texts are cut (listed in ``cut``)."""

TOOL_RECORD_TYPES = frozenset({"tool-call-started", "tool-call-completed"})
"""Record types whose JSON form carries a ``tool_call`` view."""

NO_CACHE = (b"cache-control", b"no-cache")
"""What the UI's files add to the security headers every answer carries
(:data:`.checks.headers.SECURITY_HEADERS`, added around the whole app)."""


class WebUIFiles(StaticFiles):
    """Static files, each answer ``no-cache`` (in place of any cache-control of its own)."""

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        async def sending(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = [h for h in message.get("headers", []) if h[0].lower() != NO_CACHE[0]]
                message["headers"] = [*headers, NO_CACHE]
            await send(message)

        await super().__call__(scope, receive, sending)


WHOLE_FIELDS = ("output", "stdout", "stderr", "diff", "new_content")
"""The text fields of a view that may be cut; a view lists those it cut in ``cut`` (empty:
nothing cut; a view has no ``truncated``, which is everywhere else a list of
``{"field", "bytes"}``), and
``GET /api/runs/{id}/tool-calls/{index}/output?field=<name>`` gives each one whole. A list's
cut item (a grep's line, a glob's path) is in ``output``: the whole list, one item per line."""

LIST_LIMIT = 2000
"""Items of a glob's files or a grep's matches a view carries; ``files_total`` /
``matches_total`` say how many there were."""

_MARK = "\ufdd0"  # a noncharacter: marks the strings the store cut, to find the fields made of them


def _cut(text: str | None, view: dict[str, Any], field: str) -> str | None:
    if text is not None and len(text) > TEXT_LIMIT:
        view["cut"].append(field)
        return text[:TEXT_LIMIT]
    return text


def tool_call_view(payload: dict[str, Any]) -> dict[str, Any] | None:
    """The card fields of the tool call in a stored agent payload (``None`` if it has none).

    A completion in a dialect that omits the kind gives ``kind: "unknown"``; the page
    keeps what the start told it.

    Example:
        >>> v = tool_call_view({"data": {"type": "tool_call", "subtype": "completed",
        ...     "call_id": "c1", "tool_call": {"readToolCall": {"args": {"path": "a.txt"},
        ...     "result": {"success": {"content": "<b>", "readRange": {"startLine": 1,
        ...     "endLine": 1}}}}}}})
        >>> v["path"], v["read_range"], v["output"]
        ('a.txt', [1, 1], '<b>')
    """
    data = payload.get("data")
    if not isinstance(data, dict):
        return None
    tc = tool_call_from_event_data(data)
    if tc is None:
        return None
    return view_of(tc)


_LIBRARY_REJECTED = ToolCall("", status=ToolStatus.REJECTED).error_message
"""The library's words for a call rejected with no reason of its own: they name its argument
(``force_approve``), which the page's user never sees."""

PAGE_REJECTED = "rejected: not approved (the chat's option to run tools without asking, --force, allows it)"
"""The same, in the page's words: its option, in the new-chat and Options forms (each names
``--force``)."""


def page_error(tc: ToolCall) -> str | None:
    """Why the call did not succeed, as the page says it (:attr:`ToolCall.error_message`, but
    a rejection with no reason of its own names the page's option, not the library's argument).

    Example:
        >>> page_error(ToolCall("c", ToolKind.SHELL, status=ToolStatus.REJECTED)) == PAGE_REJECTED
        True
        >>> page_error(ToolCall("c", ToolKind.SHELL, status=ToolStatus.ABANDONED))
        'abandoned: the turn ended before the tool call completed'
    """
    text = tc.error_message
    return PAGE_REJECTED if tc.status is ToolStatus.REJECTED and text == _LIBRARY_REJECTED else text


def library_remedies() -> dict[str, list[str]]:
    """The remedies the library adds to its errors' messages (``"<message> — <remedy>"``), by
    error type, in both phrasings (Python's, the command line's): ``GET /api/config`` gives
    them to the page, which shows its own remedy in their place (a person in a browser has no
    ``AgentConfig`` nor ``--trust``).

    Example:
        >>> library_remedies()["WorkspaceTrustError"]
        ['pass trust=True (CLI: --trust), or force_approve=True (--force)', 'pass --trust, or --force']
    """
    remedies: dict[str, list[str]] = {}
    classes: list[type[CursorAgentError]] = [CursorAgentError]
    while classes:
        cls = classes.pop()
        classes.extend(cls.__subclasses__())
        phrasings = [r for r in dict.fromkeys((cls.remedy, cls.cli_remedy)) if r]
        if phrasings:
            remedies[cls.__name__] = phrasings
    return dict(sorted(remedies.items()))


def view_of(tc: ToolCall) -> dict[str, Any]:
    """The card fields of one :class:`ToolCall` (only those that apply to its kind).

    Example:
        >>> from cursor_agent_api.protocol.tools import ToolKind
        >>> view_of(ToolCall("c", ToolKind.GREP, "grepToolCall", {"pattern": "x"}))["pattern"]
        'x'
    """
    view: dict[str, Any] = {
        "call_id": tc.call_id,
        "kind": tc.kind.value,
        "name": tc.name,
        "status": tc.status.value,
        "description": tc.description,
        "summary": tc.summary(),
        "duration_ms": tc.duration_ms,
        "error": page_error(tc),
        "cut": [],
    }
    view["output"] = _cut(tc.output, view, "output")
    kind = tc.kind
    if kind is ToolKind.SHELL:
        view["command"] = tc.command
        view["exit_code"] = tc.exit_code
        view["stdout"] = _cut(tc.stdout, view, "stdout")
        view["stderr"] = _cut(tc.stderr, view, "stderr")
    if kind in (ToolKind.READ, ToolKind.WRITE, ToolKind.EDIT, ToolKind.DELETE, ToolKind.LS):
        view["path"] = tc.path
    if kind is ToolKind.READ:
        view["read_range"] = shown_read_range(tc.read_range, tc.content)
    if kind in (ToolKind.EDIT, ToolKind.WRITE):
        view["diff"] = _cut(tc.diff, view, "diff")
        view["new_content"] = _cut(tc.new_content, view, "new_content")
    if kind in (ToolKind.GREP, ToolKind.GLOB, ToolKind.SEM_SEARCH, ToolKind.WEB_SEARCH):
        view["pattern"] = tc.pattern
    if kind is ToolKind.GREP:
        view["matches"] = [
            {"file": f, "line": n, "text": line} for f, n, line in tc.grep_matches[:LIST_LIMIT]
        ]
        view["matches_total"] = len(tc.grep_matches)
    if kind is ToolKind.GLOB:
        view["files"] = tc.files[:LIST_LIMIT]
        view["files_total"] = len(tc.files)
    if kind is ToolKind.WEB_FETCH:
        view["url"] = tc.url
    if kind is ToolKind.WEB_SEARCH:
        view["references"] = [
            {"title": str(r.get("title", "")), "url": str(r.get("url", ""))} for r in tc.references[:200]
        ]
    if kind in (ToolKind.MCP, ToolKind.MCP_TOOLS):
        view["mcp_server"] = tc.mcp_server
        view["mcp_tool"] = tc.mcp_tool
        view["own_tool"] = tc.is_own_tool  # a client's own @tool function (docs/tools.md)
    if kind is ToolKind.TODOS:
        view["todos"] = [
            {"content": str(t.get("content", "")), "status": str(t.get("status", ""))} for t in tc.todos
        ]
    return view


def _is_cut_list(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(c, dict) and set(c) == {"field", "bytes"} and isinstance(c["field"], str)
        and c["field"].startswith(("/args", "/result", "/output")) and type(c["bytes"]) is int
        for c in value
    )


def stored_cuts(row: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
    """A stored tool call's result as the agent gave it (cut), and what the server cut of
    the call (``{"field": <JSON pointer>, "bytes": <whole size>}`` each).

    Since migration 0009 the cuts are in their own column (``cuts``) and the result is the
    agent's, whatever its keys. A row written before has no ``cuts`` (NULL): that version
    kept the list under the result's ``"_cut"`` key, which is taken for the server's when
    it is such a list, and left in the result (the agent's) when it is anything else.

    Example:
        >>> stored_cuts({"result": {"ok": 1, "_cut": 5}, "cuts": []})
        ({'ok': 1, '_cut': 5}, [])
        >>> old = {"result": {"ok": 1, "_cut": [{"field": "/args/a", "bytes": 9}]}, "cuts": None}
        >>> stored_cuts(old)
        ({'ok': 1}, [{'field': '/args/a', 'bytes': 9}])
        >>> stored_cuts({"result": {"_cut": "abc"}})
        ({'_cut': 'abc'}, [])
    """
    result = row.get("result")
    cuts = row.get("cuts")
    if isinstance(cuts, list):
        return result, cuts
    if isinstance(result, dict) and _is_cut_list(result.get("_cut")):
        return {k: v for k, v in result.items() if k != "_cut"} or None, list(result["_cut"])
    return result, []


def _call_of(row: dict[str, Any]) -> ToolCall:
    args = row.get("args")
    result, _ = stored_cuts(row)
    try:
        kind = ToolKind(row["kind"])
    except ValueError:
        kind = ToolKind.UNKNOWN
    try:
        status = ToolStatus(row["status"])
    except ValueError:
        status = ToolStatus.FAILED
    return ToolCall(
        call_id=row["call_id"],
        kind=kind,
        name=row.get("name") or "",
        args=args if isinstance(args, dict) else {},
        status=status,
        result=result if isinstance(result, dict) else None,
        description=row.get("description"),
        reported_duration_ms=row.get("duration_ms"),
    )


def _marked(row: dict[str, Any], cuts: list[Any]) -> dict[str, Any]:
    """``row`` with a mark after each string the store cut (``cuts``: its JSON pointers)."""
    doc = {"args": copy.deepcopy(row.get("args")), "result": copy.deepcopy(row.get("result"))}
    for cut in cuts:
        tokens = str(cut.get("field", "") if isinstance(cut, dict) else "").split("/")[1:]
        node: Any = doc
        for n, token in enumerate(tokens):
            key: Any = token.replace("~1", "/").replace("~0", "~")
            if isinstance(node, list) and key.isascii() and key.isdigit() and int(key) < len(node):
                key = int(key)
            elif not (isinstance(node, dict) and key in node):
                break
            if n == len(tokens) - 1 and isinstance(node[key], str):
                node[key] = node[key] + _MARK
            node = node[key]
    return {**row, **doc}


def _unmarked(value: Any) -> tuple[Any, bool]:
    """``value`` without the marks, through its lists and dicts; and whether it had one.

    Example:
        >>> _unmarked({"files": ["a\ufdd0", "b"], "n": 2})
        ({'files': ['a', 'b'], 'n': 2}, True)
    """
    if isinstance(value, str):
        return (value.replace(_MARK, ""), True) if _MARK in value else (value, False)
    if isinstance(value, list):
        pairs = [_unmarked(v) for v in value]
        return [v for v, _ in pairs], any(m for _, m in pairs)
    if isinstance(value, dict):
        marked = False
        out: dict[str, Any] = {}
        for k, v in value.items():
            out[k], m = _unmarked(v)
            marked = marked or m
        return out, marked
    return value, False


def stored_output(row: dict[str, Any]) -> str:
    """A stored tool call's output: the ``output`` column of rows written before migration
    0006, else (the column is empty) derived from its stored result as ``ToolCall.output``.

    Example:
        >>> row = {"call_id": "c", "kind": "read", "status": "succeeded", "output": "",
        ...        "args": {"path": "a"}, "result": {"success": {"content": "hi"}}}
        >>> stored_output(row)
        'hi'
    """
    return str(row.get("output") or "") or _call_of(row).output


def _read_content_cut(row: dict[str, Any]) -> dict[str, Any] | None:
    """A read's first cut of its result (its content's, which its range is counted on)."""
    if row.get("kind") != ToolKind.READ.value:
        return None
    _, cuts = stored_cuts(row)
    ours = (c for c in cuts if isinstance(c, dict) and str(c.get("field", "")).startswith("/result"))
    return next(ours, None)


def read_cut(row: dict[str, Any]) -> bool:
    """Whether ``row`` is a read whose result the store cut and whose range, as a person
    counts the lines (:func:`~..protocol.tools.shown_read_range`), needs the whole content
    read from its records (:func:`tool_call_item`): a row stored before the range was kept
    in its cut (``store.writes._tool_row`` counts it on the whole content when it writes it).

    Example:
        >>> read_cut({"kind": "read", "cuts": [{"field": "/result/success/content", "bytes": 9}]})
        True
        >>> cut = {"field": "/result/success/content", "bytes": 9, "read_range": [1, 300]}
        >>> read_cut({"kind": "read", "cuts": [cut]})
        False
        >>> read_cut({"kind": "read", "cuts": []}), read_cut({"kind": "ls", "cuts": None})
        (False, False)
    """
    cut = _read_content_cut(row)
    return cut is not None and "read_range" not in cut


def tool_call_item(row: dict[str, Any], whole_content: str | None = None) -> dict[str, Any]:
    """A stored tool call as the state's item: its index, seqs and card fields (``view``).

    A cut read's range is the one counted on its whole content, as the live card's is (the
    stored content is only its beginning): kept in its cut, or, for a row stored before,
    counted on ``whole_content`` (:func:`read_cut`), read from its records.

    Example:
        >>> item = tool_call_item({"idx": 0, "call_id": "c", "kind": "ls", "name": "lsToolCall",
        ...                        "status": "running", "args": {"path": "."}, "result": None,
        ...                        "started_seq": 3, "completed_seq": None})
        >>> item["type"], item["view"]["kind"], item["seq"]
        ('tool_call', 'ls', 3)
    """
    content_cut = _read_content_cut(row)
    result, cuts = stored_cuts(row)
    row = {**row, "result": result, "cuts": []}
    call = _call_of(_marked(row, cuts) if cuts else row)
    view = view_of(call)
    if call.kind is ToolKind.READ:
        if whole_content is not None:
            view["read_range"] = shown_read_range(call.read_range, whole_content)
        elif content_cut is not None and "read_range" in content_cut:
            view["read_range"] = content_cut["read_range"]
    if cuts:
        for key, value in list(view.items()):  # the fields made of a cut string are cut
            view[key], marked = _unmarked(value)  # a list's too (grep's matches, glob's files)
            if marked and key in WHOLE_FIELDS and key not in view["cut"]:
                view["cut"].append(key)
        if not view["cut"]:
            view["cut"] = [k for k in WHOLE_FIELDS if view.get(k)] or ["output"]
    seq = row.get("started_seq") or row.get("completed_seq") or 0
    return {"type": "tool_call", "index": row["idx"], "seq": seq, "view": view}


def text_item(row: dict[str, Any]) -> dict[str, Any]:
    """A stored text (segment, thinking block, error) as the state's item.

    Example:
        >>> text_item({"kind": "text", "idx": 0, "text": "Hi", "closed": True, "opened_seq": 4,
        ...            "bytes": None, "whole_seq": None})
        {'type': 'text', 'index': 0, 'seq': 4, 'text': 'Hi', 'closed': True}
    """
    item = {
        "type": row["kind"],
        "index": row["idx"],
        "seq": row["opened_seq"],
        "text": row["text"],
        "closed": bool(row["closed"]),
    }
    if row.get("bytes"):
        item["bytes"], item["whole_seq"] = row["bytes"], row["whole_seq"]
    return item


__all__ = [
    "LIST_LIMIT",
    "TOOL_RECORD_TYPES",
    "WHOLE_FIELDS",
    "WebUIFiles",
    "library_remedies",
    "read_cut",
    "stored_cuts",
    "stored_output",
    "text_item",
    "tool_call_item",
    "tool_call_view",
    "view_of",
]
