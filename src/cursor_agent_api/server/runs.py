"""Runs: queue them, start the agent, store its events, finish, cancel, recover.

:class:`RunManager` owns every active run of this server process. A run is an
asyncio task independent of any HTTP request or WebSocket: closing every
client does not stop it.

* **One run at a time per chat** — a second prompt while a run is queued or
  running is refused (HTTP 409); a partial unique index enforces it in the
  database too.
* **A limit on simultaneous runs** — a semaphore; runs over the limit wait,
  ``queued``, in arrival order.
* **Events** are read from the client's stream, each with what it changed
  (the stream folds the turn, once: ``with_changes()``), by a producer task
  into a buffer; the writer takes what is there (up to ``batch_max_events``
  and ``batch_max_bytes``), commits it with the turn state those changes make
  (:mod:`.turns`) in one transaction, then broadcasts it. Idle runs write each event at once; busy
  runs batch. While the store keeps up, the producer waits when the buffer
  holds ``batch_max_bytes`` (the agent's pipe fills: backpressure).
* **A store that fails for a while** (a lock, a read-only disk, a dropped
  connection) stops no run: the writer retries with backoff, and the producer
  keeps reading into the buffer, up to ``store_buffer_bytes`` /
  ``store_buffer_events``. Only when that overflows is the run stopped and
  failed (``error_type`` ``StoreUnavailable``). The end of a run is retried
  until it is recorded.
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
import socket
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import CursorAgentError, WorkspaceNotFoundError
from ..protocol import AgentEvent
from .dispatch import CancelNotAppliedError
from .log import EventLog
from .models import ACTIVE_STATUSES, RunStatus
from .procs import identity_alive, process_start_time, server_identity, stop_recorded_group
from .requests import (
    AlreadyAnsweredError,
    AnswerIn,
    RunRequests,
    RunSteering,
    UnknownRequestError,
    close_open_requests,
    pair_requests,
    request_records,
)
from .runner import (
    AcpClients,
    AgentLaunch,
    AgentStream,
    cancel_stream,
    close_stream,
    open_stream,
    release_events,
    set_eager,
    wait_stream,
)
from .settings import ServerSettings
from .store import (
    ActiveRunError,
    AppendOnce,
    EventRecord,
    NewRecord,
    RunEndedError,
    describe_error,
    is_transient,
    new_id,
    now_ms,
    write_turn,
)
from .turns import Changes, FoldedBatch, RunFold, append_folded, load_run_fold, refold_run

T = TypeVar("T")

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
    "worker",  # the worker that ran it (distributed mode), else None
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
    """The server is shutting down and takes no new run."""


class _RunOverError(Exception):
    """The run to end is over already (another process ended it): roll the write back."""


class RunNotActiveError(Exception):
    """The run is already finished (it cannot be cancelled)."""


class SubmitUncertainError(Exception):
    """The database failed while a new run's commit was under way: it may be stored.

    If it was, it is not run: :class:`RunManager` marks it ``failed`` (with its record)
    once the database answers, so the chat takes the prompt again.

    Example:
        >>> str(SubmitUncertainError("r1", "connection lost")).startswith("the database failed")
        True
    """

    def __init__(self, run_id: str, reason: str, *,
                 ends: str = "is marked failed once the database answers again") -> None:
        super().__init__(
            f"the database failed while the prompt was being stored ({reason}): it may have been "
            f"stored as run {run_id}; if so, that run is not run and {ends}: then post the "
            "prompt again"
        )
        self.run_id = run_id


_UNCERTAIN_ERROR = (
    "the database failed while this prompt was being stored, and the server answered that it "
    "was not taken: it was not run (post it again)"
)

CHAT_WORKSPACE_GONE = ("the chat's workspace must be there when it runs: create it again, or "
                       "start a new chat in an existing directory")
"""The remedy of a run whose chat's workspace is gone (``WorkspaceNotFoundError``), in the
words of the server's users, not the command line's (``--workspace``) or Python's."""

STOPPED_WAITING = "the server stopped while this request waited for an answer"
"""Why an ACP request is closed ``cancelled`` by ``restart``: the server stopping (graceful), or
its next start after a crash; the page says "Cancelled (the server restarted)" either way."""

SETTLE_WAIT = 10.0
"""How long a prompt posted again waits for the server to end its chat's uncertain run (the
database answering again) before it is refused as the chat's second active run."""


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
    fold: RunFold | None = None
    pending_events: int = 0
    pending_bytes: int = 0
    overflow: str | None = None
    ended_elsewhere: str | None = None  # the run's status, ended by another process meanwhile
    requests: RunRequests | None = None  # ACP chats: what the agent asks a person

    @property
    def run_id(self) -> str:
        """The run's id."""
        return str(self.run["id"])

    @property
    def chat_id(self) -> str:
        """The run's chat id."""
        return str(self.run["chat_id"])


class _Signal:
    """Wakes whoever waits (a flag, not a queue): each waiter checks its condition again.

    Example:
        >>> async def demo() -> bool:
        ...     s = _Signal()
        ...     waiter = asyncio.ensure_future(s.wait())
        ...     await asyncio.sleep(0); s.notify(); await waiter
        ...     return waiter.done()
        >>> asyncio.run(demo())
        True
    """

    __slots__ = ("_event",)

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def notify(self) -> None:
        """Wake every waiter."""
        self._event.set()

    async def wait(self) -> None:
        """Wait for the next :meth:`notify`."""
        self._event.clear()
        await self._event.wait()


def _event_size(event: AgentEvent) -> int:
    """What an event weighs in a run's buffer: its line's length (a floor for the rest)."""
    line = event.line
    return max(len(line), 64) if isinstance(line, (bytes, str)) else 256


class RunManager:
    """Every active run of this server process (see the module's documentation)."""

    def __init__(self, settings: ServerSettings, log: EventLog) -> None:
        self.settings = settings
        self.log = log
        self.store = log.store
        self._slots = asyncio.Semaphore(settings.max_concurrent_runs)
        self._active: dict[str, ActiveRun] = {}
        self._closing = False
        self.server_id = server_identity()
        self.acp_clients = AcpClients()  # ACP chats' shared `agent acp` processes
        self._settling: dict[str, asyncio.Task[None]] = {}  # chat id -> ending its uncertain run
        self._orphans = asyncio.Lock()  # one ending at a time of runs no task drives

    # ---- queries -----------------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        """``{"running": n, "queued": m}`` for this process."""
        running = sum(1 for a in self._active.values() if a.phase != "queued")
        return {"running": running, "queued": len(self._active) - running}

    def buffered(self) -> dict[str, int]:
        """Events read from agents and not yet stored (``{"events": n, "bytes": b}``)."""
        actives = self._active.values()
        return {
            "events": sum(a.pending_events for a in actives),
            "bytes": sum(a.pending_bytes for a in actives),
        }

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
            if (identity_alive(owner) if owner else False) is not False:
                # Owned by a live server process on this host, or by a server on another
                # host (whose own restart recovers it): not ours to touch.
                continue
            await self._interrupt_orphan(row)
            marked.append(str(row["id"]))
        return marked

    async def recover_if_owner_dead(self, run: dict[str, Any]) -> bool:
        """End ``run`` (a stored row) as :meth:`recover` does if it is active and its owner
        is an in-process server on this host that is known dead (another server on this
        database died: its runs are not left ``running`` until a restart). True if it did.

        Example:
            >>> import socket, tempfile
            >>> from cursor_agent_api.server.hub import Hub
            >>> from cursor_agent_api.server.log import EventLog
            >>> from cursor_agent_api.server.store import Store
            >>> async def demo() -> tuple[bool, bool, str]:
            ...     url = f"sqlite+aiosqlite:///{tempfile.mkdtemp()}/db.sqlite3"
            ...     store = Store(url)
            ...     await store.start()
            ...     log = EventLog(store, Hub(), 65536)
            ...     runs = RunManager(ServerSettings(token="t" * 16, database_url=url), log)
            ...     chat = await store.create_chat(workspace="/w", model=None, options={}, title="t")
            ...     dead = f"{socket.gethostname()}:999999999:1"  # this host, a pid no process has
            ...     mine, _ = await store.create_run(chat["id"], "hi", lambda r: run_record("queued", r),
            ...                                      server_id=runs.server_id)
            ...     left_alone = await runs.recover_if_owner_dead(mine)  # its server lives
            ...     await store.update_run(mine["id"], server_id=dead)
            ...     ended = await runs.recover_if_owner_dead(await store.get_run(mine["id"]))
            ...     status = (await store.get_run(mine["id"]))["status"]
            ...     await store.close()
            ...     return left_alone, ended, status
            >>> asyncio.run(demo())
            (False, True, 'interrupted')
        """
        return self._left_by_dead_owner(run) and await self._interrupt_orphan(run)

    async def end_dead_owners_runs(self) -> list[str]:
        """End, as :meth:`recover` does, the active runs whose owner, a server process of
        this host, is dead (another server on this database was killed: its runs are not
        left ``running`` until someone acts or it restarts); the ids ended. Reads the active
        runs of this host only (from the index ``ix_runs_status``, never the ended runs);
        each server calls it every ``dead_owner_check_interval`` s (:mod:`.dispatch.dead_owners`).

        Example:
            >>> import socket, tempfile
            >>> from cursor_agent_api.server.hub import Hub
            >>> from cursor_agent_api.server.log import EventLog
            >>> from cursor_agent_api.runtime.groups import pid_namespace
            >>> from cursor_agent_api.server.store import Store
            >>> async def demo() -> tuple[list[bool], list[str]]:
            ...     url = f"sqlite+aiosqlite:///{tempfile.mkdtemp()}/db.sqlite3"
            ...     store = Store(url)
            ...     await store.start()
            ...     log = EventLog(store, Hub(), 65536)
            ...     runs = RunManager(ServerSettings(token="t" * 16, database_url=url), log)
            ...     here = f"{socket.gethostname()}:999999999:1"  # this host, a pid no process has
            ...     owners = {"alive": runs.server_id, "dead": f"{here}@{pid_namespace()}",
            ...               "other-namespace": f"{here}@1", "elsewhere": "another-host:999999999:1"}
            ...     ids = {}
            ...     for name, owner in owners.items():
            ...         chat = await store.create_chat(workspace="/w", model=None, options={}, title=name)
            ...         run, _ = await store.create_run(chat["id"], "hi", lambda r: run_record("queued", r),
            ...                                         server_id=owner)
            ...         ids[run["id"]] = name
            ...     ended = await runs.end_dead_owners_runs()
            ...     again = await runs.end_dead_owners_runs()  # nothing left to do
            ...     status = {ids[i]: (await store.get_run(i))["status"] for i in ids}
            ...     await store.close()
            ...     return [[ids[i] for i in ended] == ["dead"], again == []], list(status.values())
            >>> asyncio.run(demo())  # alive, dead, other namespace, elsewhere
            ([True, True], ['queued', 'interrupted', 'queued', 'queued'])
        """
        ended: list[str] = []
        if self._closing:
            return ended
        for row in await self.store.local_runs(socket.gethostname()):
            if self._left_by_dead_owner(row, certain=True) and await self._interrupt_orphan(row):
                _said_dead_owner(row)
                ended.append(str(row["id"]))
        return ended

    def _left_by_dead_owner(self, run: dict[str, Any], *, certain: bool = False) -> bool:
        """``run`` is active and its owner, a server process of this host, is dead
        (``certain``: and of this PID namespace, :func:`.procs.identity_alive`)."""
        owner = run.get("server_id")
        return (
            run.get("status") in ACTIVE_STATUSES
            and str(run["id"]) not in self._active
            and bool(owner)
            and identity_alive(str(owner), certain=certain) is False
        )

    async def _interrupt_orphan(self, row: dict[str, Any]) -> bool:
        """A run whose server process is dead: stop what is left of its agent's group, close
        its open requests, record its end ``interrupted`` (False: it was over already)."""
        if row.get("pgid"):
            found = await stop_recorded_group(int(row["pgid"]), row.get("proc_start"))
            if found:
                logger.warning("stopped %d leftover process(es) of run %s", found, row["id"])
        await close_open_requests(self.log, str(row["chat_id"]), str(row["id"]), by="restart",
                                  reason=STOPPED_WAITING)
        chat_id, run_id = str(row["chat_id"]), str(row["id"])
        if row.get("turn") is None:
            # a run of a server from before the stored turn state: its state is the whole
            # fold of its records (the end below adds only what closing it changes)
            await refold_run(self.store, chat_id, run_id, self.log.max_field_bytes)
        fold = await load_run_fold(self.store, chat_id, run_id)
        return await self._finish(
            row,
            RunStatus.INTERRUPTED,
            error="the server stopped while this run was active",
            error_type="ServerRestart",
            closing=fold.close(),
            fold=fold,
        )

    async def shutdown(self) -> None:
        """Stop every run (through the client), mark it interrupted, wait for the writes."""
        self._closing = True
        for settle in list(self._settling.values()):  # the next start marks such a run interrupted
            settle.cancel()
        actives = list(self._active.values())
        for active in actives:
            active.shutdown = True
            await self._request_cancel(active)
        tasks = [a.task for a in actives if a.task is not None]
        if not tasks:
            await self.acp_clients.aclose()
            return
        grace = self.settings.shutdown_grace_seconds
        _done, pending = await asyncio.wait(tasks, timeout=grace)
        for task in pending:  # a client that did not stop in time
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=grace)
        await self.acp_clients.aclose()
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
        try:
            run = await self._create_run(chat, prompt)
        except ActiveRunError:
            # The 503 of an uncertain commit says "post again": the run this server is about
            # to end (the database answered a moment ago) does not refuse the prompt.
            settling = self._settling.get(str(chat["id"]))
            if settling is not None:
                await asyncio.wait({settling}, timeout=SETTLE_WAIT)
                if self._closing:  # the shutdown went through the active runs meanwhile
                    raise ServerClosingError("the server is shutting down") from None
            elif not await self._recover_dead_owners_run(str(chat["id"])):
                raise  # nor does the run of another server process on this database that died
            run = await self._create_run(chat, prompt)
        self.start(run, chat)  # nothing after the commit can fail: the run is driven
        return run_view(run)

    async def _recover_dead_owners_run(self, chat_id: str) -> bool:
        """The chat's active run, if its server process is known dead, ended as
        :meth:`recover` ends it (True: the chat takes a prompt again). Reads that run alone,
        not the chat's others (a long chat has tens of thousands)."""
        row = await self.store.chat_active_run(chat_id)
        if row is None or not self._left_by_dead_owner(row):
            return False
        # False: another server ended it meanwhile (the chat is free too)
        if await self._interrupt_orphan(row):
            _said_dead_owner(row)
        return True

    async def _create_run(self, chat: dict[str, Any], prompt: str) -> dict[str, Any]:
        run_id = new_id()
        once = AppendOnce()
        try:
            return await self.log.create_run(
                chat["id"], prompt, lambda r: run_record("queued", r), server_id=self.server_id,
                run_id=run_id, once=once,
            )
        except Exception as e:
            if not (once.uncertain and is_transient(e)):
                raise  # nothing was stored
            # The commit was sent and the answer lost: if it went through, the run must not
            # stay queued in no one's hands (the chat would refuse every prompt): ended.
            chat_id = str(chat["id"])
            task = asyncio.create_task(self._settle_uncertain(run_id), name=f"settle-{run_id}")
            self._settling[chat_id] = task
            task.add_done_callback(
                lambda t: self._settling.pop(chat_id, None) if self._settling.get(chat_id) is t else None
            )
            raise SubmitUncertainError(run_id, describe_error(e)) from e

    async def _settle_uncertain(self, run_id: str) -> None:
        """A run whose creation failed after its commit was sent: once the database answers,
        if it was stored, mark it failed (its client was told it was not taken)."""
        try:
            await self._retry(
                f"ending run {run_id}, whose creation failed",
                lambda: self._end_orphan(run_id, RunStatus.FAILED, _UNCERTAIN_ERROR, "StoreUnavailable"),
            )
        except Exception:
            logger.exception("could not end run %s, whose creation failed", run_id)

    async def _end_orphan(
        self, run_id: str, status: RunStatus, error: str | None, error_type: str | None
    ) -> bool:
        """End a run still ``queued`` that this server owns but no task of it drives (its
        creation failed after the commit was sent); ``False`` if there is no such run."""
        async with self._orphans:
            row = await self.store.get_run(run_id)
            if (
                row is None
                or run_id in self._active
                or row.get("status") != RunStatus.QUEUED.value
                or row.get("server_id") != self.server_id
            ):
                return False
            # a failure is the caller's to retry: the run's row says whether it went through
            await self._finish(row, status, error=error, error_type=error_type)
            return True

    def start(self, run: dict[str, Any], chat: dict[str, Any]) -> asyncio.Task[None]:
        """Execute and record a stored ``queued`` run of ``chat``: the agent's events
        go to the log, the end is recorded. Returns the run's task (it never raises).
        The one way a run is executed, here and on a worker (:mod:`..worker`).
        """
        active = ActiveRun(run=dict(run), chat=chat)
        active.fold = RunFold(active.chat_id, active.run_id)
        if (chat.get("options") or {}).get("transport") == "acp":
            active.requests = RunRequests(
                self.log, active.chat_id, active.run_id, self.settings.permission_timeout,
                on_ended=lambda: self._ended_elsewhere(active, active.stream),
            )
        self._active[active.run_id] = active
        task = asyncio.create_task(self._drive(active), name=f"run-{active.run_id}")
        active.task = task
        return task

    async def cancel(self, run_id: str, *, wait: float = 15.0) -> None:
        """Stop a queued or running run; waits up to ``wait`` s for it to be marked.

        Raises :class:`RunNotActiveError` when the run is not active here (its message says
        where it is: another server process on this database, which in-process servers do
        not relay to; a run whose server process is known dead is first ended as
        :meth:`recover_if_owner_dead` does), and :class:`~.dispatch.CancelNotAppliedError`
        when it is still active after ``wait`` s (the cancel stays requested: its group is
        stopped, SIGKILL after the grace); never with ``wait=0`` (the caller asks for the stop
        and does not wait for it).
        """
        active = self._active.get(run_id)
        if active is None:
            if await self._end_orphan(run_id, RunStatus.CANCELLED, None, None):
                return  # a queued run of this server that nothing drove
            row = await self.store.get_run(run_id)
            owner = row.get("server_id") if row is not None else None
            if row is not None and not await self.recover_if_owner_dead(row) and owner \
                    and owner != self.server_id and not RunStatus(row["status"]).final:
                # in-process servers sharing a database do not relay to one another (server.md)
                raise RunNotActiveError(
                    f"run {run_id} is run by another server process on this database ({owner}): "
                    "cancel it through that server (with --dispatch queue, any server reaches any run)"
                )
            raise RunNotActiveError(f"run {run_id} is not active on this server")
        active.cancel_requested = True
        await self._request_cancel(active)
        if active.requests is not None:
            await active.requests.close(by="cancel", reason="the run was cancelled", wait_writing=False)
        if active.task is not None:
            await asyncio.wait([active.task], timeout=wait)
            if wait > 0 and not active.task.done():  # wait=0: "stop it", nobody waits
                raise CancelNotAppliedError(run_id, str(active.run.get("status")), wait)

    async def _request_cancel(self, active: ActiveRun) -> None:
        if active.phase == "queued" and active.task is not None:
            active.task.cancel()  # lands on the semaphore wait: nothing started yet
        elif active.stream is not None:
            try:
                await cancel_stream(active.stream)
            except Exception:  # the process may already be gone
                logger.debug("cancel of run %s failed", active.run_id, exc_info=True)
        # "starting": _drive checks the flags as soon as the stream exists.

    async def answer(self, run_id: str, request_id: str, body: AnswerIn) -> dict[str, Any]:
        """A person's answer to a request of an active run (the answer record's payload).

        Raises :class:`~.requests.UnknownRequestError` (404),
        :class:`~.requests.AlreadyAnsweredError` (409) or ``ValueError`` (422: the body does
        not fit the request). A run that is over: its requests are looked up in the store.
        """
        active = self._active.get(run_id)
        if active is not None and active.requests is not None:
            return await active.requests.answer(request_id, body)
        await answered_or_unknown(self.store, run_id, request_id)
        raise UnknownRequestError(request_id)  # pragma: no cover - answered_or_unknown raises

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
        except CursorAgentError as e:  # expected (no agent binary…): whole, no traceback
            # The remedy in the command line's words: `serve`'s flags (--agent-binary, --simulate);
            # a chat's workspace gone: what the chat's user can do (serve has no --workspace).
            error = (f"{e.message} — {CHAT_WORKSPACE_GONE}" if isinstance(e, WorkspaceNotFoundError)
                     else e.cli_message())
            status, error_type = RunStatus.FAILED, type(e).__name__
            logger.warning("run %s failed: %s (%s)", active.run_id, " ".join(error.split()), error_type)
        except Exception as e:
            logger.exception("run %s failed", active.run_id)
            status, error, error_type = RunStatus.FAILED, describe_error(e), type(e).__name__
        finally:
            active.phase = "finishing"
            if active.requests is not None:  # nobody can answer them any more
                # the server stopping says so, as the next start does for a crash's (restart)
                by, reason = (("restart", STOPPED_WAITING)
                              if active.shutdown else ("run-end", "the run ended before an answer"))
                with contextlib.suppress(Exception):
                    await asyncio.shield(active.requests.close(by=by, reason=reason))
            try:
                await asyncio.shield(
                    self._finish_until_recorded(active, status, error=error, error_type=error_type, **extra)
                )
            finally:
                self._active.pop(active.run_id, None)
                if acquired:  # the slot is free once the run is recorded as over
                    self._slots.release()

    async def _finish_until_recorded(
        self,
        active: ActiveRun,
        status: RunStatus,
        *,
        error: str | None,
        error_type: str | None,
        **extra: Any,
    ) -> None:
        """Record the run's end, retrying with backoff until it is recorded.

        A transient failure is retried as it is; a write the database refuses for its
        data is retried once without the result fields (as ``failed``), then given up.
        During shutdown it gives up after ``shutdown_grace_seconds`` (the next start
        marks the run ``interrupted``).
        """
        delay = 0.05
        started = time.monotonic()
        warned = minimal = False
        fold = active.fold
        closing = fold.close() if fold is not None else ()  # once: a retry writes the same
        once = AppendOnce()  # an end whose commit went through is not recorded twice
        # the library's answers whose records the store missed go in with the end
        notes = active.requests.unrecorded_answers() if active.requests is not None else []
        while True:
            try:
                await self._finish(
                    active.run,
                    status,
                    error=error,
                    error_type=error_type,
                    active=active,
                    closing=closing,
                    fold=fold,
                    once=once,
                    notes=notes,
                    **extra,
                )
                if warned:
                    logger.warning("recorded the end of run %s after the store came back", active.run_id)
                return
            except Exception as e:
                reason = describe_error(e)
                if not is_transient(e):
                    logger.exception("could not record the end of run %s in full", active.run_id)
                    if minimal:  # refused even without the result fields: nothing more to try
                        logger.error("gave up recording the end of run %s: %s", active.run_id, reason)
                        return
                    minimal = True
                    extra = {}
                    notes = []  # (one of them may be what the database refuses)
                    status = RunStatus.FAILED
                    error = f"the server could not record the end of this run in full: {reason}"
                    error_type = type(e).__name__
                    continue
                if self._closing and time.monotonic() - started >= self._end_retries_within():
                    # one line: what was not recorded, and why
                    logger.error("the end of run %s (%s) was not recorded at shutdown: %s",
                                 active.run_id, RunStatus(status).value, reason)
                    return
                if not warned:
                    warned = True
                    logger.warning(
                        "could not record the end of run %s (%s); retrying until it is recorded",
                        active.run_id,
                        reason,
                    )
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.settings.store_retry_max_delay)

    def _end_retries_within(self) -> float:
        """Seconds a run's end is retried at shutdown (the store failing), from its first
        attempt: the shutdown's grace (a worker: fewer, :class:`~.worker.Worker`)."""
        return self.settings.shutdown_grace_seconds

    async def _retry(self, what: str, op: Callable[[], Awaitable[T]]) -> T:
        """``op()``, retried with backoff while it fails transiently."""
        delay = 0.05
        warned = False
        while True:
            try:
                return await op()
            except Exception as e:
                if not is_transient(e):
                    raise
                if not warned:
                    warned = True
                    logger.warning("%s failed (%s); retrying", what, describe_error(e))
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.settings.store_retry_max_delay)

    async def _execute(self, active: ActiveRun) -> tuple[RunStatus, str | None, str | None, dict[str, Any]]:
        chat = active.chat
        started = now_ms()
        active.run.update(status="running", started_ms=started)

        async def mark_running(conn: Any, _recs: list[EventRecord]) -> None:
            await self.store.set_run(conn, active.run_id, status="running", started_ms=started)

        once = AppendOnce()  # a commit that failed but went through is not written twice
        try:
            await self._retry(
                f"recording the start of run {active.run_id}",
                lambda: self.log.append(
                    active.chat_id,
                    [run_record("running", active.run)],
                    before=mark_running,
                    purpose="run_start",
                    once=once,
                    # only while it is active: a run another process ended meanwhile (a cancel,
                    # a sweep, a surviving server) is not set running again
                    active_run=active.run_id,
                ),
            )
        except RunEndedError:
            await self._ended_elsewhere(active, None)
            return RunStatus.FAILED, f"the run was already {active.ended_elsewhere}", None, {}
        if active.cancel_requested or active.shutdown:
            return self._stopped_status(active), self._stopped_error(active), None, {}
        fresh = await self._retry("reading the chat", lambda: self.store.get_chat(active.chat_id))
        launch = AgentLaunch(
            prompt=str(active.run["prompt"]),
            workspace=str(chat["workspace"]),
            model=(fresh or chat).get("model"),
            # the chat as stored after the run's commit: a PATCH that landed while the prompt
            # was posted (force revoked) is in it; later ones are refused while the run is active
            options=dict((fresh or chat).get("options") or {}),
            resume=(fresh or chat).get("session_id"),
            steering=RunSteering(active.requests) if active.requests is not None else None,
            clients=self.acp_clients,
        )
        stream = await open_stream(self.settings, launch)
        active.stream = stream
        active.phase = "streaming"
        try:
            if active.cancel_requested or active.shutdown or active.ended_elsewhere is not None:
                await cancel_stream(stream)
            if active.ended_elsewhere is None:
                await self._record_pid(active)
            if active.ended_elsewhere is None:  # (its pid refused: the run is over)
                await self._pump(active, stream)
            if active.ended_elsewhere is not None:
                pass  # stopped (_ended_elsewhere); what it wrote since is not stored
            elif active.stream_error is not None:
                await cancel_stream(stream)  # what the agent writes next could not be stored
            elif not (active.cancel_requested or active.shutdown):
                with contextlib.suppress(Exception):
                    await wait_stream(stream)
        finally:
            with contextlib.suppress(Exception):
                await asyncio.shield(close_stream(stream))
        result = stream.result
        extra: dict[str, Any] = {}
        if active.ended_elsewhere is not None:  # _finish will not record it: the run is over
            return RunStatus.FAILED, f"the run was already {active.ended_elsewhere}", None, extra
        if active.overflow is not None:
            if result is not None:
                extra = {"exit_code": result.exit_code}
            return RunStatus.FAILED, active.overflow, "StoreUnavailable", extra
        err = active.stream_error
        if err is not None and result is not None and not (active.cancel_requested or active.shutdown):
            return RunStatus.FAILED, f"reading the agent's events failed: {err}", type(err).__name__, \
                {"exit_code": result.exit_code}
        if result is None:
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
        if result.success and not result.cancelled:
            # The agent's result is stored: the run is what it says, whatever stopped the
            # process after it (a cancel, a shutdown: they only ended the process).
            return RunStatus.SUCCEEDED, None, None, extra
        if active.cancel_requested or active.shutdown or result.cancelled:
            return self._stopped_status(active), self._stopped_error(active), None, extra
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
        try:
            pgid = os.getpgid(pid)
        except ProcessLookupError:
            pgid = pid
        start = process_start_time(pgid)
        active.run.update(pid=pid, pgid=pgid, proc_start=start)
        try:
            # only while it is active: not into the row of a run another process ended
            recorded = await self.store.update_run(
                active.run_id, only=ACTIVE_STATUSES, pid=pid, pgid=pgid, proc_start=start
            )
        except Exception as e:
            if not is_transient(e):
                raise
            return  # tried again after the next batch
        active.pid_recorded = True
        if not recorded:
            await self._ended_elsewhere(active, stream)

    async def _pump(self, active: ActiveRun, stream: AgentStream) -> None:
        """Read the stream into a buffer (producer) while a writer commits it (see the module doc)."""
        settings = self.settings
        pending: deque[tuple[AgentEvent, Changes, int]] = deque()
        changed = _Signal()  # the producer and the writer wake each other (one event loop)
        state = {"reading": True, "retrying": False}

        def behind() -> bool:
            # The store keeps up but has not caught up yet: wait before taking more.
            return bool(pending) and (
                active.pending_bytes >= settings.batch_max_bytes
                or active.pending_events >= 2 * settings.batch_max_events
            )

        def overflowing(extra: int) -> bool:
            return bool(pending) and (
                active.pending_bytes + extra > settings.store_buffer_bytes
                or active.pending_events >= settings.store_buffer_events
            )

        async def produce() -> None:
            # each event with what it changed: the stream folded it, the server stores that
            events = stream.with_changes()
            try:
                while True:
                    # Wait *before* taking the next event: it stays in the client, which
                    # then stops reading the agent's pipe (backpressure, memory flat).
                    while behind() and not state["retrying"]:
                        await changed.wait()
                    try:
                        event, changes = await events.__anext__()
                    except StopAsyncIteration:
                        return
                    size = _event_size(event)
                    if state["retrying"] and overflowing(size):
                        del event, changes
                        await self._overflow(active, stream)
                        return
                    pending.append((event, changes, size))
                    active.pending_events += 1
                    active.pending_bytes += size
                    changed.notify()
                    del event, changes
            except Exception as e:
                active.stream_error = e
            finally:
                state["reading"] = False
                changed.notify()
                with contextlib.suppress(Exception):
                    await events.aclose()

        producer = asyncio.create_task(produce(), name=f"read-{active.run_id}")
        try:
            while True:
                while not pending and state["reading"]:
                    await changed.wait()
                if not pending:
                    break
                batch: list[tuple[AgentEvent, Changes]] = []
                size = 0
                max_events, max_bytes = settings.batch_max_events, settings.batch_max_bytes
                for event, changes, n in pending:
                    if batch and (len(batch) >= max_events or size + n > max_bytes):
                        break
                    batch.append((event, changes))
                    size += n
                del event, changes  # the loop's last ones: not kept alive while the client reads on
                try:
                    await self._write_retrying(active, batch, state, changed)
                except RunEndedError:
                    await self._ended_elsewhere(active, stream)
                    return
                count = len(batch)
                del batch  # let the stored events go before the client reads on
                for _ in range(count):
                    pending.popleft()
                active.pending_events -= count
                active.pending_bytes -= size
                changed.notify()
                release_events(stream, count)
                if not active.pid_recorded:
                    await self._record_pid(active)
                    if active.ended_elsewhere is not None:
                        return  # its pid was refused: the run is over
        finally:
            if not producer.done():
                producer.cancel()
            await asyncio.gather(producer, return_exceptions=True)
            active.pending_events = active.pending_bytes = 0

    async def _write_retrying(
        self,
        active: ActiveRun,
        batch: list[tuple[AgentEvent, Changes]],
        state: dict[str, bool],
        changed: _Signal,
    ) -> None:
        """Commit ``batch`` (its events with the changes the stream's fold returned: folded
        once, by the client); while the store fails transiently, retry it with backoff."""
        assert active.fold is not None
        folded = active.fold.take(batch)
        once = AppendOnce()  # a try whose commit went through is not written again
        delay = 0.05
        since: float | None = None
        while True:
            try:
                await self._write_batch(active, folded, once)
            except Exception as e:
                if not is_transient(e):
                    raise
                if since is not None and self._closing \
                        and time.monotonic() - since >= self._end_retries_within():
                    # shutting down: given up as the run's end is (_finish_until_recorded)
                    logger.error("run %s: %d event(s) were not recorded at shutdown: %s",
                                 active.run_id, len(batch), describe_error(e))
                    return
                if since is None:
                    since = time.monotonic()
                    logger.warning(
                        "run %s: could not store %d event(s) (%s); keeping them in memory and retrying",
                        active.run_id,
                        len(batch),
                        describe_error(e),
                    )
                    state["retrying"] = True
                    changed.notify()
                    if active.stream is not None:
                        set_eager(active.stream, True)
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.settings.store_retry_max_delay)
                continue
            if since is not None:
                logger.warning(
                    "run %s: the store is back after %.1f s; the buffered events are stored",
                    active.run_id,
                    time.monotonic() - since,
                )
                state["retrying"] = False
                changed.notify()
                if active.stream is not None:
                    set_eager(active.stream, False)
            return

    async def _ended_elsewhere(self, active: ActiveRun, stream: AgentStream | None) -> None:
        """The run is over in the store while this process handles it: another process ended
        it (an API server's sweep: this worker looked lost; a cancel of the queued run; a
        surviving server ending a dead owner's run). A write of it was refused (its start, an
        event batch, its pid, a request's record: each goes through only while the run is
        active): nothing more of it is written, and its agent is stopped now (``stream``),
        or never started (``None``: its start was refused). Its end is not recorded either
        (:meth:`_finish`: only an active run's end is). Once per run."""
        if active.ended_elsewhere is not None:
            return  # said and done already
        status = await self._status_of(active.run_id)
        active.ended_elsewhere = status
        logger.warning(
            "run %s is already %s (ended by another process): %s",
            active.run_id,
            status,
            "its agent is not started" if stream is None
            else "its agent's output from here on is not stored; stopping the agent",
        )
        if stream is None:
            return  # _execute stops a stream opened meanwhile (ended_elsewhere is set)
        try:
            await cancel_stream(stream)
        except Exception:  # the process may already be gone
            logger.debug("cancel of run %s failed", active.run_id, exc_info=True)

    async def _overflow(self, active: ActiveRun, stream: AgentStream) -> None:
        """The store is failing and the run's buffer is full: stop the agent, fail the run."""
        s = self.settings
        health = self.store.health
        since = health.degraded_since_ms
        for_s = f" for {(now_ms() - since) / 1000:.0f} s" if since is not None else ""
        active.overflow = (
            f"the database has been unavailable{for_s} ({health.reason or 'unknown reason'}) and "
            f"this run's buffer of {active.pending_events} event(s), {active.pending_bytes} bytes, "
            f"is full (limits: store_buffer_events={s.store_buffer_events}, "
            f"store_buffer_bytes={s.store_buffer_bytes}): the agent was stopped. The buffered "
            "events are stored once the database is back; the agent's later output was not kept."
        )
        logger.error("run %s: %s", active.run_id, active.overflow)
        try:
            await cancel_stream(stream)
        except Exception:
            logger.debug("cancel of run %s failed", active.run_id, exc_info=True)

    async def _write_batch(self, active: ActiveRun, folded: FoldedBatch, once: AppendOnce) -> None:
        """Commit a folded batch (:func:`.turns.append_folded`: the records and the turn state)."""
        recs = await append_folded(self.log, folded, once=once)
        if active.first_seq is None:
            active.first_seq = recs[0].seq
        if active.session_id is None and active.fold is not None:
            active.session_id = active.fold.session_id

    async def _finish(
        self,
        run: dict[str, Any],
        status: RunStatus,
        *,
        error: str | None = None,
        error_type: str | None = None,
        active: ActiveRun | None = None,
        closing: Changes | None = None,
        fold: RunFold | None = None,
        once: AppendOnce | None = None,
        notes: Sequence[NewRecord] = (),
        **extra: Any,
    ) -> bool:
        """Record the run's end (``notes``, then its final record, its fields) and close its
        turn's state with ``closing`` (what :meth:`RunFold.close` changed), in one
        transaction. False if the run was over already (nothing recorded)."""
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
        if fold is not None:
            values["turn"] = fold.turn()
        final = {**run, **values}
        run_id = str(run["id"])
        store = self.store

        limit = self.log.max_field_bytes

        async def before(conn: Any, recs: list[EventRecord]) -> None:
            # Only while the run is active: a late end (a worker's run, after an API server's
            # sweep declared the worker lost) never overwrites a final status.
            if not await store.end_run(conn, run_id, last_seq=recs[-1].seq, **values):
                raise _RunOverError(run_id)
            if closing and fold is not None:
                batch = FoldedBatch(fold.chat_id, run_id, [], [closing], fold.errors, fold.turn())
                await write_turn(store, conn, batch, recs[-1:], limit)  # (the end's own record)

        try:
            await self.log.append(
                str(run["chat_id"]),
                [*notes, run_record(status.value, final)],
                before=before,
                purpose="run_end",
                changes=[*([()] * len(notes)), closing or ()],
                once=once,
            )
        except _RunOverError:
            logger.warning(
                "run %s ended %s here, but it was already over (%s): its end is not recorded",
                run_id,
                status.value,
                await self._status_of(run_id),
            )
            return False
        run.update(values)
        return True

    async def _status_of(self, run_id: str) -> str:
        with contextlib.suppress(Exception):
            row = await self.store.get_run(run_id)
            if row is not None:
                return str(row["status"])
        return "unknown"


def _said_dead_owner(row: dict[str, Any]) -> None:
    logger.warning(
        "run %s of chat %s was left active by server process %s, which is gone: marked interrupted",
        row["id"], row["chat_id"], row.get("server_id"),
    )


async def answered_or_unknown(store: Any, run_id: str, request_id: str) -> None:
    """For a request of a run not active here: ``AlreadyAnsweredError`` (409) when the
    store has it (every request of a finished run has its answer), else
    ``UnknownRequestError`` (404)."""
    for pair in pair_requests(await request_records(store, [run_id])):
        if pair["request"].get("request_id") == request_id:
            if pair["answer"] is None:  # waits in another process (a worker): not answerable here
                raise AlreadyAnsweredError(
                    f"request {request_id!r} waits in the process that runs its run (a worker, "
                    "or another API server on this database): it cannot be answered through "
                    "this server"
                )
            raise AlreadyAnsweredError(f"request {request_id!r} already has its answer")
    raise UnknownRequestError(request_id)
