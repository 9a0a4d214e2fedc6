"""A chat's own git worktree on a worker (``worker --worktrees DIR``)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cursor_agent_api.server.worktrees import BRANCH_PREFIX, chat_worktree

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def test_each_chat_gets_its_own_worktree_and_branch_kept_across_runs(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git("init", "-q", cwd=repo)
    (repo / "a.txt").write_text("one\n")
    _git("add", "a.txt", cwd=repo)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first", cwd=repo)
    base = tmp_path / "worktrees"

    first = chat_worktree(repo, "chat-1", base)
    assert first == base / "chat-1" and (first / "a.txt").read_text() == "one\n"
    assert _git("branch", "--show-current", cwd=first) == BRANCH_PREFIX + "chat-1"
    (first / "a.txt").write_text("edited by the agent\n")  # dirty: kept as it is
    assert chat_worktree(repo, "chat-1", base) == first, "the chat's next run reuses it"
    assert (first / "a.txt").read_text() == "edited by the agent\n"
    other = chat_worktree(repo, "chat-2", base)
    assert other is not None and (other / "a.txt").read_text() == "one\n", "chats never share a checkout"
    assert (repo / "a.txt").read_text() == "one\n", "the repository's own checkout is untouched"
