"""Optional, on a worker: each chat works in its own git worktree and branch.

With ``cursor-agent-api worker --worktrees DIR``, a run whose workspace is the top of a git
repository runs in ``DIR/<chat id>``: a worktree of that repository on the branch
``cursor-agent/<chat id>``, made from the repository's ``HEAD`` at the chat's first run on
this worker and reused by its later runs. Chats then never edit the same checkout.
Worktrees are never removed automatically (a dirty or unpushed one would lose work);
``git worktree remove`` does it by hand, and the chat's next run makes the worktree again
on its branch, where its committed work is. A workspace that is not a repository's top is
used as it is.

Worktrees of one repository are made one at a time (git fails now and then when two
``git worktree add`` run at once): under an ``flock`` on ``cursor-agent-worktrees.lock`` in
the repository's git directory, which every worker of the machine takes.

What cannot be done raises :class:`WorktreeError`, which says what to do.

Example:
    >>> import tempfile
    >>> chat_worktree(Path(tempfile.mkdtemp()), "c", Path(tempfile.mkdtemp())) is None  # not a repository
    True
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

from ..files import lock_file
from .runner import is_server_variable

BRANCH_PREFIX = "cursor-agent/"
LOCK_NAME = "cursor-agent-worktrees.lock"
LOCK_WAIT = 120.0  # seconds a worker waits for another's `git worktree add` of the repository


class WorktreeError(RuntimeError):
    """A chat's worktree cannot be made; ``str(e)`` says why and what to do.

    Example:
        >>> str(WorktreeError("the repository has no commit yet"))
        'the repository has no commit yet'
    """


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # The repository is the agent's to write: its hooks are not run (a post-checkout hook
    # would run with the worker's rights), and git gets none of the worker's own variables
    # (the database URL, libpq's: its password), as the agent gets none.
    env = {k: v for k, v in os.environ.items() if not is_server_variable(k, postgres=True)}
    return subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", *args], cwd=cwd, env=env,
        capture_output=True, text=True, timeout=120, check=False
    )


def _git(*args: str, cwd: Path) -> str:
    done = _run(*args, cwd=cwd)
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["git failed"])[-1][:300]
        raise WorktreeError(f"git {args[0]} failed in {cwd}: {reason}")
    return done.stdout.strip()


def _exists(ref: str, cwd: Path) -> bool:
    return _run("rev-parse", "--verify", "-q", ref, cwd=cwd).returncode == 0


@contextlib.contextmanager
def _repository_lock(workspace: Path) -> Iterator[None]:
    """Held while a worktree of the repository at ``workspace`` is made (any process)."""
    path = workspace / _git("rev-parse", "--git-common-dir", cwd=workspace) / LOCK_NAME
    try:  # bounded: a process keeping the lock (the agent may) stops no run for ever
        fd = lock_file(path, wait=LOCK_WAIT, nofollow=True)
    except OSError as e:
        raise WorktreeError(f"cannot lock {path}: {e.strerror}") from None
    if fd is None:
        raise WorktreeError(
            f"{path} stayed locked for {LOCK_WAIT:.0f} s (a process other than a worker "
            "making a worktree may hold it): the chat's next run tries again"
        )
    try:
        yield
    finally:
        os.close(fd)  # releases the lock


def _checked_out_at(workspace: Path, ref: str) -> Path | None:
    """The worktree of the repository that has ``ref`` checked out (as git registered it)."""
    path = None
    for line in _git("worktree", "list", "--porcelain", cwd=workspace).splitlines():
        if line.startswith("worktree "):
            path = Path(line.removeprefix("worktree "))
        elif line == f"branch {ref}":
            return path
    return None


def _add(workspace: Path, branch: str, target: Path) -> None:
    """Make ``target``: on ``branch`` if it exists (the chat's earlier work), else a new
    ``branch`` from ``HEAD``."""
    try:
        in_the_way = target.is_symlink() or any(target.iterdir())
    except FileNotFoundError:
        in_the_way = False
    except NotADirectoryError:
        in_the_way = True
    if in_the_way:
        raise WorktreeError(
            f"{target} is in the way of the chat's worktree (it is not one): move it away, and "
            f"the chat's next run makes its worktree again on the branch {branch}"
        )
    ref = "refs/heads/" + branch
    if not _exists(ref, workspace):
        if not _exists("HEAD^{commit}", workspace):
            raise WorktreeError(
                f"the repository {workspace} has no commit yet, and a chat's worktree starts "
                "from its HEAD: commit once (git commit --allow-empty -m start), or run the "
                "worker without --worktrees"
            )
        _git("worktree", "add", "-b", branch, str(target), "HEAD", cwd=workspace)
        return
    # The chat ran here before and its worktree was removed (or made by another worker).
    elsewhere = _checked_out_at(workspace, ref)
    if elsewhere is not None and not (elsewhere / ".git").exists():  # deleted without git
        _git("worktree", "prune", cwd=workspace)
        elsewhere = _checked_out_at(workspace, ref)
    if elsewhere is not None:
        raise WorktreeError(
            f"the chat's branch {branch} is checked out in {elsewhere} (another worker's "
            "worktree?): free it (commit what that checkout holds, then remove it, git -C "
            f"{workspace} worktree remove {elsewhere}, or switch it to another branch); the "
            "chat's next run here goes on from the branch"
        )
    _git("worktree", "add", str(target), branch, cwd=workspace)


def chat_worktree(workspace: Path, chat_id: str, base: Path) -> Path | None:
    """The worktree of ``chat_id`` for the repository at ``workspace`` (made if missing),
    or ``None`` when ``workspace`` is not the top of a git repository.

    ``chat_id`` is a UUID (the server's): safe as a path and branch name. Raises
    :class:`WorktreeError` when the worktree cannot be made.
    """
    if not (workspace / ".git").exists():
        return None
    target = base / chat_id
    if (target / ".git").exists():
        return target
    base.mkdir(parents=True, exist_ok=True)
    with _repository_lock(workspace):
        if not (target / ".git").exists():  # (not made while this waited)
            _add(workspace, BRANCH_PREFIX + chat_id, target)
    return target
