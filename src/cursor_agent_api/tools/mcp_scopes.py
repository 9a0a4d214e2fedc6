"""Which MCP sessions of the tool server belong to which turn: so they end with it.

An agent opens an MCP session on the tool server (``initialize``) when it loads the server,
and does not always end it (``DELETE``): a print-mode agent that is killed, an ``agent acp``
session the client lets go of, a process that died. The SDK would keep such a session (its
tasks, its socket) for its idle timeout. So each agent's requests carry a scope
(:data:`SCOPE_HEADER`, from the environment variable :data:`SCOPE_ENV` of its turn) and the
server remembers which sessions each scope opened (:class:`McpScopes`); the turn (print mode)
or its ACP session (when the client lets go of it, or its process ends) then ends them.

Example:
    >>> scopes = McpScopes(limit=2)
    >>> scopes.opened("turn-1", "s1"); scopes.opened("turn-2", "s2"); scopes.opened("turn-1", "s3")
    >>> len(scopes), scopes.take("turn-1"), scopes.take("turn-1")
    (2, ['s3'], [])
    >>> scopes.closed("s2"); len(scopes)
    0
"""

from __future__ import annotations

from ..config import MCP_SCOPE_ENV

__all__ = ["SCOPE_ENV", "SCOPE_HEADER", "McpScopes"]

SCOPE_ENV = MCP_SCOPE_ENV
"""The agent's environment variable whose value is the scope of the MCP sessions it opens
(``${env:…}`` in the tool server's entry; in ACP the client resolves it per session). It is
defined with the config (:data:`~cursor_agent_api.config.MCP_SCOPE_ENV`), which the runtime
reads: the runtime never imports the tools."""

SCOPE_HEADER = "X-Cursor-Agent-Api-Scope"
"""The request header that carries the scope to the tool server."""


class McpScopes:
    """The MCP sessions each scope opened (at most ``limit``, the oldest forgotten first: a
    session the SDK ended on its own is forgotten when its scope ends)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._scope_of: dict[str, str] = {}  # MCP session id -> scope, oldest first

    def __len__(self) -> int:
        return len(self._scope_of)

    def opened(self, scope: str, session_id: str) -> None:
        """``scope``'s agent opened ``session_id``."""
        self._scope_of[session_id] = scope
        while len(self._scope_of) > self.limit:
            del self._scope_of[next(iter(self._scope_of))]

    def closed(self, session_id: str) -> None:
        """The agent ended ``session_id`` itself."""
        self._scope_of.pop(session_id, None)

    def take(self, scope: str) -> list[str]:
        """The sessions ``scope`` opened that are still open, forgotten here (to be ended)."""
        ids = [sid for sid, s in self._scope_of.items() if s == scope]
        for sid in ids:
            del self._scope_of[sid]
        return ids

    def clear(self) -> None:
        """Forget every session (the server stopped: they all ended)."""
        self._scope_of.clear()
