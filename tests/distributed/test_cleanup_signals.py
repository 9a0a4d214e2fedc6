"""A signal that reaches a worker after its drain, while it cleans up (its ``agent acp``
clients stopped, its store closed: an operator or systemd repeating SIGTERM, a second
Ctrl-C), is said in its log and the cleanup finishes; the worker exits with its normal
status. Its handlers used to be removed as the drain ended: such a signal killed it there,
mid-cleanup, with no line saying so (audit of 2026-11-25).

The worker is the real ``cursor-agent-api worker`` in a subprocess (its own signal
handlers; the default ones would end the test process), its cleanup held at the ACP
clients' close until the test opens a pipe: the signals land there for certain."""

from __future__ import annotations

import asyncio
import os
import select
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cluster import until_taking_runs
from server_helpers import poll

from cursor_agent_api.server.settings import ServerSettings
from cursor_agent_api.server.worker import Worker, WorkerSettings

ALREADY = "already stopping: finishing cleanup"
"""What a worker logs for a signal that comes during its cleanup."""
WITHIN = 20.0
"""A failure's limit only: each step is waited for by what it says or writes (well under
pytest-timeout's 120 s, all steps together: a regression fails, it does not hang)."""
STARTS_WITHIN = 60.0
"""The limit for the worker's start (a new Python importing the package, on a loaded machine)."""

_CHILD = """
import asyncio, os, sys
from cursor_agent_api.cli import main
from cursor_agent_api.server.runner import AcpClients
from cursor_agent_api.server.store import Store

SAID, GATE = {said}, {gate}
real_aclose, real_close = AcpClients.aclose, Store.close

async def held_aclose(self):  # the cleanup waits here until the test writes to GATE
    os.write(SAID, b"closing\\n")
    loop = asyncio.get_running_loop()
    opened = loop.create_future()
    loop.add_reader(GATE, lambda: opened.done() or opened.set_result(None))
    try:
        await opened
    finally:
        loop.remove_reader(GATE)
    await real_aclose(self)

async def close(self):
    await real_close(self)
    os.write(SAID, b"closed\\n")

AcpClients.aclose, Store.close = held_aclose, close
sys.argv = ["cursor-agent-api", "worker", "--simulate", "--name", "w-cleanup",
            "--root", {root!r}, "--database-url", {url!r}, "--log-level", "warning"]
sys.exit(main())
"""


def _read(fd: int) -> bytes:
    ready, _, _ = select.select([fd], [], [], WITHIN)
    assert ready, "nothing said within the limit"
    return os.read(fd, 100)


def test_signals_during_a_workers_cleanup_are_logged_and_the_cleanup_finishes(
    db_url: str, tmp_path: Path
) -> None:
    said_r, said_w = os.pipe()
    gate_r, gate_w = os.pipe()
    log_path = tmp_path / "worker.log"
    script = _CHILD.format(said=said_w, gate=gate_r, root=str(tmp_path), url=db_url)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CURSOR_AGENT_API_")}
    with log_path.open("wb") as log:
        proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=log,
                                stdin=subprocess.DEVNULL, cwd=tmp_path, env=env,
                                pass_fds=(said_w, gate_r), start_new_session=True)
    os.close(said_w)
    os.close(gate_r)

    def logged() -> str:
        return log_path.read_text(errors="replace")

    try:
        until_taking_runs(proc, logged)
        proc.send_signal(signal.SIGTERM)  # the drain: no run to wait for; then the cleanup
        assert _read(said_r) == b"closing\n", logged()
        # Repeated, a Ctrl-C, its terminal closed: each said, none ends it mid-cleanup.
        for n, signum in enumerate((signal.SIGTERM, signal.SIGINT, signal.SIGHUP), 1):
            proc.send_signal(signum)
            poll(lambda n=n: logged().count(ALREADY) >= n or proc.poll() is not None, WITHIN)
            assert proc.poll() is None, (signum, proc.returncode, logged())
        os.write(gate_w, b"open")
        # stopped by its first SIGTERM: main() called as a function ends with SignalExit,
        # the shell's status for it (the console script would die from it)
        assert proc.wait(WITHIN) == 128 + signal.SIGTERM, logged()
        assert _read(said_r) == b"closed\n", logged()  # the store was closed after the clients
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(WITHIN)
        if proc.stdout is not None:
            proc.stdout.close()
        os.close(said_r)
        os.close(gate_w)
    text = logged()
    assert text.count(ALREADY) == 3, text
    assert "Traceback" not in text, text
    assert "Task was destroyed" not in text and "never awaited" not in text, text


def test_a_stop_once_the_drain_is_over_only_says_so(caplog: pytest.LogCaptureFixture) -> None:
    """Procrastinate's worker has ended (its drain, or its database failed): a stop starts
    nothing (no poll of cancels, no stop of the runs: a task nobody would await, its run
    manager's clients already closing) and says so, each time."""
    url = "postgresql+asyncpg://u@127.0.0.1/db"  # (nothing is connected to)
    worker = Worker(WorkerSettings(server=ServerSettings(database_url=url)))

    async def main() -> None:
        worker._taking = asyncio.create_task(asyncio.sleep(0))
        await worker._taking
        worker.stop()
        worker.stop()
        assert (worker._tasks, worker._shutdown) == (set(), None)

    with caplog.at_level("WARNING", logger="cursor_agent_api.worker"):
        asyncio.run(main())
    said = [r.getMessage() for r in caplog.records if r.name == "cursor_agent_api.worker"]
    assert said == [ALREADY] * 2, said


def test_a_stop_while_the_runs_are_being_stopped_says_so(caplog: pytest.LogCaptureFixture) -> None:
    """A third signal, the runs already being stopped (the second's stop), is said, as one
    during the cleanup is (it was silently ignored); nothing more is started."""
    url = "postgresql+asyncpg://u@127.0.0.1/db"  # (nothing is connected to)
    worker = Worker(WorkerSettings(server=ServerSettings(database_url=url)))

    async def main() -> None:
        ended = asyncio.Event()
        stops: list[str] = []

        async def shutdown() -> None:
            stops.append("runs stopped")
            await ended.wait()

        worker.runs.shutdown = shutdown  # type: ignore[method-assign]
        worker._taking = asyncio.create_task(ended.wait())  # Procrastinate's worker, draining
        worker.stop()
        worker.stop()
        stopping = worker._shutdown
        worker.stop()
        assert stopping is not None and worker._shutdown is stopping
        ended.set()
        for task in worker._tasks:  # the drain's poll of cancels
            task.cancel()
        await asyncio.gather(worker._taking, stopping, *worker._tasks, return_exceptions=True)
        assert stopping.result() is None and stops == ["runs stopped"]

    with caplog.at_level("WARNING", logger="cursor_agent_api.worker"):
        asyncio.run(main())
    said = [r.getMessage() for r in caplog.records if r.name == "cursor_agent_api.worker"]
    assert [line.split(":")[0] for line in said] == ["stopping", "stopping now",
                                                     "already stopping the runs"], said


def _worker(db_url: str, tmp_path: Path) -> Worker:
    server = ServerSettings(token="t" * 16, database_url=db_url, roots=(tmp_path,), dispatch="queue",
                            simulate=True)
    return Worker(WorkerSettings(server=server, name="w-early"))


def test_a_worker_whose_ready_line_fails_drains_before_its_queue_closes(
    db_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``on_ready`` raises (the CLI's ready line on a closed stdout): Procrastinate's worker
    is stopped as at SIGTERM while the queue is open, and run() raises the error. It used to
    go on after run() had left, its queue closed under it: its failure never retrieved. No
    signal came: nothing says one did (it said "stopping: ... 0 run(s)", review 11)."""
    worker = _worker(db_url, tmp_path)

    def ready() -> None:
        raise OSError("stdout closed")

    worker.on_ready = ready
    with caplog.at_level("WARNING", logger="cursor_agent_api.worker"), \
            pytest.raises(OSError, match="stdout closed"):
        asyncio.run(asyncio.wait_for(worker.run(), STARTS_WITHIN))  # (a regression fails)
    taking = worker._taking
    assert taking is not None and taking.done()
    assert taking.cancelled() or taking.exception() is None, taking
    said = [r.getMessage() for r in caplog.records if r.name == "cursor_agent_api.worker"]
    assert said == [], said


def test_a_failure_of_procrastinates_stop_as_run_leaves_early_is_said(
    db_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """run() leaves early (cancelled in process) and Procrastinate's worker, stopped then,
    fails as it stops: run() ends cancelled, and that failure is said in one line (it was
    read and dropped, review 11)."""
    worker = _worker(db_url, tmp_path)

    async def main() -> None:
        started = asyncio.Event()

        async def taking(**kwargs: Any) -> None:  # Procrastinate's worker, its stop failing
            started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                raise RuntimeError("unregister failed") from None

        worker.app.run_worker_async = taking  # type: ignore[method-assign]
        run = asyncio.create_task(worker.run())
        await asyncio.wait_for(started.wait(), WITHIN)
        run.cancel()
        await asyncio.wait([run], timeout=WITHIN)
        assert run.cancelled()

    with caplog.at_level("WARNING", logger="cursor_agent_api.worker"):
        asyncio.run(main())
    said = [r.getMessage() for r in caplog.records if r.name == "cursor_agent_api.worker"]
    assert said == ["the queue's worker failed as it stopped: unregister failed (RuntimeError)"], said
    assert not any(r.exc_info for r in caplog.records)


def test_a_stop_during_a_cleanup_reached_before_procrastinates_end_only_says_so(
    db_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """run() cancelled in process, and again while Procrastinate's stop waits for a job (its
    grace): the cleanup begins with Procrastinate's worker still going. A signal then only
    says so: no stop of the runs (a task nobody would await, its clients being closed)."""
    worker = _worker(db_url, tmp_path)

    async def main() -> None:
        ready, stopping, cleaning = asyncio.Event(), asyncio.Event(), asyncio.Event()
        released, cleaned = asyncio.Event(), asyncio.Event()

        async def taking(**kwargs: Any) -> None:  # Procrastinate's worker, its stop held by a job
            try:
                await released.wait()
            except asyncio.CancelledError:  # its graceful stop: it waits for the job
                stopping.set()
                await released.wait()  # (cancelled again, as nothing should: it ends, cancelled)

        real_aclose = worker.runs.acp_clients.aclose

        async def held_aclose() -> None:
            cleaning.set()
            await cleaned.wait()
            await real_aclose()

        worker.app.run_worker_async = taking  # type: ignore[method-assign]
        worker.runs.acp_clients.aclose = held_aclose  # type: ignore[method-assign]
        worker.on_ready = ready.set
        run = asyncio.create_task(worker.run())
        try:
            await asyncio.wait_for(ready.wait(), WITHIN)
            run.cancel()  # the drain begins
            await asyncio.wait_for(stopping.wait(), WITHIN)
            run.cancel()  # again, while the drain waits: on to the cleanup
            await asyncio.wait_for(cleaning.wait(), WITHIN)
            worker.stop()  # a signal during the cleanup
            assert (worker._shutdown, worker._tasks) == (None, set())
        finally:  # (also when an assertion failed: nothing is left waiting)
            cleaned.set()
            await asyncio.wait([run], timeout=WITHIN)
            released.set()
            if worker._shutdown is not None:
                await asyncio.wait([worker._shutdown], timeout=WITHIN)
        assert run.cancelled()
        assert worker._taking is not None
        await asyncio.wait([worker._taking], timeout=WITHIN)
        # ended by its release, not by a second cancel (its graceful stop, once)
        assert worker._taking.done() and not worker._taking.cancelled(), worker._taking
        assert worker._taking.exception() is None

    with caplog.at_level("WARNING", logger="cursor_agent_api.worker"):
        asyncio.run(main())
    said = [r.getMessage() for r in caplog.records if r.name == "cursor_agent_api.worker"]
    assert said[-1] == ALREADY, said
