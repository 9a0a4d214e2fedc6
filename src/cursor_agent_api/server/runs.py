"""Runs: queue them, start the agent, store its events, finish, cancel, recover.

:class:`RunManager` owns every active run of this server process. A run is an
asyncio task independent of any HTTP request or WebSocket: closing every
client does not stop it.

* **One run at a time per chat** — a second prompt while a run is queued or
  running is refused (HTTP 409); a partial unique index enforces it in the
  database too.
* **A limit on simultaneous runs** — a semaphore; runs over the limit wait,
  ``queued``, in arrival order.
* **Events** are read from the client's stream by a producer task into a
  bounded queue; the writer takes what is there (up to ``batch_max_events``),
  commits it with the tool-call and run updates in one transaction, then
  broadcasts it. Idle runs write each event at once; busy runs batch.
* **Recovery** — at start, runs still marked ``queued``/``running`` become
  ``interrupted`` and what is left of their recorded process groups is
  stopped (:mod:`.procs` makes sure the processes are really ours).
* **Shutdown** — every run is stopped through the client and marked
  ``interrupted``.

Example:
    >>> run_view({"id": "r", "chat_id": "c", "prompt": "p", "status": "queued",
    ...           "created_ms": 1})["status"]
    'queued'
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import update

from ..protocol import AgentEvent, EventType, ToolCall
from .log import EventLog
from .models import RunStatus, chats
from .procs import identity_alive, process_start_time, server_identity, stop_recorded_group
from .runner import (
    AgentLaunch,
    AgentStream,
    cancel_stream,
    close_stream,
    open_stream,
    wait_stream,
)
from .settings import ServerSettings
from .store import EventRecord, NewRecord, now_ms

logger = logging.getLogger("cursor_agent_api.server")

_RUN_FIELDS = (
    "id",
    "chat_id",
    "prompt",
    "status",
    "pid",
    "exit_code",
    "error",
    "error_type",
    "result",
    "usage",
    "session_id",
    "first_seq",
    "last_seq",
    "created_ms",
    "started_ms",
    "ended_ms",
)


def run_view(row: dict[str, Any]) -> dict[str, Any]:
    """The public JSON form of a run (REST and ``run`` records), with ``duration_ms``.

    Example:
        >>> run_view({"id": "r", "started_ms": 10, "ended_ms": 25})["duration_ms"]
        15
    """
    view = {k: row.get(k) for k in _RUN_FIELDS}
    started, ended = row.get("started_ms"), row.get("ended_ms")
    view["duration_ms"] = ended - started if started is not None and ended is not None else None
    return view


def run_record(status: str, run: dict[str, Any]) -> NewRecord:
    """The server record announcing a run's new status (``type: "run"``).

    Example:
        >>> run_record("queued", {"id": "r"}).subtype
        'queued'
    """
    return NewRecord("server", "run", status, {"run": run_view(run)}, None, run.get("id"))


class ServerClosingError(Exception):
    """The server is shutting down and takes no new run.

    Example:
        >>> str(ServerClosingError("closing"))
        'closing'
    """


class RunNotActiveError(Exception):
    """The run is already finished (it cannot be cancelled).

    Example:
        >>> isinstance(RunNotActiveError("done"), Exception)
        True
    """


@dataclass(eq=False)
class ActiveRun:
    """The in-memory state of a run this process is handling."""

    run: dict[str, Any]
    chat: dict[str, Any]
    phase: str = "queued"  # queued -> starting -> streaming -> finishing
    task: asyncio.Task[None] | None = None
    stream: AgentStream | None = None
    cancel_requested: bool = False
    shutdown: bool = False
    stream_error: BaseException | None = None
    pid_recorded: bool = False
    session_id: str | None = None
    first_seq: int | None = None
    open_calls: dict[str, ToolCall] = field(default_factory=dict)

    @property
    def run_id(self) -> str:
        """The run's id."""
        return str(self.run["id"])

    @property
    def chat_id(self) -> str:
        """The run's chat id."""
        return str(self.run["chat_id"])


def _tool_row(run: ActiveRun, tc: ToolCall, rec: EventRecord, *, completed: bool) -> dict[str, Any]:
    return {
        "chat_id": run.chat_id,
        "run_id": run.run_id,
        "call_id": tc.call_id,
        "kind": tc.kind.value,
        "name": tc.name,
        "status": tc.status.value,
        "args": tc.args,
        "result": tc.result,
        "output": tc.output,
        "description": tc.description,
        "exit_code": tc.exit_code,
        "started_ms": tc.started_at_ms
        if tc.started_at_ms is not None
        else (None if completed else rec.ts_ms),
        "completed_ms": (tc.completed_at_ms or rec.ts_ms) if completed else None,
        "duration_ms": tc.duration_ms,
        "started_seq": None if completed else rec.seq,
        "completed_seq": rec.seq if completed else None,
    }


class RunManager:
    """Every active run of this server process.

    Example:
        >>> RunManager.__name__
        'RunManager'
    """

    def __init__(self, settings: ServerSettings, log: EventLog) -> None:
        self.settings = settings
        self.log = log
        self.store = log.store
        self._slots = asyncio.Semaphore(settings.max_concurrent_runs)
        self._active: dict[str, ActiveRun] = {}
        self._closing = False
        self.server_id = server_identity()

    # ---- queries -----------------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        """``{"running": n, "queued": m}`` for this process."""
        running = sum(1 for a in self._active.values() if a.phase != "queued")
        return {"running": running, "queued": len(self._active) - running}

    def is_active(self, run_id: str) -> bool:
        """True while this process handles the run."""
        return run_id in self._active

    # ---- start, recover, stop ----------------------------------------------------------

    async def recover(self) -> list[str]:
        """Mark runs left active by a dead server as interrupted; stop their groups.

        A run belongs to the server process that queued it (``server_id``: host, pid
        and start time). Runs of a server that still runs on this host, and runs of
        servers on other hosts, are left alone. Returns the ids of the runs it marked.
        """
        marked: list[str] = []
        for row in await self.store.active_runs():
            owner = row.get("server_id")
            alive = identity_alive(owner) if owner else False
            if alive is not False:
                # Owned by a live server process on this host, or by a server on another
                # host (whose own restart recovers it): not ours to touch.
                continue
            if row.get("pgid"):
                found = await stop_recorded_group(int(row["pgid"]), row.get("proc_start"))
                if found:
                    logger.warning("stopped %d leftover process(es) of run %s", found, row["id"])
            await self._finish(
                row,
                RunStatus.INTERRUPTED,
                error="the server stopped while this run was active",
                error_type="ServerRestart",
            )
            marked.append(str(row["id"]))
        return marked

    async def shutdown(self) -> None:
        """Stop every run (through the client), mark it interrupted, wait for the writes."""
        self._closing = True
        actives = list(self._active.values())
        for active in actives:
            active.shutdown = True
            await self._request_cancel(active)
        tasks = [a.task for a in actives if a.task is not None]
        if not tasks:
            return
        grace = self.settings.shutdown_grace_seconds
        _done, pending = await asyncio.wait(tasks, timeout=grace)
        for task in pending:  # a client that did not stop in time
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=grace)
        for active in actives:  # whatever is left of a group, after a stuck client
            pid = active.run.get("pgid")
            if pid:
                await stop_recorded_group(int(pid), active.run.get("proc_start"))

    # ---- submit and cancel -------------------------------------------------------------

    async def submit(self, chat: dict[str, Any], prompt: str) -> dict[str, Any]:
        """Queue a run of ``prompt`` on ``chat``; returns the run (status ``queued``).

        Raises :class:`~.store.ActiveRunError` when the chat has an active run,
        :class:`ServerClosingError` during shutdown.
        """
        if self._closing:
            raise ServerClosingError("the server is shutting down")
        run = await self.log.create_run(
            chat["id"], prompt, lambda r: run_record("queued", r), server_id=self.server_id
        )
        active = ActiveRun(run=dict(run), chat=chat)
        self._active[active.run_id] = active
        active.task = asyncio.create_task(self._drive(active), name=f"run-{active.run_id}")
        return run_view(run)

    async def cancel(self, run_id: str, *, wait: float = 15.0) -> None:
        """Stop a queued or running run; waits up to ``wait`` s for it to be marked.

        Raises :class:`RunNotActiveError` when the run is not active here.
        """
        active = self._active.get(run_id)
        if active is None:
            raise RunNotActiveError(f"run {run_id} is not active")
        active.cancel_requested = True
        await self._request_cancel(active)
        if active.task is not None:
            await asyncio.wait([active.task], timeout=wait)

    async def _request_cancel(self, active: ActiveRun) -> None:
        if active.phase == "queued" and active.task is not None:
            active.task.cancel()  # lands on the semaphore wait: nothing started yet
        elif active.stream is not None:
            try:
                await cancel_stream(active.stream)
            except Exception:  # the process may already be gone
                logger.debug("cancel of run %s failed", active.run_id, exc_info=True)
        # "starting": _drive checks the flags as soon as the stream exists.

    # ---- the life of a run -------------------------------------------------------------

    async def _drive(self, active: ActiveRun) -> None:
        status = RunStatus.FAILED
        error: str | None = None
        error_type: str | None = None
        extra: dict[str, Any] = {}
        acquired = False
        try:
            try:
                await self._slots.acquire()
                acquired = True
            except asyncio.CancelledError:
                status = RunStatus.INTERRUPTED if active.shutdown else RunStatus.CANCELLED
                error = "the server shut down" if active.shutdown else None
                return
            active.phase = "starting"
            status, error, error_type, extra = await self._execute(active)
        except asyncio.CancelledError:
            status = RunStatus.INTERRUPTED
            error = "the run was stopped because the server shut down"
        except Exception as e:
            logger.exception("run %s failed", active.run_id)
            status, error, error_type = RunStatus.FAILED, str(e), type(e).__name__
        finally:
            active.phase = "finishing"
            try:
                await asyncio.shield(
                    self._finish(
                        active.run, status, error=error, error_type=error_type, active=active, **extra
                    )
                )
            except Exception as e:
                logger.exception("could not record the end of run %s", active.run_id)
                # Record at least that it is over, so the chat is not blocked until a restart.
                with contextlib.suppress(Exception):
                    await asyncio.shield(
                        self._finish(
                            active.run,
                            RunStatus.FAILED,
                            error=f"the server could not record the end of this run: {e}",
                            error_type=type(e).__name__,
                        )
                    )
            finally:
                self._active.pop(active.run_id, None)
                if acquired:  # the slot is free once the run is recorded as over
                    self._slots.release()

    async def _execute(self, active: ActiveRun) -> tuple[RunStatus, str | None, str | None, dict[str, Any]]:
        chat = active.chat
        started = now_ms()
        active.run.update(status="running", started_ms=started)

        async def mark_running(conn: Any, _recs: list[EventRecord]) -> None:
            await self.store.set_run(conn, active.run_id, status="running", started_ms=started)

        await self.log.append(active.chat_id, [run_record("running", active.run)], before=mark_running)
        if active.cancel_requested or active.shutdown:
            return self._stopped_status(active), self._stopped_error(active), None, {}
        fresh = await self.store.get_chat(active.chat_id)
        launch = AgentLaunch(
            prompt=str(active.run["prompt"]),
            workspace=str(chat["workspace"]),
            model=chat.get("model"),
            options=dict(chat.get("options") or {}),
            resume=(fresh or chat).get("session_id"),
        )
        stream = await open_stream(self.settings, launch)
        active.stream = stream
        active.phase = "streaming"
        try:
            if active.cancel_requested or active.shutdown:
                await cancel_stream(stream)
            await self._record_pid(active)
            await self._pump(active, stream)
            if not (active.cancel_requested or active.shutdown):
                with contextlib.suppress(Exception):
                    await wait_stream(stream)
        finally:
            with contextlib.suppress(Exception):
                await asyncio.shield(close_stream(stream))
        result = stream.result
        extra: dict[str, Any] = {}
        if result is None:
            err = active.stream_error
            return (
                RunStatus.FAILED,
                str(err) if err else "the agent stream ended without a result",
                (type(err).__name__ if err else None),
                extra,
            )
        extra = {
            "exit_code": result.exit_code,
            "result": result.result or None,
            "usage": result.usage.to_dict() if result.usage else None,
        }
        if result.session_id and not active.session_id:
            active.session_id = result.session_id
        if active.cancel_requested or active.shutdown or result.cancelled:
            return self._stopped_status(active), self._stopped_error(active), None, extra
        if result.success:
            return RunStatus.SUCCEEDED, None, None, extra
        etype = type(result.exception).__name__ if result.exception is not None else None
        return RunStatus.FAILED, result.error or "the turn failed", etype, extra

    @staticmethod
    def _stopped_status(active: ActiveRun) -> RunStatus:
        if active.shutdown and not active.cancel_requested:
            return RunStatus.INTERRUPTED
        return RunStatus.CANCELLED

    @staticmethod
    def _stopped_error(active: ActiveRun) -> str | None:
        if active.shutdown and not active.cancel_requested:
            return "the run was stopped because the server shut down"
        return None

    async def _record_pid(self, active: ActiveRun) -> None:
        stream = active.stream
        if active.pid_recorded or stream is None:
            return
        pid = stream.pid
        if pid is None:
            return
        active.pid_recorded = True
        try:
            pgid = os.getpgid(pid)
        except ProcessLookupError:
            pgid = pid
        start = process_start_time(pgid)
        active.run.update(pid=pid, pgid=pgid, proc_start=start)
        await self.store.update_run(active.run_id, pid=pid, pgid=pgid, proc_start=start)

    async def _pump(self, active: ActiveRun, stream: AgentStream) -> None:
        limit = self.settings.batch_max_events
        queue: asyncio.Queue[AgentEvent | None] = asyncio.Queue(maxsize=limit * 2)

        async def produce() -> None:
            try:
                async for event in stream:
                    await queue.put(event)
            except Exception as e:
                active.stream_error = e
            await queue.put(None)

        producer = asyncio.create_task(produce(), name=f"read-{active.run_id}")
        try:
            ended = False
            while not ended:
                first = await queue.get()
                if first is None:
                    break
                batch = [first]
                while len(batch) < limit and not queue.empty():
                    nxt = queue.get_nowait()
                    if nxt is None:
                        ended = True
                        break
                    batch.append(nxt)
                await self._write_batch(active, batch)
                if not active.pid_recorded:
                    await self._record_pid(active)
        finally:
            if not producer.done():
                producer.cancel()
            await asyncio.gather(producer, return_exceptions=True)

    async def _write_batch(self, active: ActiveRun, batch: list[AgentEvent]) -> None:
        run_id = active.run_id
        new = [NewRecord("agent", e.type.value, e.subtype, e.to_dict(), e.raw, run_id) for e in batch]

        async def after(conn: Any, recs: list[EventRecord]) -> None:
            new_session: str | None = None
            for event, rec in zip(batch, recs, strict=True):
                if event.session_id and active.session_id is None:
                    active.session_id = new_session = event.session_id
                etype = event.type
                if etype is EventType.TOOL_CALL_STARTED or etype is EventType.TOOL_CALL_COMPLETED:
                    tc = event.tool_call
                    if tc is None:
                        continue
                    if etype is EventType.TOOL_CALL_STARTED:
                        active.open_calls[tc.call_id] = tc.copy()
                        row = _tool_row(active, tc, rec, completed=False)
                    else:
                        prev = active.open_calls.pop(tc.call_id, None)
                        if prev is not None:
                            prev.update(tc)
                            tc = prev
                        row = _tool_row(active, tc, rec, completed=True)
                    await self.store.upsert_tool_call(conn, row)
            values: dict[str, Any] = {"last_seq": recs[-1].seq}
            if active.first_seq is None:
                active.first_seq = values["first_seq"] = recs[0].seq
            if new_session is not None:
                values["session_id"] = new_session
                await conn.execute(
                    update(chats).where(chats.c.id == active.chat_id).values(session_id=new_session)
                )
            await self.store.set_run(conn, run_id, **values)

        await self.log.append(active.chat_id, new, after=after)

    async def _finish(
        self,
        run: dict[str, Any],
        status: RunStatus,
        *,
        error: str | None = None,
        error_type: str | None = None,
        active: ActiveRun | None = None,
        **extra: Any,
    ) -> None:
        ended = now_ms()
        values: dict[str, Any] = {
            "status": status.value,
            "ended_ms": ended,
            "error": error,
            "error_type": error_type,
            **extra,
        }
        if active is not None and active.session_id and not run.get("session_id"):
            values["session_id"] = active.session_id
        final = {**run, **values}
        run_id = str(run["id"])
        store = self.store

        async def before(conn: Any, recs: list[EventRecord]) -> None:
            await store.set_run(conn, run_id, last_seq=recs[-1].seq, **values)
            await store.abandon_tool_calls(conn, run_id)

        await self.log.append(str(run["chat_id"]), [run_record(status.value, final)], before=before)
        run.update(values)
