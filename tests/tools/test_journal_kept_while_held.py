"""A turn's journal (tools/journal.py) lives only while it lists holders: workspaces used
once (every test's temporary directory) must not leave a directory each in the user's data
dir, which every later turn's sweep opens and locks (20,000 of them: 7.9 s per turn)."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from cursor_agent_api.tools.approvals import ApprovalInjection
from cursor_agent_api.tools.inject import WorkspaceInjection
from cursor_agent_api.tools.journal import Journal, sweep


def test_the_last_turn_out_removes_the_workspaces_journal(tmp_path: Path) -> None:
    root = tmp_path / "journals"
    for n in range(3):
        ws = tmp_path / f"ws{n}"
        ws.mkdir()
        first = WorkspaceInjection(ws, {"app": {"url": "http://127.0.0.1:9/mcp"}}, [], root=root)
        second = WorkspaceInjection(ws, {"two": {"url": "http://127.0.0.1:9/mcp"}}, [], root=root)
        with first, second:
            assert len(list(root.iterdir())) == 1  # held: kept
        assert not (ws / ".cursor").exists()
    assert list(root.iterdir()) == []


def test_the_last_approval_out_removes_its_journal(tmp_path: Path) -> None:
    root = tmp_path / "journals"
    for n in range(3):
        with ApprovalInjection(tmp_path / f"p{n}" / "mcp-approvals.json", ["app-1"], root=root):
            assert len(list(root.iterdir())) == 1
    assert list(root.iterdir()) == []


def test_a_sweep_removes_journals_that_hold_nothing(tmp_path: Path) -> None:
    """What versions that kept every journal left behind (a lock, no state)."""
    for n in range(3):
        Journal(tmp_path / f"j{n}", what="test").directory.mkdir()
        (tmp_path / f"j{n}" / "lock").touch()
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "state.bad.json").write_text("{")  # kept for the person to read
    sweep(tmp_path, lambda journal: None, lambda d: Journal(d, what="test"))
    assert [p.name for p in tmp_path.iterdir()] == ["bad"]


def _wait_for_a_waiter(lock: Path, who: str, unless: Callable[[], bool] = lambda: False) -> bool:
    """Until someone waits for the ``flock`` on the file ``lock`` names (a ``->`` line of
    /proc/locks): True then; False as soon as ``unless()`` is true instead."""
    for _ in range(3000):
        if unless():
            return False
        with contextlib.suppress(FileNotFoundError):
            inode = f":{os.stat(lock).st_ino} "
            if any("->" in line and inode in line
                   for line in Path("/proc/locks").read_text().splitlines()):
                return True
        time.sleep(0.01)
    raise AssertionError(f"{who} never waited for the lock")


def test_a_turn_waiting_on_a_removed_journal_locks_the_new_one(tmp_path: Path) -> None:
    """A waits on the lock while B, the last holder, leaves and removes the directory; then C
    makes it again. A must not go on holding the removed file's lock beside C (two holders
    of one journal at once)."""
    directory = tmp_path / "j"
    b, a, c = (Journal(directory, what="test") for _ in range(3))
    a_waiting, a_holds, c_tried, a_free = (threading.Event() for _ in range(4))
    c_held_with_a: list[bool] = []

    def run_a() -> None:
        a_waiting.set()
        with a.locked():
            a_holds.set()
            c_tried.wait(10)
            a.save({"holders": {"a": {}}})
        a_free.set()

    def run_c() -> None:
        a_holds.wait(10)
        got = threading.Event()

        def lock() -> None:
            with c.locked():
                got.set()

        t = threading.Thread(target=lock, daemon=True)
        t.start()
        # C waits for the lock A holds, or (A holding the removed file's) gets the new one
        waits = _wait_for_a_waiter(directory / "lock", "C", unless=got.is_set)
        c_held_with_a.append(not waits and not a_free.is_set())
        c_tried.set()
        t.join(10)

    with b.locked():
        b.save({"holders": {"b": {}}})
        thread_a = threading.Thread(target=run_a, daemon=True)
        thread_a.start()
        a_waiting.wait(10)
        _wait_for_a_waiter(directory / "lock", "A")
        b.delete()  # B, the last holder, leaves: the directory goes
    thread_c = threading.Thread(target=run_c, daemon=True)
    thread_c.start()
    thread_a.join(10)
    thread_c.join(10)
    assert a_holds.is_set()
    assert c_held_with_a == [False]  # C waited for A: one holder at a time
    assert a.load() == {"holders": {"a": {}}}
