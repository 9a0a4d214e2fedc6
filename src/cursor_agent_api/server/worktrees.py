"""Optional, on a worker: each chat works in its own git worktree and branch.

With ``cursor-agent-api worker --worktrees DIR``, a run whose workspace is the top of a git
repository runs in ``DIR/<chat id>``: a worktree of that repository on the branch
``cursor-agent/<chat id>``, made from the repository's ``HEAD`` at the chat's first run on
this worker and reused by its later runs. Chats then never edit the same checkout.
Worktrees are never removed automatically (a dirty or unpushed one would lose work);
``git worktree remove`` does it by hand. A workspace that is not a repository's top is used
as it is.

Example:
    >>> import tempfile
    >>> chat_worktree(Path(tempfile.mkdtemp()), "c", Path(tempfile.mkdtemp())) is None  # not a repository
    True
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .runner import SERVER_ENV_PREFIX

BRANCH_PREFIX = "cursor-agent/"


def _git(*args: str, cwd: Path) -> str:
    # The repository is the agent's to write: its hooks are not run (a post-checkout hook
    # would run with the worker's rights), and git gets none of the worker's own variables
    # (the database URL and its password), as the agent gets none.
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(SERVER_ENV_PREFIX)}
    done = subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", *args], cwd=cwd, env=env,
        capture_output=True, text=True, timeout=120, check=False
    )
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["git failed"])[-1][:300]
        raise RuntimeError(f"git {args[0]} failed in {cwd}: {reason}")
    return done.stdout.strip()


def chat_worktree(workspace: Path, chat_id: str, base: Path) -> Path | None:
    """The worktree of ``chat_id`` for the repository at ``workspace`` (made if missing),
    or ``None`` when ``workspace`` is not the top of a git repository.

    ``chat_id`` is a UUID (the server's): safe as a path and branch name.
    """
    if not (workspace / ".git").exists():
        return None
    target = base / chat_id
    if (target / ".git").exists():
        return target
    base.mkdir(parents=True, exist_ok=True)
    _git("worktree", "add", "-b", BRANCH_PREFIX + chat_id, str(target), "HEAD", cwd=workspace)
    return target
