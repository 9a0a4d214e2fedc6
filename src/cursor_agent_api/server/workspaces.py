"""Workspace roots: a run's workspace must be a real directory under one of the configured roots.

Example:
    >>> from pathlib import Path
    >>> resolve_workspace("/", (Path("/tmp").resolve(),))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cursor_agent_api.server.workspaces.WorkspaceError: workspace '/' is outside the allowed roots ...
"""

from __future__ import annotations

from pathlib import Path


class WorkspaceError(Exception):
    """A workspace that is not allowed: ``status`` is the HTTP status to answer.

    Example:
        >>> WorkspaceError("nope", 403).status
        403
    """

    def __init__(self, message: str, status: int = 400, *, outside: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.outside = outside
        """Refused for lying outside the roots (the message names them and what to do)."""


def resolve_workspace(requested: str, roots: tuple[Path, ...], *, worker: str | None = None) -> Path:
    """The real directory ``requested`` names, if it lies under one of ``roots``.

    ``roots`` are the API server's, or with ``worker`` that worker's (``serve --dispatch
    queue``): a workspace outside them is refused naming whose roots they are and which
    command to start with ``--root``.

    A relative path is taken from the first root. The path is resolved
    (symlinks followed, ``..`` collapsed) *before* the check, so neither can
    escape. ``~`` and ``~/…`` are the server user's home; ``~user`` is refused
    (400 for every user: whether one exists does not show). Raises
    :class:`WorkspaceError` (403 outside the roots, 400 when it does not exist,
    is not a directory, or its real path is not UTF-8: the database stores text).

    Example:
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp()).resolve()
        >>> resolve_workspace(".", (root,)) == root
        True
        >>> resolve_workspace("../..", (root,))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        cursor_agent_api.server.workspaces.WorkspaceError: workspace '../..' is outside the allowed roots ...
        >>> resolve_workspace("~root", (root,))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        cursor_agent_api.server.workspaces.WorkspaceError: workspace '~root': '~user' is not expanded ...
        >>> try:
        ...     resolve_workspace("/", (root,), worker="w1")
        ... except WorkspaceError as e:
        ...     print(*str(e).replace(str(root), "ROOT").split(": "), sep="\\n")
        workspace '/' is outside worker w1's roots (ROOT)
        start the worker with --root to allow another directory
    """
    if not requested or "\x00" in requested:
        raise WorkspaceError("workspace must be a non-empty path", 400)
    if not roots:
        raise WorkspaceError("no workspace roots are configured", 403)
    raw = Path(requested)
    if requested.startswith("~"):
        if raw.parts[0] != "~":
            # Whether a user exists must not show (403 for one, 400 for another).
            raise WorkspaceError(
                f"workspace {requested!r}: '~user' is not expanded (only '~', the server "
                "user's home); give the directory's path", 400)
        try:
            raw = raw.expanduser()
        except RuntimeError:  # no home directory known
            raise WorkspaceError(f"workspace {requested!r}: the server user has no home", 400) from None
    candidate = raw if raw.is_absolute() else roots[0] / raw
    try:
        resolved = candidate.resolve(strict=True)
    except (OSError, RuntimeError):
        # Tell "outside" from "missing" without revealing what exists outside.
        lexical = Path(*_normalize(candidate.parts)) if candidate.parts else candidate
        if not any(_under(lexical, r) for r in roots):
            raise WorkspaceError(_outside(requested, roots, worker), 403, outside=True) from None
        raise WorkspaceError(f"workspace {requested!r} does not exist", 400) from None
    if not any(_under(resolved, r) for r in roots):
        raise WorkspaceError(_outside(requested, roots, worker), 403, outside=True)
    if not resolved.is_dir():
        raise WorkspaceError(f"workspace {requested!r} is not a directory", 400)
    try:
        str(resolved).encode()
    except UnicodeEncodeError:  # bytes that are not UTF-8 (surrogate-escaped): not storable
        raise WorkspaceError(
            f"workspace {requested!r} resolves to a path that is not valid UTF-8; "
            "rename the directory (a symlink does not help: its target is what runs)", 400) from None
    return resolved


def _outside(requested: str, roots: tuple[Path, ...], worker: str | None) -> str:
    listed = ", ".join(str(r) for r in roots)
    if worker is not None:  # the worker that took the run is what needs the root
        return (f"workspace {requested!r} is outside worker {worker}'s roots ({listed}): start "
                "the worker with --root to allow another directory")
    return (
        f"workspace {requested!r} is outside the allowed roots ({listed}); "
        "start the server with --root to allow another directory"
    )


def _normalize(parts: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for part in parts:
        if part == "..":
            if len(out) > 1:
                out.pop()
        elif part != ".":
            out.append(part)
    return out


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents
