"""The one check that a workspace is there before an agent starts in it.

Both transports (print mode's :class:`~.run.AgentRun`, ACP's :class:`~.acp_turn.AcpTurn` and
its process) and ``create_chat`` call :func:`check_workspace` before they start anything: a
workspace that is missing, or a file, is a :class:`~cursor_agent_api.errors.WorkspaceNotFoundError`
that names it, the same in both modes (not the agent's stderr in one and a "binary not
found" from a failed ``chdir`` in the other).

Example:
    >>> check_workspace(None), check_workspace(".")
    (None, None)
    >>> check_workspace("/nonexistent/dir")
    Traceback (most recent call last):
    ...
    cursor_agent_api.errors.WorkspaceNotFoundError: the workspace directory does not exist: ...
"""

from __future__ import annotations

import errno
import os

from ..errors import WorkspaceNotFoundError

__all__ = ["check_workspace"]


def check_workspace(workspace: str | None) -> None:
    """Raise :class:`~cursor_agent_api.errors.WorkspaceNotFoundError` unless ``workspace`` is
    ``None`` (the current directory) or an existing directory.

    Example:
        >>> import tempfile
        >>> with tempfile.NamedTemporaryFile() as f:
        ...     check_workspace(f.name)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        cursor_agent_api.errors.WorkspaceNotFoundError: the workspace is not a directory: ...
    """
    if workspace is None or os.path.isdir(workspace):
        return
    if os.path.lexists(workspace):
        raise WorkspaceNotFoundError(f"the workspace is not a directory: {workspace!r}",
                                     errno=errno.ENOTDIR)
    raise WorkspaceNotFoundError(f"the workspace directory does not exist: {workspace!r}",
                                 errno=errno.ENOENT)
