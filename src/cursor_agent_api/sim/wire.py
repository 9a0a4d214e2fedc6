"""Wire builders: the event objects of the current dialect (builds 2026.09+), one function each.

This is the one definition of what current ``agent --print --output-format stream-json``
builds write (PROTOCOL.md §3), taken from the real recordings in
``tests/data/cursor-real/``. The simulator writes every event through these builders
and :func:`encode`, which checks each object with the project's own event model before
turning it into a line, so a shape the parser would misread never reaches the wire.

What lives here: plain ``dict`` builders for events (``system_init``, ``user``,
``thinking_*``, ``assistant_*``, ``tool_call_*``, ``interaction_*``, ``result_success``),
builders for the ``args`` and ``result`` objects of each tool kind, and :func:`encode`.
What does not: reading lines (:mod:`.events`), folding a turn (:mod:`.transcript`),
any I/O.

Example:
    >>> sid = "8ef40118-8378-436d-8ba8-2436b19cc877"
    >>> line = encode(assistant_final(sid, "Hello"))
    >>> line.endswith(b"\\n"), parse_event(line).text
    (True, 'Hello')
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..protocol.events import AgentEvent, EventType, event_from_object, parse_event
from . import node_text

__all__ = [
    "EXPECTED_TYPES",
    "WireShapeError",
    "ask_question_args",
    "assistant_delta",
    "assistant_final",
    "assistant_segment",
    "check",
    "delete_args",
    "delete_success",
    "dir_tree_node",
    "edit_args",
    "edit_success",
    "encode",
    "error_outcome",
    "get_mcp_tools_args",
    "glob_args",
    "glob_success",
    "grep_args",
    "grep_success",
    "interaction_request",
    "interaction_response",
    "ls_args",
    "ls_success",
    "mcp_args",
    "mcp_success",
    "parse_event",
    "permission_denied",
    "read_args",
    "read_success",
    "rejected",
    "result_success",
    "shell_args",
    "shell_outcome",
    "shell_rejected",
    "system_init",
    "thinking_completed",
    "thinking_delta",
    "todo_item",
    "todos_args",
    "todos_success",
    "tool_call_completed",
    "tool_call_started",
    "usage",
    "user",
    "web_fetch_args",
    "web_fetch_success",
    "web_search_args",
    "web_search_success",
    "write_args",
    "write_success",
]


class WireShapeError(ValueError):
    """An object built for the wire does not read back as the event it was meant to be.

    Example:
        >>> try:
        ...     check({"type": "assistant"}, EventType.RESULT_SUCCESS)
        ... except WireShapeError as e:
        ...     print(str(e).split(": ")[0])
        wire object reads back as assistant, not result:success
    """


EXPECTED_TYPES: dict[tuple[str, str | None], EventType] = {
    ("system", "init"): EventType.SYSTEM_INIT,
    ("user", None): EventType.USER,
    ("thinking", "delta"): EventType.THINKING_DELTA,
    ("thinking", "completed"): EventType.THINKING_COMPLETED,
    ("tool_call", "started"): EventType.TOOL_CALL_STARTED,
    ("tool_call", "completed"): EventType.TOOL_CALL_COMPLETED,
    ("interaction_query", "request"): EventType.INTERACTION_QUERY,
    ("interaction_query", "response"): EventType.INTERACTION_QUERY,
    ("result", "success"): EventType.RESULT_SUCCESS,
}
"""What each ``(type, subtype)`` the builders write must parse back as (assistant lines
depend on their markers and are checked by :func:`check` directly)."""


def _text_message(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": text}]}


# ---- events --------------------------------------------------------------------------------


def system_init(
    session_id: str,
    cwd: str,
    model: str,
    *,
    api_key_source: str = "login",
    permission_mode: str = "default",
) -> dict[str, Any]:
    """The first line of a turn: ``system``/``init`` (§3.1), key order as recorded.

    ``model`` is the display name ("GPT-5 Mini"), not the slug.

    Example:
        >>> system_init("s1", "/ws", "Auto")["apiKeySource"]
        'login'
    """
    return {
        "type": "system",
        "subtype": "init",
        "apiKeySource": api_key_source,
        "cwd": cwd,
        "session_id": session_id,
        "model": model,
        "permissionMode": permission_mode,
    }


def user(session_id: str, text: str) -> dict[str, Any]:
    """The prompt echo (§3.2).

    Example:
        >>> parse_event(encode(user("s1", "hi"))).text
        'hi'
    """
    return {"type": "user", "message": _text_message("user", text), "session_id": session_id}


def thinking_delta(session_id: str, text: str, timestamp_ms: int) -> dict[str, Any]:
    """A fragment of reasoning (§3.3).

    Example:
        >>> thinking_delta("s1", "hm", 1)["subtype"]
        'delta'
    """
    return {
        "type": "thinking",
        "subtype": "delta",
        "text": text,
        "session_id": session_id,
        "timestamp_ms": timestamp_ms,
    }


def thinking_completed(session_id: str, timestamp_ms: int) -> dict[str, Any]:
    """The end of a thinking block (no text).

    Example:
        >>> "text" in thinking_completed("s1", 1)
        False
    """
    return {
        "type": "thinking",
        "subtype": "completed",
        "session_id": session_id,
        "timestamp_ms": timestamp_ms,
    }


def assistant_delta(session_id: str, text: str, timestamp_ms: int) -> dict[str, Any]:
    """Shape A of §3.4: a fragment (``--stream-partial-output``): ``timestamp_ms``, no
    ``model_call_id``.

    Example:
        >>> parse_event(encode(assistant_delta("s1", "Hel", 1))).type.value
        'assistant:delta'
    """
    return {
        "type": "assistant",
        "message": _text_message("assistant", text),
        "session_id": session_id,
        "timestamp_ms": timestamp_ms,
    }


def assistant_segment(session_id: str, text: str, model_call_id: str, timestamp_ms: int) -> dict[str, Any]:
    """Shape B of §3.4: the whole text of the segment before a tool call.

    Example:
        >>> e = parse_event(encode(assistant_segment("s1", "Reading.", "r-0-ab12", 1)))
        >>> e.type.value, e.model_call_id
        ('assistant', 'r-0-ab12')
    """
    return {
        "type": "assistant",
        "message": _text_message("assistant", text),
        "session_id": session_id,
        "model_call_id": model_call_id,
        "timestamp_ms": timestamp_ms,
    }


def assistant_final(session_id: str, text: str) -> dict[str, Any]:
    """Shape C of §3.4: the whole text after the last tool call, with neither marker.

    Example:
        >>> sorted(assistant_final("s1", "Done"))
        ['message', 'session_id', 'type']
    """
    return {
        "type": "assistant",
        "message": _text_message("assistant", text),
        "session_id": session_id,
    }


def tool_call_started(
    session_id: str,
    call_id: str,
    kind_key: str,
    args: dict[str, Any],
    *,
    model_call_id: str,
    started_at_ms: int,
    timestamp_ms: int,
    description: str | None = None,
) -> dict[str, Any]:
    """``tool_call``/``started`` (§3.5). ``kind_key`` is e.g. ``"readToolCall"``; the
    ``…AtMs`` values are written as strings, as real builds do.

    Example:
        >>> e = parse_event(encode(tool_call_started(
        ...     "s1", "tool_1", "lsToolCall", ls_args("/ws"),
        ...     model_call_id="r-0-ab12", started_at_ms=5, timestamp_ms=5)))
        >>> e.tool_call.kind.value, e.tool_call.status.value
        ('ls', 'running')
    """
    inner: dict[str, Any] = {"args": args}
    if description is not None:
        inner["description"] = description
    return {
        "type": "tool_call",
        "subtype": "started",
        "call_id": call_id,
        "tool_call": {
            kind_key: inner,
            "hookAdditionalContexts": [],
            "toolCallId": call_id,
            "startedAtMs": str(started_at_ms),
        },
        "model_call_id": model_call_id,
        "session_id": session_id,
        "timestamp_ms": timestamp_ms,
    }


def tool_call_completed(
    session_id: str,
    call_id: str,
    kind_key: str,
    result: dict[str, Any],
    *,
    args: dict[str, Any] | None,
    model_call_id: str,
    started_at_ms: int,
    completed_at_ms: int,
    timestamp_ms: int,
    description: str | None = None,
) -> dict[str, Any]:
    """``tool_call``/``completed`` with its outcome (``result`` is ``{"success": …}``,
    ``{"rejected": …}``, …). Pass ``args=None`` for a rejected call: real builds omit them.

    Example:
        >>> e = parse_event(encode(tool_call_completed(
        ...     "s1", "tool_1", "shellToolCall", shell_rejected("ls", "/ws"), args=None,
        ...     model_call_id="r-0-ab12", started_at_ms=5, completed_at_ms=9, timestamp_ms=9)))
        >>> e.tool_call.status.value
        'rejected'
    """
    inner: dict[str, Any] = {}
    if args is not None:
        inner["args"] = args
    inner["result"] = result
    if description is not None:
        inner["description"] = description
    return {
        "type": "tool_call",
        "subtype": "completed",
        "call_id": call_id,
        "tool_call": {
            kind_key: inner,
            "hookAdditionalContexts": [],
            "toolCallId": call_id,
            "startedAtMs": str(started_at_ms),
            "completedAtMs": str(completed_at_ms),
        },
        "model_call_id": model_call_id,
        "session_id": session_id,
        "timestamp_ms": timestamp_ms,
    }


def interaction_request(
    session_id: str,
    query_id: int,
    query_type: str,
    args: dict[str, Any],
    timestamp_ms: int,
    *,
    skip_approval: bool | None = False,
    tool_call_id: str | None = None,
) -> dict[str, Any]:
    """``interaction_query``/``request`` (§3.6). Web fetch/search queries carry the call id
    inside ``args`` (recordings 03, 04); ask-question queries beside them
    (``tool_call_id=``, recording 05, no ``skipApproval``).

    Example:
        >>> q = interaction_request("s1", 0, "webFetchRequestQuery",
        ...                         web_fetch_args("https://example.com", "tool_1"), 1)
        >>> q["query"]["webFetchRequestQuery"]["skipApproval"]
        False
    """
    inner: dict[str, Any] = {"args": args}
    if tool_call_id is not None:
        inner["toolCallId"] = tool_call_id
    if skip_approval is not None:
        inner["skipApproval"] = skip_approval
    return {
        "type": "interaction_query",
        "subtype": "request",
        "query_type": query_type,
        "query": {"id": query_id, query_type: inner},
        "session_id": session_id,
        "timestamp_ms": timestamp_ms,
    }


def interaction_response(
    session_id: str,
    query_id: int,
    query_type: str,
    outcome: dict[str, Any],
    timestamp_ms: int,
) -> dict[str, Any]:
    """``interaction_query``/``response``: ``outcome`` is e.g. ``rejected("User Rejected")``
    or ``{"approved": {}}``. The response key is the query type with ``Query`` replaced by
    ``Response`` (``webFetchRequestResponse``); ask-question responses nest the outcome
    under ``result`` (recording 05).

    Example:
        >>> r = interaction_response("s1", 0, "webFetchRequestQuery", rejected("User Rejected"), 1)
        >>> r["response"]["webFetchRequestResponse"]
        {'rejected': {'reason': 'User Rejected'}}
    """
    key = query_type[: -len("Query")] + "Response" if query_type.endswith("Query") else query_type
    body = {"result": outcome} if query_type == "askQuestionInteractionQuery" else outcome
    return {
        "type": "interaction_query",
        "subtype": "response",
        "query_type": query_type,
        "response": {"id": query_id, key: body},
        "session_id": session_id,
        "timestamp_ms": timestamp_ms,
    }


def usage(
    input_tokens: int, output_tokens: int, cache_read_tokens: int = 0, cache_write_tokens: int = 0
) -> dict[str, int]:
    """The ``result``'s ``usage`` object, camelCase as on the wire.

    Example:
        >>> usage(10, 2)
        {'inputTokens': 10, 'outputTokens': 2, 'cacheReadTokens': 0, 'cacheWriteTokens': 0}
    """
    return {
        "inputTokens": input_tokens,
        "outputTokens": output_tokens,
        "cacheReadTokens": cache_read_tokens,
        "cacheWriteTokens": cache_write_tokens,
    }


def result_success(
    session_id: str,
    request_id: str,
    text: str,
    duration_ms: int,
    token_usage: dict[str, int] | None = None,
) -> dict[str, Any]:
    """The terminal ``result`` (§3.7): ``result`` is every segment joined with no separator.

    Example:
        >>> r = parse_event(encode(result_success("s1", "r1", "4", 12, usage(5, 1))))
        >>> r.type.value, r.text, r.usage.input_tokens
        ('result:success', '4', 5)
    """
    obj: dict[str, Any] = {
        "type": "result",
        "subtype": "success",
        "duration_ms": duration_ms,
        "duration_api_ms": duration_ms,
        "is_error": False,
        "result": text,
        "session_id": session_id,
        "request_id": request_id,
    }
    if token_usage is not None:
        obj["usage"] = token_usage
    return obj


# ---- tool args and outcomes ---------------------------------------------------------------


def rejected(reason: str = "User Rejected", **fields: Any) -> dict[str, Any]:
    """A ``rejected`` outcome: ``{"rejected": {..., "reason"}}``.

    Example:
        >>> rejected()
        {'rejected': {'reason': 'User Rejected'}}
    """
    return {"rejected": {**fields, "reason": reason}}


def permission_denied(reason: str, **fields: Any) -> dict[str, Any]:
    """A ``permissionDenied`` outcome (a deny rule refused the call; PROTOCOL.md §3.5 names the
    key, not its body: the simulator gives it ``rejected``'s, ``{..., "reason"}``).

    Example:
        >>> permission_denied("Denied by the permission rule Shell(*)", command="ls")
        {'permissionDenied': {'command': 'ls', 'reason': 'Denied by the permission rule Shell(*)'}}
    """
    return {"permissionDenied": {**fields, "reason": reason}}


def error_outcome(error: str, **fields: Any) -> dict[str, Any]:
    """An ``error`` outcome: ``{"error": {..., "error"}}``.

    Example:
        >>> error_outcome("no such file", path="/ws/x")
        {'error': {'path': '/ws/x', 'error': 'no such file'}}
    """
    return {"error": {**fields, "error": error}}


def read_args(path: str, offset: int | None = None, limit: int | None = None) -> dict[str, Any]:
    """``readToolCall`` args: an absolute path, optional ``offset``/``limit``.

    Example:
        >>> read_args("/ws/a.txt")
        {'path': '/ws/a.txt'}
    """
    args: dict[str, Any] = {"path": path}
    if offset is not None:
        args["offset"] = offset
    if limit is not None:
        args["limit"] = limit
    return args


def read_success(path: str, content: str, *, file_size: int | None = None) -> dict[str, Any]:
    """A ``readToolCall`` success as recorded (recordings 02, 08).

    ``totalLines`` counts the line after a final newline, as real builds do ("a\\nb\\n" is 3).

    Example:
        >>> read_success("/ws/n.txt", "alpha\\nbeta\\n")["success"]["totalLines"]
        3
    """
    total = content.count("\n") + 1 if content else 0
    size = len(content.encode()) if file_size is None else file_size
    return {
        "success": {
            "content": content,
            "isEmpty": not content,
            "exceededLimit": False,
            "totalLines": total,
            "fileSize": size,
            "path": path,
            "readRange": {"startLine": 1, "endLine": total},
            "relatedCursorRulePaths": [],
            "relatedCursorRules": [],
        }
    }


def dir_tree_node(
    abs_path: str,
    dirs: Sequence[dict[str, Any]] = (),
    files: Iterable[str] = (),
    *,
    processed: bool = True,
    extension_counts: dict[str, int] | None = None,
    num_files: int | None = None,
) -> dict[str, Any]:
    """One node of an ``lsToolCall``'s ``directoryTreeRoot``.

    Example:
        >>> dir_tree_node("/ws", files=["a.py"])["childrenFiles"]
        [{'name': 'a.py'}]
    """
    file_list = [{"name": name} for name in files]
    return {
        "absPath": abs_path,
        "childrenDirs": list(dirs),
        "childrenFiles": file_list,
        "childrenWereProcessed": processed,
        "fullSubtreeExtensionCounts": dict(extension_counts or {}),
        "numFiles": len(file_list) if num_files is None else num_files,
    }


def ls_args(path: str, ignore: Sequence[str] = ()) -> dict[str, Any]:
    """``lsToolCall`` args.

    Example:
        >>> ls_args("/ws")
        {'path': '/ws', 'ignore': []}
    """
    return {"path": path, "ignore": list(ignore)}


def ls_success(root: dict[str, Any]) -> dict[str, Any]:
    """An ``lsToolCall`` success: ``{"success": {"directoryTreeRoot": root}}``.

    Example:
        >>> ls_success(dir_tree_node("/ws"))["success"]["directoryTreeRoot"]["absPath"]
        '/ws'
    """
    return {"success": {"directoryTreeRoot": root}}


def grep_args(pattern: str, path: str, output_mode: str = "content") -> dict[str, Any]:
    """``grepToolCall`` args.

    Example:
        >>> grep_args("TODO", "/ws")["outputMode"]
        'content'
    """
    return {"pattern": pattern, "path": path, "outputMode": output_mode, "caseInsensitive": False}


def grep_success(
    pattern: str,
    path: str,
    matches: Sequence[tuple[str, Sequence[tuple[int, str]]]],
    *,
    output_mode: str = "content",
) -> dict[str, Any]:
    """A ``grepToolCall`` success in content mode: ``matches`` is ``[(file, [(line_number,
    line), ...]), ...]``, grouped under ``workspaceResults[path].content``.

    Example:
        >>> s = grep_success("x", "/ws", [("a.py", [(3, "x = 1")])])
        >>> s["success"]["workspaceResults"]["/ws"]["content"]["totalMatchedLines"]
        1
    """
    file_matches = [
        {
            "file": file,
            "matches": [
                {
                    "lineNumber": n,
                    "content": line,
                    "contentTruncated": False,
                    "isContextLine": False,
                }
                for n, line in lines
            ],
        }
        for file, lines in matches
    ]
    total = sum(len(lines) for _, lines in matches)
    return {
        "success": {
            "pattern": pattern,
            "path": path,
            "outputMode": output_mode,
            "workspaceResults": {
                path: {
                    "content": {
                        "matches": file_matches,
                        "totalLines": total,
                        "totalMatchedLines": total,
                        "clientTruncated": False,
                        "ripgrepTruncated": False,
                    }
                }
            },
        }
    }


def glob_args(glob_pattern: str, target_directory: str) -> dict[str, Any]:
    """``globToolCall`` args.

    Example:
        >>> glob_args("*.py", "/ws")
        {'globPattern': '*.py', 'targetDirectory': '/ws'}
    """
    return {"globPattern": glob_pattern, "targetDirectory": target_directory}


def glob_success(glob_pattern: str, target_directory: str, files: Sequence[str]) -> dict[str, Any]:
    """A ``globToolCall`` success: ``files`` and ``totalFiles``.

    Example:
        >>> glob_success("*.py", "/ws", ["a.py"])["success"]["totalFiles"]
        1
    """
    return {
        "success": {
            "pattern": glob_pattern,
            "path": target_directory,
            "files": list(files),
            "totalFiles": len(files),
            "clientTruncated": False,
            "ripgrepTruncated": False,
        }
    }


def edit_args(path: str, stream_content: str | None = None) -> dict[str, Any]:
    """``editToolCall`` args: the path, and for some models ``streamContent`` (recording 08).

    Example:
        >>> edit_args("/ws/n.txt", "a\\nb")
        {'path': '/ws/n.txt', 'streamContent': 'a\\nb'}
    """
    args: dict[str, Any] = {"path": path}
    if stream_content is not None:
        args["streamContent"] = stream_content
    return args


def edit_success(
    path: str,
    before: str | None,
    after: str,
    diff: str,
    lines_added: int,
    lines_removed: int,
    message: str | None = None,
) -> dict[str, Any]:
    """An ``editToolCall`` success (recording 08). ``before=None`` for a created file
    (``beforeFullFileContent`` is then left out and the diff starts at ``/dev/null``).

    Example:
        >>> edit_success("/ws/n.txt", None, "x\\n", "+x", 1, 0)["success"]["message"]
        'The file /ws/n.txt has been created.'
    """
    body: dict[str, Any] = {
        "path": path,
        "linesAdded": lines_added,
        "linesRemoved": lines_removed,
        "diffString": diff,
    }
    if before is not None:
        body["beforeFullFileContent"] = before
    body["afterFullFileContent"] = after
    if message is None:
        verb = "created" if before is None else "updated"
        message = f"The file {path} has been {verb}."
    body["message"] = message
    return {"success": body}


def _parsing_result(command: str) -> dict[str, Any]:
    """A best-effort ``parsingResult`` like the CLI's (split on pipes and ``&&``/``;``)."""
    commands: list[dict[str, Any]] = []
    names: list[str] = []
    piece = ""
    pieces: list[str] = []
    quote: str | None = None
    i = 0
    while i < len(command):
        c = command[i]
        if quote:
            piece += c
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
            piece += c
        elif c == "|" or c == ";" or (c == "&" and command[i : i + 2] == "&&"):
            pieces.append(piece)
            piece = ""
            if command[i : i + 2] in ("&&", "||"):
                i += 1
        else:
            piece += c
        i += 1
    pieces.append(piece)
    for text in pieces:
        words = _shell_words(text.strip())
        if not words:
            continue
        name, rest = words[0], words[1:]
        names.append(name)
        args = []
        for w in rest:
            if w.startswith("'"):
                kind = "raw_string"
            elif w.startswith('"'):
                kind = "string"
            elif w.lstrip("-").isdigit():
                kind = "number"
            else:
                kind = "word"
            args.append({"type": kind, "value": w})
        commands.append({"name": name, "args": args, "fullText": text.strip()})
    return {
        "simpleCommands": names,
        "parsingResult": {
            "parsingFailed": False,
            "executableCommands": commands,
            "hasRedirects": ">" in command or "<" in command,
            "hasCommandSubstitution": "$(" in command or "`" in command,
            "redirects": [],
        },
    }


def _shell_words(text: str) -> list[str]:
    words: list[str] = []
    word = ""
    quote: str | None = None
    for c in text:
        if quote:
            word += c
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
            word += c
        elif c.isspace():
            if word:
                words.append(word)
                word = ""
        else:
            word += c
    if word:
        words.append(word)
    return words


def shell_args(
    command: str,
    tool_call_id: str,
    *,
    conversation_id: str,
    request_id: str,
    description: str,
    timeout_ms: int = 30000,
    working_directory: str = "",
) -> dict[str, Any]:
    """``shellToolCall`` args with every field of recordings 03, 06 and 07.

    Example:
        >>> a = shell_args("ls -la | head -1", "tool_1", conversation_id="s1",
        ...                request_id="r1", description="List")
        >>> a["simpleCommands"], a["timeoutBehavior"]
        (['ls', 'head'], 'TIMEOUT_BEHAVIOR_BACKGROUND')
    """
    parsed = _parsing_result(command)
    return {
        "command": command,
        "workingDirectory": working_directory,
        "timeout": timeout_ms,
        "toolCallId": tool_call_id,
        "simpleCommands": parsed["simpleCommands"],
        "hasInputRedirect": "<" in command,
        "hasOutputRedirect": ">" in command,
        "parsingResult": parsed["parsingResult"],
        "fileOutputThresholdBytes": "40000",
        "isBackground": False,
        "skipApproval": False,
        "timeoutBehavior": "TIMEOUT_BEHAVIOR_BACKGROUND",
        "hardTimeout": 86400000,
        "description": description,
        "closeStdin": True,
        "conversationId": conversation_id,
        "adminCommandDenylist": [],
        "requestId": request_id,
    }


def shell_outcome(
    command: str,
    working_directory: str,
    exit_code: int,
    stdout: str,
    stderr: str,
    execution_time_ms: int,
    *,
    signal: str = "",
    interleaved: str | None = None,
) -> dict[str, Any]:
    """A shell completion as recorded (recording 06): ``success`` for exit 0, ``failure``
    otherwise, with ``isBackground`` beside the outcome.

    Example:
        >>> sorted(shell_outcome("false", "", 1, "", "", 3))
        ['failure', 'isBackground']
    """
    body = {
        "command": command,
        "workingDirectory": working_directory,
        "exitCode": exit_code,
        "signal": signal,
        "stdout": stdout,
        "stderr": stderr,
        "executionTime": execution_time_ms,
        "interleavedOutput": stdout + stderr if interleaved is None else interleaved,
        "localExecutionTimeMs": execution_time_ms,
    }
    return {"success" if exit_code == 0 else "failure": body, "isBackground": False}


def shell_rejected(command: str, working_directory: str, reason: str = "") -> dict[str, Any]:
    """A shell call not approved: without ``--force`` exactly as recording 07 (``reason`` ""),
    in ask mode with the mode's reason.

    Example:
        >>> shell_rejected("ls", "/ws")["rejected"]["isReadonly"]
        False
    """
    return {
        "rejected": {
            "command": command,
            "workingDirectory": working_directory,
            "reason": reason,
            "isReadonly": False,
        }
    }


def todo_item(
    todo_id: str, content: str, status: str, created_at_ms: int, updated_at_ms: int | None = None
) -> dict[str, Any]:
    """One todo as the wire writes it (status ``TODO_STATUS_PENDING`` / ``_IN_PROGRESS`` /
    ``_COMPLETED`` / ``_CANCELLED``; times as strings).

    Example:
        >>> todo_item("1", "Write tests", "TODO_STATUS_PENDING", 5)["createdAt"]
        '5'
    """
    return {
        "id": todo_id,
        "content": content,
        "status": status,
        "createdAt": str(created_at_ms),
        "updatedAt": str(created_at_ms if updated_at_ms is None else updated_at_ms),
        "dependencies": [],
    }


def todos_args(todos: Sequence[dict[str, Any]], merge: bool = False) -> dict[str, Any]:
    """``updateTodosToolCall`` args.

    Example:
        >>> todos_args([], merge=True)
        {'todos': [], 'merge': True}
    """
    return {"todos": list(todos), "merge": merge}


def todos_success(todos: Sequence[dict[str, Any]], was_merge: bool = False) -> dict[str, Any]:
    """An ``updateTodosToolCall`` success: the whole list after the update.

    Example:
        >>> todos_success([])["success"]["totalCount"]
        0
    """
    return {"success": {"todos": list(todos), "totalCount": len(todos), "wasMerge": was_merge}}


def web_fetch_args(url: str, tool_call_id: str) -> dict[str, Any]:
    """``webFetchToolCall`` args (the call id is repeated inside, recording 04).

    Example:
        >>> web_fetch_args("https://example.com", "tool_1")["toolCallId"]
        'tool_1'
    """
    return {"url": url, "toolCallId": tool_call_id}


def web_fetch_success(url: str, markdown: str) -> dict[str, Any]:
    """A ``webFetchToolCall`` success.

    Example:
        >>> web_fetch_success("https://e.x", "# Hi")["success"]["markdown"]
        '# Hi'
    """
    return {"success": {"url": url, "markdown": markdown}}


def ask_question_args(title: str, questions: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``askQuestionToolCall`` args (recording 05).

    Example:
        >>> ask_question_args("Which?", [])["runAsync"]
        False
    """
    return {
        "title": title,
        "questions": list(questions),
        "runAsync": False,
        "asyncOriginalToolCallId": "",
    }


def write_args(path: str, file_text: str, tool_call_id: str) -> dict[str, Any]:
    """``writeToolCall`` args (PROTOCOL.md §3.5).

    Example:
        >>> write_args("/ws/a.txt", "x", "c1")["fileText"]
        'x'
    """
    return {"path": path, "fileText": file_text, "toolCallId": tool_call_id}


def write_success(path: str, file_text: str) -> dict[str, Any]:
    """A ``writeToolCall`` success: ``path, linesCreated, fileSize``.

    Example:
        >>> write_success("/ws/a.txt", "a\\nb\\n")["success"]["linesCreated"]
        2
    """
    return {
        "success": {
            "path": path,
            "linesCreated": len(file_text.splitlines()),
            "fileSize": len(file_text.encode()),
        }
    }


def delete_args(path: str, tool_call_id: str) -> dict[str, Any]:
    """``deleteToolCall`` args.

    Example:
        >>> delete_args("/ws/a.txt", "c1")
        {'path': '/ws/a.txt', 'toolCallId': 'c1'}
    """
    return {"path": path, "toolCallId": tool_call_id}


def delete_success(path: str, previous_content: str = "") -> dict[str, Any]:
    """A ``deleteToolCall`` success.

    Example:
        >>> delete_success("/ws/a.txt")["success"]["deletedFile"]
        '/ws/a.txt'
    """
    return {
        "success": {
            "path": path,
            "deletedFile": path,
            "fileSize": len(previous_content.encode()),
            "prevContent": previous_content,
        }
    }


def web_search_args(search_term: str, tool_call_id: str) -> dict[str, Any]:
    """``webSearchToolCall`` args (as in recording 03's query).

    Example:
        >>> web_search_args("python", "c1")["searchTerm"]
        'python'
    """
    return {"searchTerm": search_term, "toolCallId": tool_call_id}


def web_search_success(references: Sequence[dict[str, str]]) -> dict[str, Any]:
    """A ``webSearchToolCall`` success: ``references[{title, url, chunk}]``.

    Example:
        >>> web_search_success([{"title": "T", "url": "u", "chunk": "c"}])["success"]["references"][0]["url"]
        'u'
    """
    return {"success": {"references": list(references)}}


def mcp_args(server: str, tool_name: str, args: dict[str, Any], tool_call_id: str) -> dict[str, Any]:
    """``mcpToolCall`` args as in the 2026.10 fragment (``name`` is ``server-tool``).

    Example:
        >>> mcp_args("faz-ai", "get_board", {}, "c1")["name"]
        'faz-ai-get_board'
    """
    return {
        "name": f"{server}-{tool_name}",
        "args": args,
        "toolCallId": tool_call_id,
        "providerIdentifier": server,
        "toolName": tool_name,
        "smartModeApprovalOnly": False,
        "skipApproval": False,
        "serverIdentifier": server,
    }


def mcp_success(texts: Sequence[str], *, is_error: bool = False) -> dict[str, Any]:
    """An ``mcpToolCall`` success: ``content: [{text: {text}}]`` (the nested ``text.text``).

    Example:
        >>> mcp_success(["hi"])["success"]["content"]
        [{'text': {'text': 'hi'}}]
    """
    return {"success": {"content": [{"text": {"text": t}} for t in texts], "isError": is_error,
                        "systemReminders": []}}


def get_mcp_tools_args(server: str, tool_call_id: str, tool_name: str | None = None) -> dict[str, Any]:
    """``getMcpToolsToolCall`` args (2026.10 fragment).

    Example:
        >>> get_mcp_tools_args("faz-ai", "c1", "get_board")["server"]
        'faz-ai'
    """
    args: dict[str, Any] = {"server": server}
    if tool_name is not None:
        args["toolName"] = tool_name
    args["toolCallId"] = tool_call_id
    return args


# ---- checking and encoding ------------------------------------------------------------------


def _expected(obj: dict[str, Any]) -> EventType | None:
    t, st = obj.get("type"), obj.get("subtype")
    if t == "assistant":
        if "timestamp_ms" in obj and "model_call_id" not in obj:
            return EventType.ASSISTANT_DELTA
        return EventType.ASSISTANT
    if not isinstance(t, str):
        return None
    return EXPECTED_TYPES.get((t, st if isinstance(st, str) else None))


def check(obj: dict[str, Any], expected: EventType | None = None) -> AgentEvent:
    """Read ``obj`` back through the event model; raise :class:`WireShapeError` when it is
    not the event it should be (``expected``, else the one its type and subtype name).

    Example:
        >>> check(user("s1", "hi")).type.value
        'user'
    """
    event = event_from_object(obj)
    want = expected if expected is not None else _expected(obj)
    if want is None:
        raise WireShapeError(f"no known event type for {obj.get('type')!r}/{obj.get('subtype')!r}")
    if event.type is not want:
        raise WireShapeError(f"wire object reads back as {event.type.value}, not {want.value}: {obj!r}"[:500])
    if event.type in (EventType.TOOL_CALL_STARTED, EventType.TOOL_CALL_COMPLETED):
        tc = event.tool_call
        if tc is None or not tc.call_id or not tc.name:
            raise WireShapeError("a tool_call event needs a call_id and one <kind>ToolCall key")
    return event


def encode(obj: dict[str, Any], *, checked: bool = True) -> bytes:
    """One wire line: ``orjson.dumps(obj) + b"\\n"`` (undecodable bytes as U+FFFD,
    :mod:`.node_text`), after :func:`check` (``checked=False`` skips the check, for objects
    replayed verbatim).

    Example:
        >>> encode(thinking_completed("s1", 7))
        b'{"type":"thinking","subtype":"completed","session_id":"s1","timestamp_ms":7}\\n'
    """
    if checked:
        check(obj)
    return node_text.dumps(obj) + b"\n"
