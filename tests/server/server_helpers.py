"""Helpers for the server tests: a real ``cursor-agent-api serve`` on a random loopback port.

Every server runs in a subprocess (so a test can SIGKILL it), with agents from
the simulator and its own database: an SQLite file by default, or a fresh
PostgreSQL database per test when ``CURSOR_AGENT_API_TEST_DATABASE_URL`` is set
(``postgresql+asyncpg://user:pw@127.0.0.1:PORT/db``; the user needs CREATEDB).

Each test's agents carry a unique marker in their environment; the teardown
asserts that no process with that marker is alive.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import launcher

BIN = Path(sys.executable).parent
SERVE = [str(BIN / "cursor-agent-api"), "serve"]
SIM = str(BIN / "cursor-agent-sim")
PG_ENV = "CURSOR_AGENT_API_TEST_DATABASE_URL"
MARKER_ENV = "CURSOR_AGENT_API_TEST_MARKER"
START_TIMEOUT = 60.0


@contextlib.asynccontextmanager
async def queued_run(db_url: str, workspace: str = "/w") -> AsyncIterator[tuple[Any, Any, dict[str, Any]]]:
    """A started store, its event log and a queued run of a new chat (no agent, no server):
    for tests that write a run's records by hand. The store is closed at the end."""
    from cursor_agent_api.server.hub import Hub
    from cursor_agent_api.server.log import EventLog
    from cursor_agent_api.server.runs import run_record
    from cursor_agent_api.server.store import Store

    store = Store(db_url)
    await store.start()
    try:
        log = EventLog(store, Hub(), 1 << 20)
        chat = await store.create_chat(workspace=workspace, model=None, options={}, title="t")
        run = await log.create_run(chat["id"], "hi", lambda r: run_record("queued", r))
        yield store, log, run
    finally:
        await store.close()


@contextlib.contextmanager
def sqlite_write_lock(path: str) -> Iterator[None]:
    """Hold the SQLite file's write lock (``BEGIN IMMEDIATE``) from another connection, as
    another process would, until the block ends; the lock is held when the block starts."""
    locked, release = threading.Event(), threading.Event()

    def hold() -> None:
        conn = sqlite3.connect(path, timeout=30)
        try:
            conn.execute("BEGIN IMMEDIATE")
            locked.set()
            release.wait(60)
            conn.rollback()
        finally:
            conn.close()

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    try:
        assert locked.wait(30), "the SQLite write lock was not taken in 30 s"
        yield
    finally:
        release.set()
        holder.join(30)


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


def stop_servers(servers: list[Server], marker: str) -> None:
    """Stop every server, then fail if an agent process of the test (``marker``) outlived
    them (after killing it, so that no test leaks into the next)."""
    for server in servers:
        server.stop()
    leftover = marked_processes(marker)
    for pid in leftover:
        os.kill(pid, signal.SIGKILL)
    assert not leftover, f"agent processes outlived the test: {leftover}"


class Server:
    """One ``serve`` subprocess."""

    def __init__(
        self,
        tmp: Path,
        db_url: str,
        root: Path,
        marker: str,
        *,
        sim_env: dict[str, str] | None = None,
        args: list[str] | None = None,
        token: str | None = None,
        server_env: dict[str, str] | None = None,
    ) -> None:
        self.server_env = server_env or {}
        self.tmp = tmp
        self.db_url = db_url
        self.root = root
        self.marker = marker
        self.token = token or uuid.uuid4().hex
        self.sim_env = {"CURSOR_CONFIG_DIR": str(tmp / "cursor-config"), **(sim_env or {})}
        self.args = args or []
        self.proc: Any = None  # a subprocess.Popen, or a launcher.Launched
        self.url = ""
        self.login_code = ""
        self.port = 0
        self.first_lines: list[str] = []
        self.log_path = tmp / f"server-{uuid.uuid4().hex[:6]}.log"

    def start(self) -> Server:
        cmd = [
            *SERVE,
            "--port",
            "0",
            "--token",
            self.token,
            "--database-url",
            self.db_url,
            "--root",
            str(self.root),
            # the simulator by path; with --simulate (the web tests' label) serve finds it itself
            *(["--agent-binary", SIM] if "--simulate" not in self.args else []),
            "--log-level",
            "warning",
            "--agent-env",
            f"{MARKER_ENV}={self.marker}",
        ]
        for k, v in self.sim_env.items():
            cmd += ["--agent-env", f"{k}={v}"]
        cmd += self.args
        env = {k: v for k, v in os.environ.items() if not k.startswith("CURSOR_AGENT_API_")}
        env.update(self.server_env)
        self.log = self.log_path.open("ab")
        # a new session, stdout a pipe: forked by launcher.py from a process that imported
        # the server already, or exec'd (CURSOR_AGENT_API_TEST_EXEC=1)
        self.proc = launcher.popen(cmd, cwd=self.root, env=env, stderr=self.log)
        try:
            buf = self._wait_for_open_line()
        except BaseException:  # Ctrl-C (KeyboardInterrupt) too: no server outlives its start
            self.stop()
            raise
        self.first_lines = buf.decode().splitlines()
        open_line = next(line for line in self.first_lines if line.startswith("Open: "))
        link = open_line.split("Open: ", 1)[1].strip()
        self.url, _, query = link.partition("/?")
        self.login_code = query.partition("code=")[2]
        self.port = int(self.url.rsplit(":", 1)[1])
        return self

    def _wait_for_open_line(self) -> bytes:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + START_TIMEOUT
        buf = b""
        while not (b"Open: " in buf and b"\n" in buf.split(b"Open: ", 1)[1]):
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                raise AssertionError(f"server did not start: {buf!r}\n{self.log_text()}")
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if ready:
                buf += os.read(self.proc.stdout.fileno(), 4096)
        return buf

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


FINAL = frozenset({"succeeded", "failed", "cancelled", "interrupted"})


def is_run_end(msg: dict[str, Any], run_id: str | None = None) -> bool:
    """True for the WebSocket message recording that a run reached a final status."""
    if msg.get("op") != "event":
        return False
    ev = msg["event"]
    return ev["type"] == "run" and ev["subtype"] in FINAL and (run_id is None or ev["run_id"] == run_id)


async def ws_collect(
    url: str,
    until: Callable[[dict[str, Any]], bool],
    *,
    timeout: float = 90.0,
    limit: int | None = None,
    **connect_kwargs: Any,
) -> list[dict[str, Any]]:
    """Connect, gather messages until ``until(msg)`` (included) or ``limit`` events."""
    import orjson
    from websockets.asyncio.client import connect

    msgs: list[dict[str, Any]] = []
    events = 0

    async def run() -> None:
        nonlocal events
        async with connect(url, max_size=None, **connect_kwargs) as ws:
            async for text in _until_closed(ws):
                msg = orjson.loads(text)
                msgs.append(msg)
                if msg.get("op") == "event":
                    events += 1
                if until(msg) or (limit is not None and events >= limit):
                    await _leave(ws)
                    return

    await asyncio.wait_for(run(), timeout)
    return msgs


def noting_live(
    until: Callable[[dict[str, Any]], bool], live: asyncio.Event
) -> Callable[[dict[str, Any]], bool]:
    """``until`` for :func:`ws_collect`, setting ``live`` at the socket's ``live``: a test
    starts a run once its socket is subscribed, not after a sleep (on a loaded machine the
    run's records could come before, replayed rather than live)."""

    def check(msg: dict[str, Any]) -> bool:
        if msg.get("op") == "live":
            live.set()
        return until(msg)

    return check


async def ws_until_closed(base_url: str, chat_id: str, token: str) -> tuple[list[dict[str, Any]], int | None]:
    """Every message of the chat's socket (opened with the token, from seq 0) until the server
    closes it, and its close code; each message awaited 30 s at most (a hang's bound)."""
    import orjson
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    url = f"{base_url.replace('http://', 'ws://')}/api/chats/{chat_id}/stream?after_seq=0"
    got: list[dict[str, Any]] = []
    async with connect(url, additional_headers={"Authorization": f"token {token}"}) as ws:
        try:
            while True:
                got.append(orjson.loads(await asyncio.wait_for(ws.recv(), 30)))
        except ConnectionClosed:
            return got, ws.close_code


async def _leave(ws: Any) -> None:
    """Close ``ws``, dropping what still arrives: unread messages pause the client's reading
    (``max_queue``), and the server's close frame behind them would go unread until the
    client's ``close_timeout`` (10 s) cut the connection (1006)."""

    async def drain() -> None:
        async for _ in _until_closed(ws):
            pass

    await asyncio.gather(ws.close(), drain())


async def _until_closed(ws: Any) -> Any:
    """Messages until the socket closes, whatever the close code (4000: resync, 44xx)."""
    from websockets.exceptions import ConnectionClosed

    while True:
        try:
            yield await ws.recv()
        except ConnectionClosed:
            return


def event_seqs(msgs: list[dict[str, Any]]) -> list[int]:
    """The seqs of the ``event`` messages, in arrival order."""
    return [m["seq"] for m in msgs if m.get("op") == "event"]


def new_chat(client: httpx.Client, workspace: str = "project", **options: Any) -> dict[str, Any]:
    """Create a chat (trusted workspace by default) and return it."""
    body = {"workspace": workspace, "options": {"trust": True, **options}}
    r = client.post("/api/chats", json=body)
    assert r.status_code == 201, r.text
    return dict(r.json())


def wait_run(client: httpx.Client, run_id: str, timeout: float = 90.0) -> dict[str, Any]:
    """Poll until the run is final; returns it."""

    def final() -> dict[str, Any] | None:
        run = client.get(f"/api/runs/{run_id}").json()
        return run if run["status"] in FINAL else None

    return dict(poll(final, timeout))


def all_events(client: httpx.Client, chat_id: str, page: int = 100) -> list[dict[str, Any]]:
    """Every stored record of the chat, through the paged REST endpoint."""
    out: list[dict[str, Any]] = []
    after = 0
    while True:
        r = client.get(f"/api/chats/{chat_id}/events", params={"after_seq": after, "limit": page})
        assert r.status_code == 200, r.text
        body = r.json()
        out += body["events"]
        after = body["next_after_seq"]
        if not body["has_more"]:
            return out


def write_script(path: Path, deltas: int, *, thinking: int = 0) -> Path:
    """A recording for ``CURSOR_AGENT_SIM_SCRIPT``: init, prompt, ``deltas`` assistant
    deltas (sent with ``stream_partial_output``), the final text, a result — written
    with the project's one definition of the shapes, :mod:`cursor_agent_api.sim.wire`."""
    from cursor_agent_api.sim import wire

    sid = "8ef40118-8378-436d-8ba8-2436b19cc877"
    ts = 1789644625717
    text = "".join(f"{i} " for i in range(deltas))
    with path.open("wb") as f:
        f.write(wire.encode(wire.system_init(sid, "/ws", "GPT-5 Mini")))
        f.write(wire.encode(wire.user(sid, "count")))
        for i in range(thinking):
            f.write(wire.encode(wire.thinking_delta(sid, f"t{i} ", ts + i), checked=False))
        for i in range(deltas):
            f.write(wire.encode(wire.assistant_delta(sid, f"{i} ", ts + i), checked=False))
        f.write(wire.encode(wire.assistant_final(sid, text)))
        f.write(wire.encode(wire.result_success(sid, "r", text, 1, wire.usage(1, deltas))))
    return path


def pg_database(base_url: str) -> tuple[str, Callable[[], None]]:
    """Create a fresh database next to ``base_url``'s; returns its URL and a dropper."""
    import asyncpg  # type: ignore[import-untyped]
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
        # FORCE cannot end a backend of another role (an autovacuum worker that just started
        # on the new database, on a server shared by parallel runs): it is gone in a moment.
        for attempt in range(20):
            try:
                asyncio.run(run(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
                return
            except asyncpg.exceptions.InsufficientPrivilegeError:
                if attempt == 19:
                    raise
                time.sleep(0.25)

    return url.set(database=name).render_as_string(hide_password=False), drop
