"""``serve`` and ``worker`` whose output is a pipe nobody reads (``serve | less`` with less
paused, a supervisor whose log reader stalls): the event loop never waits on a log line.

Each line used to be written by the loop itself: once the pipe's 64 KiB were full, the next
one blocked it, and the server answered no request more. Now the loop queues the lines and
a thread writes them (``cli/log_output.py``); what does not fit in the queue is dropped,
counted, and said in one line once the output flows again."""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import BinaryIO

import httpx

CLI = [sys.executable, "-m", "cursor_agent_api.cli"]
TOKEN = "unread-output-test-token-0123456789"
PAD = "x" * 8000  # each request's access-log line: about 8 KB
REQUESTS = 200  # 1.6 MB of log lines: past the pipe's 64 KiB and the queue's 1 MiB
DROPPED = re.compile(r"^(\d+) log lines? dropped here: the log output was not read$", re.M)


def _drain(stream: BinaryIO, into: list[bytes]) -> threading.Thread:
    def read() -> None:
        into.append(stream.read())

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def test_a_server_whose_output_nobody_reads_still_answers(cli_env: dict[str, str],
                                                          tmp_path: Path) -> None:
    read, write = os.pipe()
    proc = subprocess.Popen(
        [*CLI, "serve", "--port", "0", "--simulate", "--access-log", "--database-url",
         f"sqlite+aiosqlite:///{tmp_path / 'server.sqlite3'}"],
        stdout=write, stderr=write, stdin=subprocess.DEVNULL, cwd=cli_env["TEST_WS"],
        env={**cli_env, "CURSOR_AGENT_API_TOKEN": TOKEN}, start_new_session=True)
    os.close(write)
    out = os.fdopen(read, "rb")
    rest: list[bytes] = []
    drained: threading.Thread | None = None
    try:
        while not (line := out.readline()).startswith(b"Open: "):  # then: read no more
            assert line, "the server ended before it announced itself"
        url = line.decode().split("Open: ", 1)[1].split("/?code=")[0]
        with httpx.Client(base_url=url, timeout=60,
                          headers={"Authorization": f"token {TOKEN}"}) as client:
            for i in range(REQUESTS):  # blocked at the 9th or so, when the loop wrote them
                assert client.get("/api/health", params={"n": i, "pad": PAD}).status_code == 200
            drained = _drain(out, rest)  # the output flows again
            assert client.get("/api/health", params={"after": "flowing"}).status_code == 200
    finally:
        if drained is None:
            drained = _drain(out, rest)
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(60)
        drained.join(60)
        out.close()
    text = rest[0].decode()
    written = len(re.findall(r"GET /api/health\?n=\d+&pad=x{8000} ", text))
    count = sum(int(n) for n in DROPPED.findall(text))  # said where they were dropped
    assert count > 0 and written + count == REQUESTS, (written, count)  # every one counted
    assert text.index("dropped here") < text.index("after=flowing")
    assert "Application shutdown complete" in text  # written before uvicorn raised SIGTERM again


def test_a_worker_whose_output_nobody_reads_goes_on(cli_env: dict[str, str]) -> None:
    """The worker's logs (through the root logger: Procrastinate's lines too) are queued as
    well: its loop goes on while stderr is full. (Its run loop is replaced by one that logs
    1.6 MB, then says so on a pipe of its own: no database needed.)"""
    said_r, said_w = os.pipe()
    script = f"""
import asyncio, logging, os, sys
import cursor_agent_api.server.worker as worker_module
from cursor_agent_api.cli import main

async def serve_worker(settings, on_ready, on_signal=None):
    on_ready()
    log = logging.getLogger("procrastinate.worker")
    for i in range({REQUESTS}):
        log.warning("line %d %s", i, {PAD!r})
    os.write({said_w}, b"logged")
    await asyncio.Event().wait()

worker_module.serve_worker = serve_worker
sys.argv = ["cursor-agent-api", "worker", "--simulate", "--root", {cli_env["TEST_WS"]!r},
            "--database-url", "postgresql+asyncpg://u@127.0.0.1:1/db"]
main()
"""
    read, write = os.pipe()
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=write, stderr=write,
                            stdin=subprocess.DEVNULL, cwd=cli_env["TEST_WS"], env=cli_env,
                            pass_fds=(said_w,), start_new_session=True)
    os.close(write)
    os.close(said_w)
    out = os.fdopen(read, "rb")
    rest: list[bytes] = []
    try:
        while b"taking runs from queues" not in (line := out.readline()):  # then: read no more
            assert line, "the worker ended before it was ready"
        ready, _, _ = select.select([said_r], [], [], 60)  # (a failure's limit only)
        assert ready and os.read(said_r, 100) == b"logged", "the worker's loop is blocked"
    finally:
        drained = _drain(out, rest)
        os.killpg(proc.pid, signal.SIGINT)  # (Ctrl-C: its queued lines are written, then it ends)
        proc.wait(60)
        drained.join(60)
        out.close()
        os.close(said_r)
    text = rest[0].decode()
    written = len(re.findall(r"procrastinate.worker: line \d+ x{8000}$", text, re.M))
    count = sum(int(n) for n in DROPPED.findall(text))
    assert count > 0 and written + count == REQUESTS, (written, count)
