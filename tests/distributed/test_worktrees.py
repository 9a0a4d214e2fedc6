"""A chat's own git worktree on a worker (``worker --worktrees DIR``)."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_api.server import worktrees
from cursor_agent_api.server.worktrees import BRANCH_PREFIX, WorktreeError, chat_worktree

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def _repo(tmp_path: Path) -> Path:
    """A repository with one commit (a.txt: "one")."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git("init", "-q", cwd=repo)
    (repo / "a.txt").write_text("one\n")
    _git("add", "a.txt", cwd=repo)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first", cwd=repo)
    return repo


def test_each_chat_gets_its_own_worktree_and_branch_kept_across_runs(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
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


def test_making_a_worktree_runs_no_hook_and_shows_git_no_server_secret(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the agent (the worker's user) can write the repository's .git/hooks/post-checkout: the
    # next chat's `git worktree add` ran it, with the worker's whole environment (the database
    # URL and its password), which git's own /proc/PID/environ showed too
    repo = _repo(tmp_path)
    ran = tmp_path / "hook-ran"
    hook = repo / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\nenv > {ran}\n")
    hook.chmod(0o755)
    seen = tmp_path / "git-env"
    wrapper = tmp_path / "bin" / "git"
    wrapper.parent.mkdir()
    wrapper.write_text(f"#!/bin/sh\nenv >> {seen}\nexec {shutil.which('git')} \"$@\"\n")
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrapper.parent}:{shutil.os.environ['PATH']}")  # type: ignore[attr-defined]
    monkeypatch.setenv("CURSOR_AGENT_API_DATABASE_URL", "postgresql+asyncpg://u:S3CRET-PW@db/app")
    made = chat_worktree(repo, "chat-1", tmp_path / "worktrees")
    assert made is not None and (made / "a.txt").read_text() == "one\n"
    assert seen.exists(), "git was not run through the wrapper: no test"
    assert "S3CRET-PW" not in seen.read_text()
    assert not ran.exists(), "the repository's hook ran"


@pytest.mark.parametrize("removal", ["git worktree remove", "rm -rf"])
def test_a_chat_whose_worktree_was_removed_goes_on_from_its_branch(tmp_path: Path, removal: str) -> None:
    # docs/distributed.md says to remove worktrees by hand: the branch stayed, and every later
    # run of the chat failed ("a branch named 'cursor-agent/chat-1' already exists")
    repo = _repo(tmp_path)
    base = tmp_path / "worktrees"
    first = chat_worktree(repo, "chat-1", base)
    assert first is not None
    (first / "b.txt").write_text("the agent's work\n")
    _git("add", "b.txt", cwd=first)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "work", cwd=first)
    if removal == "rm -rf":  # git still lists it (a stale registration)
        shutil.rmtree(first)
    else:
        _git("worktree", "remove", str(first), cwd=repo)

    again = chat_worktree(repo, "chat-1", base)
    assert again == first and (again / "b.txt").read_text() == "the agent's work\n"
    assert _git("branch", "--show-current", cwd=again) == BRANCH_PREFIX + "chat-1"


def test_a_chat_whose_branch_is_checked_out_elsewhere_gets_an_error_that_says_what_to_do(
        tmp_path: Path) -> None:
    # the chat moved to another worker of the machine (its own --worktrees DIR) while the
    # first worker's worktree of it is still there
    repo = _repo(tmp_path)
    theirs = chat_worktree(repo, "chat-1", tmp_path / "worker-a")
    with pytest.raises(WorktreeError, match=r"checked out in .*worker-a/chat-1.* worktree remove"):
        chat_worktree(repo, "chat-1", tmp_path / "worker-b")
    assert theirs is not None and (theirs / "a.txt").exists(), "the other worktree is left as it was"

    (tmp_path / "worker-c" / "chat-2").mkdir(parents=True)
    (tmp_path / "worker-c" / "chat-2" / "left.txt").write_text("not a worktree\n")
    with pytest.raises(WorktreeError, match="in the way"):
        chat_worktree(repo, "chat-2", tmp_path / "worker-c")
    (tmp_path / "worker-c" / "chat-3").write_text("a file\n")
    with pytest.raises(WorktreeError, match="in the way"):
        chat_worktree(repo, "chat-3", tmp_path / "worker-c")


def test_a_repository_without_a_commit_gets_an_error_that_says_what_to_do(tmp_path: Path) -> None:
    # a worktree starts from HEAD: every run failed with "not a valid object name: 'HEAD'"
    repo = tmp_path / "repo"
    repo.mkdir()
    _git("init", "-q", cwd=repo)
    with pytest.raises(WorktreeError, match=r"no commit yet.*commit once .*or run the worker without --"):
        chat_worktree(repo, "chat-1", tmp_path / "worktrees")
    assert _git("branch", "--list", cwd=repo) == "", "no branch left behind"


def test_worktrees_of_one_repository_are_added_one_at_a_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        on_lock_wait: Callable[[Callable[[], None]], None]) -> None:
    # two `git worktree add` at once in one repository (a worker's runs start in threads;
    # workers of one machine share repositories) failed now and then ("failed to read
    # .git/worktrees/<other chat>/commondir"), leaving the chat's branch behind
    repo = _repo(tmp_path)
    first_in_add, first_may_go, second_waits_or_done = (threading.Event() for _ in range(3))
    adding: list[str] = []
    overlaps: list[str] = []
    real_run = subprocess.run

    def run(args: list[str], **kwargs: Any) -> Any:
        if "worktree" not in args or "add" not in args:
            return real_run(args, **kwargs)
        me = threading.current_thread().name
        if adding:
            overlaps.append(f"{me} while {adding}")
        adding.append(me)
        try:
            if me == "first":
                first_in_add.set()
                assert first_may_go.wait(60)
            return real_run(args, **kwargs)
        finally:
            adding.remove(me)

    def second_waits() -> None:
        if threading.current_thread().name == "second":
            second_waits_or_done.set()

    monkeypatch.setattr(subprocess, "run", run)
    on_lock_wait(second_waits)
    made: dict[str, Path | None] = {}

    def chat(name: str, base: Path) -> None:
        try:
            made[name] = chat_worktree(repo, name, base)
        finally:
            if name == "second":
                second_waits_or_done.set()

    first = threading.Thread(target=chat, args=("first", tmp_path / "worker-a"), name="first")
    second = threading.Thread(target=chat, args=("second", tmp_path / "worker-b"), name="second")
    first.start()
    assert first_in_add.wait(60)
    second.start()  # another worker (its own DIR), same repository
    assert second_waits_or_done.wait(60)
    first_may_go.set()
    first.join(60)
    second.join(60)
    assert overlaps == []
    assert made == {"first": tmp_path / "worker-a" / "first", "second": tmp_path / "worker-b" / "second"}


def test_a_lock_kept_too_long_fails_the_run_with_the_reason(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the lock is in the repository, which the agent can write: a process keeping it
    # stops no run for ever
    repo = _repo(tmp_path)
    monkeypatch.setattr(worktrees, "LOCK_WAIT", 0.0)
    with open(repo / ".git" / worktrees.LOCK_NAME, "a") as held:  # as another worker would
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(WorktreeError, match="stayed locked"):
            chat_worktree(repo, "chat-1", tmp_path / "worktrees")
    assert chat_worktree(repo, "chat-1", tmp_path / "worktrees") == tmp_path / "worktrees" / "chat-1"
