"""Your own tools for the agent: Python functions served over MCP (the ``[tools]`` extra).

``@tool`` turns a function into a tool; pass tools to a client
(``CursorAgentClient(..., tools=[lookup_order])``) and the client serves them on a private
loopback MCP server for the turns it runs, makes the server visible to the agent in the
workspace's ``.cursor/mcp.json`` for each turn (restored afterwards), and links each call of
the stream to what your function did (``call.local``). See docs/tools.md.

The names below are imported on first use, so that :mod:`.inject` (``AgentConfig.mcp_servers``)
works without the extra; without it, ``from cursor_agent_api.tools import tool`` raises an
``ImportError`` that names the extra.

Example:
    >>> from cursor_agent_api.tools import tool
    >>> @tool
    ... def lookup_order(order_id: str) -> dict:
    ...     '''Look up an order.'''
    ...     return {"id": order_id, "status": "shipped"}
    >>> lookup_order.name
    'lookup_order'
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..extras import missing_extra

if TYPE_CHECKING:
    from .functions import LocalInvocation, Tool, tool
    from .inject import InjectionError
    from .schema import ArgumentError, ArgumentSpec

__all__ = ["ArgumentError", "ArgumentSpec", "InjectionError", "LocalInvocation", "Tool", "tool"]

_WHERE = {"ArgumentError": ".schema", "ArgumentSpec": ".schema", "LocalInvocation": ".functions",
          "Tool": ".functions", "tool": ".functions", "InjectionError": ".inject"}


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        module = importlib.import_module(where, __name__)
    except ImportError as e:
        raise missing_extra("tools", __name__, e) from e
    return getattr(module, name)
