"""The server: run agents over HTTP and WebSocket, with a durable, replayable event log.

Needs the ``server`` extra (without it, importing the package raises an ``ImportError`` that
names it: :func:`~cursor_agent_api.extras.missing_extra`). Its modules, by what they own:

* setting up: :mod:`.settings` (what the server is told), :mod:`.app` (the ASGI app
  factory), :mod:`.workspaces` (workspace roots), :mod:`.worktrees` (a git worktree per
  chat, on a worker), :mod:`.non_dumpable` (``serve`` and ``worker`` keep their agents out of
  their memory and environment);
* each request's checks: :mod:`.security` composes those of :mod:`.checks` (headers, Host,
  Origin, body size, token and session); :mod:`.auth` (browser sessions, one-time codes,
  the login throttle), :mod:`.session_watch` (a session's end closes its WebSockets),
  :mod:`.redaction` (no secret in the logs), :mod:`.sqlite_file` (a private database file);
* the log: :mod:`.models` (the schema; migrations in ``migrations/``), :mod:`.store` (a
  package: every SQL statement, the folded turn state's included), :mod:`.hub` /
  :mod:`.log` (commit, then broadcast), :mod:`.turns` (a run's fold: the changes the
  client's stream made, stored with the events), :mod:`.notify` (records other processes
  committed, to this server's WebSockets);
* runs: :mod:`.runs` (queue, run, cancel, recover), :mod:`.runner` (the one place that
  uses the client), :mod:`.requests` (what an ACP run asks a person), :mod:`.procs`
  (leftover process groups), :mod:`.dispatch` (runs here or on workers through a job
  queue) and :mod:`.worker` (``cursor-agent-api worker``);
* what clients see: :mod:`.routes` (REST), :mod:`.websocket` and :mod:`.webui` (the web
  UI's files and tool-call views).

Example:
    >>> from cursor_agent_api.server import ServerSettings, create_app
    >>> create_app(ServerSettings(token="t")).title
    'cursor-agent-api server'
"""

from ..extras import is_missing_dependency, missing_extra

try:
    from .app import create_app
    from .settings import ServerSettings
except ImportError as e:  # without the extra: its name, not "No module named 'fastapi'"
    if not is_missing_dependency(e):
        raise
    raise missing_extra("server", __name__, e) from e

__all__ = ["ServerSettings", "create_app"]
