"""On uvloop, the agent's pipes are closed once: uvloop gives a pipe's number to libuv, which
closes it with the transport, and a file object wrapping the same number closed it a second
time, later (MagicStack/uvloop#763). Whatever another thread had opened under that number
in between (a database socket, another turn's pipe) was closed under it: one stray close per
agent start, in ``serve`` too (uvicorn runs on uvloop). Found while hunting a flaky test
(2026-11-26); the probe's idea: a file object that, as it closes, first opens a pipe as
another thread could at that moment, and checks afterwards that the pipe is still open."""

from __future__ import annotations

import asyncio
import gc
import io
import os
from typing import Any, ClassVar

import pytest

from cursor_agent_api import AsyncCursorAgentClient

uvloop = pytest.importorskip("uvloop")


class Stealing(io.FileIO):
    """A FileIO that opens a pipe just before it closes (the lowest free number: its own if
    it was closed already) and records it."""

    grabbed: ClassVar[list[tuple[int, int, int]]] = []  # (pipe read end, write end, read end's inode)

    def close(self) -> None:
        if not self.closed:
            r, w = os.pipe()
            Stealing.grabbed.append((r, w, os.fstat(r).st_ino))
        super().close()


def _fdopen(fd: int, mode: str = "r", buffering: int = -1, *args: Any, **kwargs: Any) -> io.FileIO:
    assert mode == "rb" and buffering == 0, (mode, buffering)
    return Stealing(fd, "rb", closefd=True)


def _still_open(r: int, inode: int) -> bool:
    try:
        return os.fstat(r).st_ino == inode
    except OSError:
        return False


def _loop(name: str) -> asyncio.AbstractEventLoop:
    if name == "uvloop":
        return uvloop.new_event_loop()  # type: ignore[no-any-return]
    if name == "uvloop subclass":  # an application's own (review 45: its module is not uvloop)
        return type("AppLoop", (uvloop.Loop,), {"__module__": "myapp.loops"})()  # type: ignore[no-any-return]
    return asyncio.new_event_loop()


@pytest.mark.parametrize("loop_name", ["asyncio", "uvloop", "uvloop subclass"])
def test_the_agents_pipes_close_no_descriptor_of_someone_else(
    loop_name: str, make_cursor_sim_config: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "fdopen", _fdopen)
    Stealing.grabbed.clear()
    loop = _loop(loop_name)

    open_fds: list[int] = []

    async def turns() -> list[str]:
        client = AsyncCursorAgentClient(make_cursor_sim_config())
        results = []
        for i in range(4):
            results.append((await client.query(f"What is {i} + 1?")).result)
            for _ in range(100):  # (a closing transport's last callbacks: 5 s at most)
                await asyncio.sleep(0.05)
                count = len(os.listdir("/proc/self/fd")) - 2 * len(Stealing.grabbed)
                if not open_fds or count <= open_fds[0]:
                    break
            open_fds.append(count)
        return results

    try:
        assert loop.run_until_complete(turns()) == ["1", "2", "3", "4"]
    finally:
        loop.close()
        monkeypatch.undo()
    gc.collect()  # (a file object left to the collector closes then)
    lost = [r for r, _w, ino in Stealing.grabbed if not _still_open(r, ino)]
    for r, w, ino in Stealing.grabbed:
        if _still_open(r, ino):
            os.close(r)
        os.close(w)
    if loop_name == "asyncio":  # asyncio's transport closes its file object: the probe ran
        assert Stealing.grabbed
    assert not lost, f"{loop_name}: pipes opened by someone else were closed under them: {lost}"
    # and each turn's pipes were closed: none left open (libuv closes uvloop's)
    assert open_fds[1:] == open_fds[:1] * 3, open_fds
