"""The tool's own data directory: ``$CURSOR_AGENT_API_HOME``, or the per-user data directory.

The command line keeps its saved chats there (``chats/``) and the server its default
database (``server.sqlite3``), so one variable moves both.

Example:
    >>> import os
    >>> os.environ[HOME_ENV] = "/tmp/cat-home"
    >>> str(home_dir())
    '/tmp/cat-home'
    >>> del os.environ[HOME_ENV]
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

HOME_ENV = "CURSOR_AGENT_API_HOME"
"""The variable that moves the tool's data directory."""


def home_dir() -> Path:
    """This tool's data directory (``$CURSOR_AGENT_API_HOME`` or the per-user default)."""
    env = os.environ.get(HOME_ENV)
    return Path(env) if env else Path(platformdirs.user_data_dir("cursor-agent-api"))
