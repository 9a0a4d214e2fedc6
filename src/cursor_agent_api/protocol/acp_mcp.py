"""MCP servers in ACP's shape: ``mcp.json`` entries (``AgentConfig.mcp_servers``, the client's
tool server) as the ``mcpServers`` array of ``session/new`` and ``session/load`` (MCP.md §7).

``{command, args, env}`` becomes a stdio server (no ``type``; ``env`` as ``[{name, value}]``);
``{url, headers}`` an ``http`` server (``sse`` when the entry says ``"type": "sse"``), headers
as ``[{name, value}]``. ``${env:NAME}`` in a value is resolved from the environment given (the
agent's): over ACP a token travels on the agent's stdin, never in a file or argv.

Example:
    >>> (app,) = acp_mcp_servers({"app": {"url": "http://127.0.0.1:9/mcp",
    ...                          "headers": {"Authorization": "Bearer ${env:T}"}}}, {"T": "s3"})
    >>> app["type"], app["headers"]
    ('http', [{'name': 'Authorization', 'value': 'Bearer s3'}])
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["acp_mcp_servers"]

_ENV = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}")


def _resolve(value: Any, env: Mapping[str, str]) -> str:
    return _ENV.sub(lambda m: env.get(m.group(1), ""), str(value))


def _pairs(mapping: Any, env: Mapping[str, str]) -> list[dict[str, str]]:
    if not isinstance(mapping, Mapping):
        return []
    return [{"name": str(k), "value": _resolve(v, env)} for k, v in mapping.items()]


def acp_mcp_servers(servers: Mapping[str, Mapping[str, Any]],
                    env: Mapping[str, str]) -> list[dict[str, Any]]:
    """``servers`` (``mcp.json``'s ``mcpServers`` shape) as ACP's ``mcpServers`` array.

    Example:
        >>> acp_mcp_servers({"rg": {"command": "rg-mcp", "args": ["--x"], "env": {"K": "v"}}}, {})
        [{'name': 'rg', 'command': 'rg-mcp', 'args': ['--x'], 'env': [{'name': 'K', 'value': 'v'}]}]
    """
    out: list[dict[str, Any]] = []
    for name, entry in servers.items():
        if isinstance(entry.get("command"), str):
            out.append({"name": name, "command": _resolve(entry["command"], env),
                        "args": [_resolve(a, env) for a in entry.get("args") or []],
                        "env": _pairs(entry.get("env"), env)})
        elif isinstance(entry.get("url"), str):
            kind = "sse" if entry.get("type") == "sse" else "http"
            out.append({"name": name, "type": kind, "url": _resolve(entry["url"], env),
                        "headers": _pairs(entry.get("headers"), env)})
    return out
