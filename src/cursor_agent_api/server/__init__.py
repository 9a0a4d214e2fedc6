"""The server: run agents over HTTP and WebSocket, with a durable, replayable event log.

Modules: :mod:`.settings` (what the server is told), :mod:`.app` (the ASGI app
factory), :mod:`.security` (the request checks of :mod:`.checks`, composed:
headers, Host, Origin, body size, token and cookie), :mod:`.workspaces` (workspace
roots), :mod:`.redaction` (no secret in the logs), :mod:`.sqlite_file` (a private file),
:mod:`.models` / :mod:`.store` (SQLAlchemy schema and queries; migrations in
``migrations/``), :mod:`.hub` / :mod:`.log` (commit then broadcast),
:mod:`.runs` (queue, run, cancel, recover), :mod:`.runner` (the one place that
uses the client), :mod:`.procs` (leftover process groups), :mod:`.routes`
(REST) and :mod:`.websocket`. Needs the ``server`` extra.

Example:
    >>> from cursor_agent_api.server import ServerSettings, create_app
    >>> create_app(ServerSettings(token="t")).title
    'cursor-agent-api server'
"""

from .app import create_app
from .settings import ServerSettings

__all__ = ["ServerSettings", "create_app"]
