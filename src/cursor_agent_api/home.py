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

import contextlib
import os
from pathlib import Path

import platformdirs

HOME_ENV = "CURSOR_AGENT_API_HOME"
"""The variable that moves the tool's data directory."""


def home_dir() -> Path:
    """This tool's data directory (``$CURSOR_AGENT_API_HOME`` or the per-user default)."""
    env = os.environ.get(HOME_ENV)
    return Path(env) if env else Path(platformdirs.user_data_dir("cursor-agent-api"))


PRIVATE_MODE = 0o700
"""The mode of the directories this tool creates for its data (prompts, answers, chats)."""


def private_dir(path: Path) -> Path:
    """Create ``path`` (``0700``) and its missing parents: those that are the tool's data
    directory (:func:`home_dir`) or inside it ``0700`` too (they hold prompts and answers),
    those above it (``~/.local/share``) as usual. A directory that exists keeps its mode.

    Example:
        >>> import stat, tempfile
        >>> os.environ[HOME_ENV] = tempfile.mkdtemp() + "/new/home"
        >>> chats = private_dir(home_dir() / "chats")
        >>> [oct(stat.S_IMODE(p.stat().st_mode)) for p in (chats, chats.parent)]
        ['0o700', '0o700']
        >>> del os.environ[HOME_ENV]
    """
    home = home_dir()
    missing: list[Path] = []
    probe = path
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for directory in reversed(missing):
        private = directory in (path, home) or home in directory.parents
        with contextlib.suppress(FileExistsError):  # made meanwhile by another process
            directory.mkdir(mode=PRIVATE_MODE if private else 0o777)
    return path
