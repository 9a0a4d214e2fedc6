"""The chat run lock (PROTOCOL.md §1: a second concurrent run on one chat fails): however many
processes race for it, exactly one holds it at a time, with or without a stale lock left by a
killed turn."""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
from multiprocessing.synchronize import Barrier, Event
from pathlib import Path

import pytest

from cursor_agent_api.sim.store import ChatBusy, ChatStore

CHAT = "11111111-2222-4333-8444-555555555555"
PROCESSES = 12
TRIALS = 8


def _contender(config_dir: str, barrier: Barrier, results: mp.Queue[str], done: Event) -> None:
    chat = ChatStore(config_dir).chat("/ws", CHAT)
    barrier.wait()
    try:
        chat.acquire()
    except ChatBusy:
        results.put("busy")
        return
    results.put("held")
    done.wait(60)  # hold it, like a running turn, until every contender has answered
    chat.release()


def _race(config_dir: Path) -> int:
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(PROCESSES)
    results: mp.Queue[str] = ctx.Queue()
    done = ctx.Event()
    procs = [ctx.Process(target=_contender, args=(str(config_dir), barrier, results, done))
             for _ in range(PROCESSES)]
    for p in procs:
        p.start()
    try:
        answers = [results.get(timeout=60) for _ in range(PROCESSES)]
    except queue.Empty:
        answers = []
    finally:
        done.set()
        for p in procs:
            p.join(60)
            if p.is_alive():
                p.kill()
                p.join()
    assert len(answers) == PROCESSES
    return answers.count("held")


@pytest.mark.parametrize("stale", [False, True], ids=["no-lock", "stale-lock"])
def test_exactly_one_process_holds_a_chats_run_lock(tmp_path: Path, stale: bool) -> None:
    for trial in range(TRIALS):
        config_dir = tmp_path / str(trial)
        chat = ChatStore(config_dir).chat("/ws", CHAT)
        if stale:  # a turn killed with SIGKILL left its lock behind
            chat.directory.mkdir(parents=True)
            chat.lock_path.write_text("999999999")
        assert _race(config_dir) == 1


def test_a_lock_file_left_behind_is_taken_over_and_released(tmp_path: Path) -> None:
    chat = ChatStore(tmp_path).chat("/ws", CHAT)
    chat.directory.mkdir(parents=True)
    chat.lock_path.write_text("999999999")
    chat.acquire()
    assert chat.lock_path.read_text() == str(os.getpid())
    other = ChatStore(tmp_path).chat("/ws", CHAT)
    with pytest.raises(ChatBusy):
        other.acquire()
    chat.release()
    assert not chat.lock_path.exists()
    other.acquire()
    other.release()
