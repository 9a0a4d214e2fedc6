"""What Cursor's "allow always" remembers, and where, said before the person picks it.

Picking ``allow_always`` makes the agent append one rule to its **global** allowlist, the
``permissions.allow`` of ``cli-config.json`` in its config folder (``$CURSOR_CONFIG_DIR``,
else ``$XDG_CONFIG_HOME/cursor``, else ``~/.cursor``): ``Shell(<the command's name>)``,
``Write(<path>)``, ``Mcp(<server>:<tool>)``, ``WebFetch(<domain>)``, ``WebSearch(<term>)``
(/work/shared/ACP.md §6). ``Shell(git)`` approves every later git command, in every folder,
without asking: the person must know that before typing ``w``.

Example:
    >>> from cursor_agent_api.permissions import PermissionRequest
    >>> from cursor_agent_api.protocol.tools import ToolCall, ToolKind
    >>> request = PermissionRequest("s", ToolCall("c", ToolKind.SHELL,
    ...                             args={"command": "git status"}))
    >>> remembered_rule(request)
    'Shell(git)'
    >>> str(allowlist_file({"CURSOR_CONFIG_DIR": "/c"}))
    '/c/cli-config.json'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from ..permissions import PermissionRequest, web_host
from ..protocol.tools import ToolKind
from ..shell_commands import split_commands

__all__ = ["allowlist_file", "remembered_rule"]

_NOT_ALLOWED = re.compile(r"Not in allowlist: (\S+)")


def remembered_rule(request: PermissionRequest) -> str | None:
    """The rule "allow always" would save for ``request`` (``None``: not known).

    A shell command's rule names its first word, as Cursor's reason does ("Not in
    allowlist: git"); the reason wins when it names one.

    Example:
        >>> from cursor_agent_api.protocol.tools import ToolCall, ToolKind
        >>> remembered_rule(PermissionRequest("s", ToolCall("c", ToolKind.MCP,
        ...     args={"providerIdentifier": "db", "toolName": "run_sql"})))
        'Mcp(db:run_sql)'
    """
    kind = request.kind
    if kind is ToolKind.SHELL:
        named = _NOT_ALLOWED.search(request.reason or "")
        if named:
            return f"Shell({named.group(1)})"
        commands = split_commands(request.command or "")
        if commands and commands[0].argv:
            return f"Shell({commands[0].argv[0]})"
        words = (request.command or "").split()
        return f"Shell({words[0]})" if words else None
    if kind in (ToolKind.EDIT, ToolKind.WRITE, ToolKind.DELETE) and request.path:
        return f"Write({request.path})"
    if kind is ToolKind.MCP and request.mcp_tool:
        return f"Mcp({request.mcp_server or '?'}:{request.mcp_tool})"
    if kind is ToolKind.WEB_FETCH and request.tool_call.url:
        host = web_host(request.tool_call.url)  # None for a URL that does not parse
        return f"WebFetch({host})" if host else None
    if kind is ToolKind.WEB_SEARCH:
        term = request.tool_call.pattern
        return f"WebSearch({term})" if term else None
    return None


def allowlist_file(env: Mapping[str, str]) -> Path:
    """The agent's global ``cli-config.json`` for the environment ``env``.

    Example:
        >>> str(allowlist_file({"XDG_CONFIG_HOME": "/x", "HOME": "/h"}))
        '/x/cursor/cli-config.json'
        >>> str(allowlist_file({"HOME": "/h"}))
        '/h/.cursor/cli-config.json'
    """
    if env.get("CURSOR_CONFIG_DIR"):
        root = Path(env["CURSOR_CONFIG_DIR"])
    elif env.get("XDG_CONFIG_HOME"):
        root = Path(env["XDG_CONFIG_HOME"]) / "cursor"
    else:
        root = Path(env.get("HOME") or Path.home()) / ".cursor"
    return root / "cli-config.json"
