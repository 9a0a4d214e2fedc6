"""Fixtures for the server tests: a real ``cursor-agent-api serve`` on a random loopback port.

Every server runs in a subprocess (so a test can SIGKILL it), with agents from
the simulator and its own database: an SQLite file by default, or a fresh
PostgreSQL database per test when ``CURSOR_AGENT_API_TEST_DATABASE_URL`` is set
(``postgresql+asyncpg://user:pw@127.0.0.1:PORT/db``; the user needs CREATEDB).

Each test's agents carry a unique marker in their environment; the teardown
asserts that no process with that marker is alive.
"""

from __future__ import annotations

import asyncio
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

import httpx
import pytest

BIN = Path(sys.executable).parent
SERVE = [str(BIN / "cursor-agent-api"), "serve"]
SIM = str(BIN / "cursor-agent-sim")
PG_ENV = "CURSOR_AGENT_API_TEST_DATABASE_URL"
MARKER_ENV = "CURSOR_AGENT_API_TEST_MARKER"
START_TIMEOUT = 60.0


def poll(predicate: Callable[[], Any], timeout: float = 60.0, interval: float = 0.05) -> Any:
    """Call ``predicate`` until it returns something truthy; fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s: {predicate}")
        time.sleep(interval)


def _state(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2 :].split()[0]


def alive(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie."""
    return _state(pid) not in (None, "Z", "X")


def marked_processes(marker: str) -> list[int]:
    """Live (non-zombie) processes whose environment carries ``marker``."""
    needle = f"{MARKER_ENV}={marker}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle not in (entry / "environ").read_bytes():
                continue
        except OSError:
            continue
        if alive(int(entry.name)):
            found.append(int(entry.name))
    return found


class Server:
    """One ``serve`` subprocess."""

    def __init__(
        self, tmp: Path, db_url: str, root: Path, marker: str, *,
        sim_env: dict[str, str] | None = None, args: list[str] | None = None,
    ) -> None:
        self.tmp = tmp
        self.db_url = db_url
        self.root = root
        self.marker = marker
        self.token = uuid.uuid4().hex
        self.sim_env = {"CURSOR_CONFIG_DIR": str(tmp / "cursor-config"), **(sim_env or {})}
        self.args = args or []
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.port = 0
        self.first_lines: list[str] = []
        self.log_path = tmp / f"server-{uuid.uuid4().hex[:6]}.log"

    def start(self) -> Server:
        cmd = [
            *SERVE, "--port", "0", "--token", self.token, "--database-url", self.db_url,
            "--root", str(self.root), "--agent-binary", SIM, "--log-level", "warning",
            "--agent-env", f"{MARKER_ENV}={self.marker}",
        ]
        for k, v in self.sim_env.items():
            cmd += ["--agent-env", f"{k}={v}"]
        cmd += self.args
        env = {k: v for k, v in os.environ.items() if not k.startswith("CURSOR_AGENT_API_")}
        self.log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=self.log, cwd=self.root, env=env,
            start_new_session=True,
        )
        assert self.proc.stdout is not None
        deadline = time.monotonic() + START_TIMEOUT
        buf = b""
        while not (b"Open: " in buf and b"\n" in buf.split(b"Open: ", 1)[1]):
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                self.stop()
                raise AssertionError(f"server did not start: {buf!r}\n{self.log_text()}")
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if ready:
                buf += os.read(self.proc.stdout.fileno(), 4096)
        self.first_lines = buf.decode().splitlines()
        open_line = next(line for line in self.first_lines if line.startswith("Open: "))
        self.url = open_line.split("Open: ", 1)[1].strip().split("/?token=", 1)[0]
        self.port = int(self.url.rsplit(":", 1)[1])
        return self

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def client(self, **kwargs: Any) -> httpx.Client:
        headers = {"Authorization": f"token {self.token}", **kwargs.pop("headers", {})}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60.0, **kwargs)

    def anon(self, **kwargs: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=60.0, **kwargs)

    def ws_url(self, chat_id: str, after_seq: int = 0, *, token: bool = True) -> str:
        base = self.url.replace("http://", "ws://")
        url = f"{base}/api/chats/{chat_id}/stream?after_seq={after_seq}"
        return url + (f"&token={self.token}" if token else "")

    def stop(self, timeout: float = 60.0) -> int | None:
        """SIGTERM (graceful shutdown), then wait."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
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
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(30)
        self._close()

    def _close(self) -> None:
        assert self.proc is not None
        if self.proc.stdout is not None and not self.proc.stdout.closed:
            self.proc.stdout.close()
        if not self.log.closed:
            self.log.close()


def _pg_database(base_url: str) -> tuple[str, Callable[[], None]]:
    """Create a fresh database next to ``base_url``'s; returns its URL and a dropper."""
    import asyncpg
    from sqlalchemy.engine import make_url

    url = make_url(base_url)
    name = f"cat_{uuid.uuid4().hex[:12]}"
    dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)

    async def run(sql: str) -> None:
        conn = await asyncpg.connect(dsn)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(run(f'CREATE DATABASE "{name}"'))

    def drop() -> None:
        asyncio.run(run(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))

    return url.set(database=name).render_as_string(hide_password=False), drop


@pytest.fixture
def db_url(tmp_path: Path) -> Iterator[str]:
    """A fresh database: SQLite in tmp_path, or PostgreSQL when the env var is set."""
    base = os.environ.get(PG_ENV)
    if not base:
        yield f"sqlite+aiosqlite:///{tmp_path / 'server.sqlite3'}"
        return
    url, drop = _pg_database(base)
    try:
        yield url
    finally:
        drop()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The allowed root, with a project and a file in it."""
    root = tmp_path / "root"
    (root / "project").mkdir(parents=True)
    (root / "project" / "notes.txt").write_text("hello\nTODO: write tests\n")
    return root.resolve()


@pytest.fixture
def make_server(
    tmp_path: Path, db_url: str, workspace: Path
) -> Iterator[Callable[..., Server]]:
    """Start servers (all stopped at the end); asserts no agent process outlives the test."""
    marker = uuid.uuid4().hex
    servers: list[Server] = []

    def make(**kwargs: Any) -> Server:
        server = Server(tmp_path, db_url, workspace, marker, **kwargs).start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()
    leftover = marked_processes(marker)
    for pid in leftover:
        os.kill(pid, signal.SIGKILL)
    assert not leftover, f"agent processes outlived the test: {leftover}"


@pytest.fixture
def server(make_server: Callable[..., Server]) -> Server:
    """A server with the default simulator settings."""
    return make_server()
