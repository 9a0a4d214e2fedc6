"""A cluster on this machine for the distributed-mode tests: API servers and workers.

API servers are ``serve --dispatch queue`` subprocesses (``server_helpers.Server``);
workers are ``cursor-agent-api worker`` subprocesses (:class:`WorkerProc`). All share a
fresh PostgreSQL database. The agent is the simulator behind a wrapper that appends one
line per invocation to a file (:meth:`Cluster.invocations`: nothing is re-run by
itself), each worker with its own ``CURSOR_CONFIG_DIR`` (its Cursor chats live on "its
disk", as on separate machines).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

SERVER_TESTS = Path(__file__).resolve().parent.parent / "server"
sys.path.insert(0, str(SERVER_TESTS))

import launcher  # noqa: E402
from server_helpers import (  # noqa: E402
    BIN,
    MARKER_ENV,
    PG_ENV,
    SIM,
    START_TIMEOUT,
    Server,
    marked_processes,
    pg_database,
    poll,
)

SKIP_REASON = (
    f"the distributed mode needs PostgreSQL: set {PG_ENV} "
    "(scripts/test.sh does, for its PostgreSQL pass; or: export "
    f'{PG_ENV}="$(scripts/postgres.sh)")'
)
STALLED_AFTER = 60.0
"""The API servers' ``--stalled-after``: far beyond any gap a loaded machine leaves between a
live worker's heartbeats (every :data:`HEARTBEAT` s; 3 s was not always enough: a live worker
was declared lost, and its run interrupted). A test that needs a lost worker makes it so for
certain: stopped (SIGSTOP) or killed first, then :meth:`Cluster.lose`."""
LOST_WITHIN = STALLED_AFTER + 60.0
"""How long a test waits for the sweep to end a lost worker's run (:meth:`Cluster.lose`)."""
HEARTBEAT = 0.5
WORKER_STARTS_WITHIN = 60.0
"""The limit for a worker's start (a new Python importing the package, on a loaded machine)."""


def until_taking_runs(proc: subprocess.Popen[bytes], logged: Callable[[], str]) -> bytes:
    """Read a worker process's stdout until its ready line ("taking runs"); what it read.
    Fails, with what it said and ``logged()`` (its log), if its stdout ends or is silent for
    :data:`WORKER_STARTS_WITHIN` seconds."""
    assert proc.stdout is not None
    out = b""
    while b"taking runs" not in out:
        ready, _, _ = select.select([proc.stdout], [], [], WORKER_STARTS_WITHIN)
        chunk = os.read(proc.stdout.fileno(), 4096) if ready else b""
        assert chunk, f"the worker did not start: {out!r}\n{logged()}"
        out += chunk
    return out


@contextlib.contextmanager
def fresh_cluster(tmp: Path) -> Iterator[Cluster]:
    """A :class:`Cluster` (nothing started) on a fresh database of its own, with the allowed
    root ``tmp/root`` and its ``project``; closed and the database dropped afterwards. Skips
    the test without PostgreSQL."""
    import pytest

    base = os.environ.get(PG_ENV)
    if not base:
        pytest.skip(SKIP_REASON)
    root = tmp / "root"
    (root / "project").mkdir(parents=True)
    url, drop = pg_database(base)
    c = Cluster(tmp, url, root.resolve())
    try:
        yield c
    finally:
        try:
            c.close()
        finally:
            drop()




def pg_execute(db_url: str, sql: str, *args: Any, lock_timeout: float | None = None) -> list[Any]:
    """Run one query on the cluster's database; returns its rows. With ``lock_timeout``
    (seconds), a lock waited for longer raises asyncpg's ``LockNotAvailableError``."""
    import asyncpg
    from sqlalchemy.engine import make_url

    dsn = make_url(db_url).set(drivername="postgresql").render_as_string(hide_password=False)

    async def run() -> list[Any]:
        settings = {} if lock_timeout is None else {"lock_timeout": f"{int(lock_timeout * 1000)}ms"}
        conn = await asyncpg.connect(dsn, server_settings=settings)
        try:
            return list(await conn.fetch(sql, *args))
        finally:
            await conn.close()

    return asyncio.run(run())


class WorkerProc:
    """One ``cursor-agent-api worker`` subprocess."""

    def __init__(self, cluster: Cluster, name: str, *, args: list[str] | None = None,
                 env: dict[str, str] | None = None, db_url: str | None = None) -> None:
        self.cluster = cluster
        self.name = name
        self.args = args or []
        self.env = env or {}  # added to its environment
        self.db_url = db_url or cluster.db_url
        self.proc: Any = None  # a subprocess.Popen, or a launcher.Launched
        self.log_path = cluster.tmp / f"worker-{name}.log"

    def start(self) -> WorkerProc:
        c = self.cluster
        config = c.tmp / f"cursor-config-{self.name}"
        cmd = [
            str(BIN / "cursor-agent-api"), "worker",
            "--database-url", self.db_url,
            "--root", str(c.root),
            "--name", self.name,
            "--concurrency", "2",
            "--heartbeat", str(HEARTBEAT),
            "--agent-binary", str(c.agent),
            "--agent-env", f"{MARKER_ENV}={c.marker}",
            "--agent-env", f"CURSOR_CONFIG_DIR={config}",
            "--agent-env", f"DIST_TEST_INVOCATIONS={c.invocations_file}",
            "--log-level", "warning",
            *self.args,
        ]  # fmt: skip
        env = {k: v for k, v in os.environ.items() if not k.startswith("CURSOR_AGENT_API_")}
        env.update(self.env)
        self.log = self.log_path.open("ab")
        self.proc = launcher.popen(cmd, cwd=c.root, env=env, stderr=self.log)  # as Server does
        assert self.proc.stdout is not None
        deadline = time.monotonic() + START_TIMEOUT
        buf = b""
        while b"taking runs" not in buf:
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                self.kill()
                raise AssertionError(f"worker did not start: {buf!r}\n{self.log_text()}")
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if ready:
                buf += os.read(self.proc.stdout.fileno(), 4096)
        return self

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self, timeout: float = 60.0, *, signalled: bool = False) -> int | None:
        """SIGTERM (unless ``signalled`` already: a second one would stop its runs at once),
        then wait."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            if not signalled:
                self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)
        self._close()
        return self.proc.returncode

    def kill(self) -> None:
        """SIGKILL, as a crash."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        self._close()

    def _close(self) -> None:
        if self.proc is not None and self.proc.stdout is not None and not self.proc.stdout.closed:
            self.proc.stdout.close()
        if not self.log.closed:
            self.log.close()


class Cluster:
    """API servers and workers on one fresh database (stopped by :meth:`close`)."""

    def __init__(self, tmp: Path, db_url: str, root: Path) -> None:
        self.tmp = tmp
        self.db_url = db_url
        self.root = root
        self.marker = uuid.uuid4().hex
        self.invocations_file = tmp / "invocations.txt"
        self.invocations_file.touch()
        self.agent = tmp / "agent"
        # The simulator, counted: one line per invocation.
        self.agent.write_text(f'#!/bin/sh\necho "$$" >> "$DIST_TEST_INVOCATIONS"\nexec {SIM} "$@"\n')
        self.agent.chmod(0o755)
        self.servers: list[Server] = []
        self.workers: dict[str, WorkerProc] = {}

    def server(self, *args: str) -> Server:
        server = Server(
            self.tmp,
            self.db_url,
            self.root,
            self.marker,
            args=["--dispatch", "queue", "--stalled-after", str(STALLED_AFTER), *args],
        ).start()
        self.servers.append(server)
        return server

    def worker(self, name: str, *args: str, env: dict[str, str] | None = None,
               db_url: str | None = None) -> WorkerProc:
        """Start worker ``name`` with ``args``; ``env`` is added to its environment, ``db_url``
        replaces the cluster's (the same database, another form)."""
        worker = WorkerProc(self, name, args=list(args), env=env, db_url=db_url).start()
        self.workers[name] = worker
        return worker

    def lose(self, worker: WorkerProc, run_id: str) -> None:
        """Declare ``worker``, which runs run ``run_id``, lost for certain without waiting
        :data:`STALLED_AFTER`: its last heartbeat made an hour old. ``worker`` must have been
        killed or stopped (SIGSTOP) first, so that no heartbeat of its own follows; this
        waits until it is. The API servers' next sweep (every 5 s) interrupts its runs. (A
        heartbeat it sent just before it stopped may still land after this: then the sweep
        declares it lost :data:`STALLED_AFTER` s later; a test waits that long.)"""
        self.set_worker_row(
            worker, run_id,
            "UPDATE procrastinate_workers SET last_heartbeat = now() - interval '1 hour' "
            "WHERE id = (SELECT worker_id FROM runs WHERE id = $1) RETURNING id")

    def set_worker_row(self, worker: WorkerProc, run_id: str, sql: str) -> None:
        """Run ``sql`` (``$1``: ``run_id``; it returns the one row it changed) on the
        ``procrastinate_workers`` row of ``worker``, which runs ``run_id``, once it is halted
        (killed, or stopped by SIGSTOP: see :meth:`lose`)."""
        pid = worker.proc.pid

        def halted() -> bool:
            if worker.proc.poll() is not None:
                return True
            stat = Path(f"/proc/{pid}/stat").read_text()
            return stat[stat.rfind(")") + 2 :].split()[0] in ("T", "t", "Z")

        import asyncpg

        poll(halted, 60)
        for _ in range(30):
            try:
                # (waits 2 s at most for the row: see below)
                rows = pg_execute(self.db_url, sql, run_id, lock_timeout=2.0)
                break
            except asyncpg.exceptions.LockNotAvailableError:
                # Stopped between its heartbeat (every HEARTBEAT s) and that transaction's
                # commit, the worker holds its row until it runs again (this UPDATE waited
                # for ever: CI of 2026-11-26): let it commit, then stop it again
                worker.proc.send_signal(signal.SIGCONT)
                time.sleep(0.2)
                worker.proc.send_signal(signal.SIGSTOP)
                poll(halted, 60)
        else:
            raise AssertionError(f"worker {worker.name}'s row stayed locked")
        assert len(rows) == 1, f"run {run_id} has no registered worker"

    def gate(self, name: str) -> tuple[str, Path]:
        """A shell command for the agent (``run `...` ``) that waits until the test opens the
        gate, and the gate: the path to create. A run so waits where the test says, however
        slow the machine (the simulator stops a command after 30 s).

        Example: ``command, gate = cluster.gate("short")``; later ``gate.touch()``."""
        path = self.tmp / f"gate-{name}-{uuid.uuid4().hex[:8]}"
        return f"while [ ! -e {path} ]; do sleep 0.1; done", path

    def invocations(self) -> int:
        return len(self.invocations_file.read_text().split())

    def logs(self) -> str:
        parts = [f"--- worker {n}\n{w.log_text()[-3000:]}" for n, w in self.workers.items()]
        parts += [f"--- server {s.port}\n{s.log_text()[-3000:]}" for s in self.servers]
        return "\n".join(parts)

    def close(self) -> None:
        procs = [w.proc for w in self.workers.values()] + [s.proc for s in self.servers]
        for proc in procs:  # all at once, then wait for each
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for worker in self.workers.values():
            worker.stop(signalled=True)
        for server in self.servers:
            server.stop()
        leftover = marked_processes(self.marker)
        for pid in leftover:
            os.kill(pid, signal.SIGKILL)
        assert not leftover, f"agent processes outlived the test: {leftover}"
