"""What runs at once each record in the config dir is all kept: ``--trust``'s trusted
workspaces and ACP's "allow always" rules (each a read-modify-write of one JSON file, by
processes that the tests hold at the worst moment)."""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from cursor_agent_api.sim.acp import Server
from cursor_agent_api.sim.cli_args import parse_args
from cursor_agent_api.sim.jsonrpc import Connection
from cursor_agent_api.sim.settings import SimSettings
from cursor_agent_api.sim.store import ChatStore

OnLockWait = Callable[[Callable[[], None]], None]  # the fixture on_lock_wait (tests/conftest.py)


def _one_write_held_back(first: Callable[[], None], second: Callable[[], None],
                         monkeypatch: pytest.MonkeyPatch, on_lock_wait: OnLockWait) -> None:
    """Run ``first`` and ``second`` in two processes, ``first``'s write held back just before
    it replaces the file until ``second`` waits for a lock or is done."""
    ctx = mp.get_context("fork")  # the processes inherit the patches below
    first_writes, first_may_go, second_waits_or_done = (ctx.Event() for _ in range(3))
    real_replace = os.replace
    role = {"name": "test"}

    def replace(src: Any, dst: Any) -> None:
        if role["name"] == "first" and not first_writes.is_set():
            first_writes.set()
            assert first_may_go.wait(60)
        real_replace(src, dst)

    def second_waits() -> None:
        if role["name"] == "second":
            second_waits_or_done.set()

    def run(name: str, work: Callable[[], None]) -> None:
        role["name"] = name
        try:
            work()
        finally:
            if name == "second":
                second_waits_or_done.set()

    monkeypatch.setattr(os, "replace", replace)
    on_lock_wait(second_waits)
    procs = [ctx.Process(target=run, args=("first", first)), ctx.Process(target=run, args=("second", second))]
    procs[0].start()
    assert first_writes.wait(60)
    procs[1].start()
    assert second_waits_or_done.wait(60)
    first_may_go.set()
    for proc in procs:
        proc.join(60)
    assert [proc.exitcode for proc in procs] == [0, 0]


def test_workspaces_trusted_at_once_are_all_recorded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, on_lock_wait: OnLockWait) -> None:
    # 8 first runs at once with --trust: 6 of 8 were recorded, and the others then refused
    # to run without --trust
    def trust(workspace: str) -> Callable[[], None]:
        return lambda: ChatStore(tmp_path).trust(workspace)

    _one_write_held_back(trust("/ws1"), trust("/ws2"), monkeypatch, on_lock_wait)
    store = ChatStore(tmp_path)
    assert store.is_trusted("/ws1") and store.is_trusted("/ws2")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trusted-workspaces.json"], "no lock left"


def test_allow_always_rules_given_at_once_are_all_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, on_lock_wait: OnLockWait) -> None:
    def remember(token: str) -> Callable[[], None]:
        server = Server(parse_args(["acp"]), {}, ChatStore(tmp_path), SimSettings(), Connection(in_fd=None))
        return lambda: server.remember(token)

    _one_write_held_back(remember("Shell(touch)"), remember("Shell(ls)"), monkeypatch, on_lock_wait)
    config = orjson.loads((tmp_path / "cli-config.json").read_bytes())
    assert sorted(config["permissions"]["allow"]) == ["Shell(ls)", "Shell(touch)"]
