"""``cursor-agent-api worker``: run the agents of ``serve --dispatch queue`` on this machine.

The worker takes runs from the job queue in the server's PostgreSQL database, runs the
agent for each (up to ``--concurrency`` at once) in a workspace under its ``--root``
directories, and writes the events straight into the database (see
``docs/distributed.md``). It needs the database URL and, for the real agent, Cursor's
credentials (``CURSOR_API_KEY`` in its environment, passed on to the agent); it serves
nothing and listens on no port. On stdout it prints one line once it takes jobs (a line
that cannot be written, stdout a full disk, stops it as ``serve``: one line, exit 1; a
closed pipe, quietly); logs go to stderr, written off the event loop as ``serve``'s.
SIGTERM, Ctrl-C or SIGHUP (not under ``nohup``): no new job is taken, runs that end within
``--shutdown-grace`` seconds finish, the rest are stopped and marked ``interrupted``; a
second SIGTERM or Ctrl-C stops them at once. Once its cleanup is over, it says
``cursor-agent-api worker NAME stopped``, then dies from the first signal that stopped it
(as every command: a shell loop around it stops; an error after that signal, its database
lost during the drain or its stdout lost, is said first, in place of that line); a signal
in that last step (its log's last lines written, that line) is held until it is said, then
ends the worker by that signal, whichever of its threads the kernel gave it to.

The database URL carries a password: give it in the environment
(``CURSOR_AGENT_API_DATABASE_URL``), not in the command's arguments, which every user of
the machine can read.

Without ``--simulate`` the agent must be there when the worker starts, found as each run
finds it (on ``PATH``, or ``--agent-binary``): else the worker refuses to start (exit 2)
rather than take runs it would fail. A database it cannot open is said in one line; the
advice to start it again is given only when the database did not answer (a wrong password,
no such database or a schema too new are said with their own remedy, as ``serve`` says them).

Example:
    $ export CURSOR_AGENT_API_DATABASE_URL=postgresql+asyncpg://u:pw@db/app
    $ cursor-agent-api worker --root /srv/ws
    cursor-agent-api worker host-4242 taking runs from queues runs, worker.host-4242
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
import threading
from pathlib import Path

import click

from ..errors import AgentNotFoundError
from ..extras import QUEUE_MODULES, SERVER_MODULES, first_missing, needs_extra
from ..server_options import heartbeat_problem
from ..signal_exit import (
    SignalExit,
    SignalWake,
    cancelled_by_signals,
    held_signals,
    say_error,
    stopping,
    without_ending_signals,
)
from .log_output import LogLines
from .runner_options import Seconds, check_simulate_or_binary, parse_agent_env, runner_options
from .serve import (
    argv_secret_warnings,
    freeze_start_up_objects,
    refuse_absent_server_extra,
    refuse_database_url,
)
from .superuser import agents_read_secrets_warning
from .typed_path import TypedPath


@click.command("worker")
@click.option(
    "--database-url",
    envvar="CURSOR_AGENT_API_DATABASE_URL",
    required=True,
    help="The API servers' PostgreSQL database (postgresql+asyncpg://…). "
    "[env: CURSOR_AGENT_API_DATABASE_URL]",
)
@click.option(
    "--concurrency",
    default=4,
    show_default=True,
    type=click.IntRange(1, 1000),
    help="Runs at the same time on this worker.",
)
@click.option(
    "--queue",
    "queues",
    multiple=True,
    help="A shared queue to take runs from (repeatable; default: runs). The worker also "
    "takes the follow-ups of its own chats from its affinity queue, worker.NAME.",
)
@click.option(
    "--name",
    default=None,
    help="This worker's name, unique in the cluster (default: HOST-PID). A stable name "
    "keeps a restarted worker's chats on it.",
)
@click.option(
    "--heartbeat",
    type=Seconds(min=0.1),
    default=10.0,
    show_default=True,
    help="Seconds between this worker's heartbeats, at most 30 (it counts as running for a "
    "minute after its last one); keep it well under the API servers' --stalled-after.",
)
@click.option(
    "--shutdown-grace",
    type=Seconds(0.0, 86400.0),
    default=10.0,
    show_default=True,
    help="On SIGTERM or Ctrl-C: seconds runs may take to finish before they are stopped "
    "(interrupted); a second signal stops them at once.",
)
@click.option(
    "--worktrees",
    type=TypedPath(file_okay=False),
    default=None,
    help="Give each chat whose workspace is a git repository its own worktree and branch "
    "(cursor-agent/CHAT) in this directory. Worktrees are never removed automatically.",
)
@runner_options
def worker(
    database_url: str,
    roots: tuple[str, ...],
    concurrency: int,
    queues: tuple[str, ...],
    name: str | None,
    simulate: bool,
    agent_binary: str | None,
    agent_env: tuple[str, ...],
    pass_env: tuple[str, ...],
    run_timeout: float | None,
    idle_timeout: float | None,
    heartbeat: float,
    shutdown_grace: float,
    worktrees: str | None,
    log_level: str,
) -> None:
    """Run agents for API servers started with 'serve --dispatch queue'."""
    from .console import CliUsageError

    # What the options' text tells is refused before the server's imports (a second of CPU)
    refuse_absent_server_extra("the worker")
    from ..database_urls import is_postgres
    from .console import given_as

    try:  # any other database first: not SQLite's advice (a form the worker refuses too)
        postgres = is_postgres(database_url)
    except Exception:  # not a URL at all
        postgres = False
    if not postgres:
        raise CliUsageError(
            f"{given_as('database_url', '--database-url')} must name the API servers' PostgreSQL "
            "database, postgresql+asyncpg://USER@HOST/DB (the job queue lives in it)"
        )
    refuse_database_url(database_url)
    problem = heartbeat_problem(heartbeat)
    if problem is not None:
        raise CliUsageError(problem)
    check_simulate_or_binary(simulate, agent_binary)
    extra_env = parse_agent_env(agent_env, pass_env)
    for warning in argv_secret_warnings(None, database_url):
        click.echo(warning, err=True)
    if not simulate:  # else every run it takes would fail (resolved as each run resolves it)
        # (from the options alone, before the server's imports: a refusal at once, not
        # after a second of CPU; the server's runs remove only CURSOR_AGENT_API_* and libpq's variables
        # from the agent's environment, none of which is PATH)
        from ..config import DEFAULT_AGENT_BINARY
        from ..runtime.argv import unfound_binary

        unfound = unfound_binary(DEFAULT_AGENT_BINARY if agent_binary is None else agent_binary, extra_env)
        if unfound is not None:
            raise CliUsageError(f"cannot start the agent: {unfound!r} was not found — "
                                f"{AgentNotFoundError.cli_remedy}")
    try:
        from ..server.dispatch.jobs import DEFAULT_QUEUE, worker_queue
        from ..server.non_dumpable import make_non_dumpable
        from ..server.settings import ServerSettings
        from ..server.worker import WorkerSettings, default_worker_name, serve_worker
    except ImportError as e:  # pragma: no cover - depends on the installation
        raise click.ClickException(
            f"the worker needs the 'server' and 'postgres' extras ({e.name} is missing): "
            "pip install 'cursor-agent-api[server,postgres]'"
        ) from None
    missing = first_missing(SERVER_MODULES)
    if missing is not None:
        raise click.ClickException(needs_extra("the worker", "server", missing))
    missing = first_missing(QUEUE_MODULES)
    if missing is not None:
        raise click.ClickException(needs_extra("the worker", "postgres", missing))
    log_lines = LogLines(sys.stderr)  # the loop queues its log lines; a thread writes them
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        handlers=[log_lines.handler()])
    logging.captureWarnings(True)
    logging.getLogger("alembic").setLevel(logging.WARNING)
    logging.getLogger("procrastinate").setLevel(max(logging.WARNING, logging.getLevelName(log_level.upper())))
    make_non_dumpable()  # its agents (this user's) cannot read the database URL in /proc/PID/environ
    from .console import current_folder
    server = ServerSettings(
        database_url=database_url,
        roots=tuple(Path(r).resolve() for r in roots) or (current_folder().resolve(),),
        agent_binary=agent_binary,
        agent_env=extra_env,
        simulate=simulate,
        max_concurrent_runs=concurrency,
        run_timeout=run_timeout,
        idle_timeout=idle_timeout,
        shutdown_grace_seconds=shutdown_grace,
    )
    settings = WorkerSettings(
        server=server,
        name=name or default_worker_name(),
        concurrency=concurrency,
        queues=queues or (DEFAULT_QUEUE,),
        heartbeat=heartbeat,
        shutdown_grace=shutdown_grace,
        worktrees=Path(worktrees).resolve() if worktrees else None,
    )
    shown = ", ".join([*settings.queues, worker_queue(settings.name)])
    label = " (simulated agents)" if simulate else ""

    lost: list[OSError] = []
    started: list[bool] = []  # (once it takes jobs)

    def ready() -> None:
        started.append(True)
        frozen = freeze_start_up_objects()
        logging.getLogger("cursor_agent_api.worker").debug(
            "start-up objects frozen: %d (out of the garbage collector's walks)", frozen)
        readable = agents_read_secrets_warning("its database URL")
        if readable is not None:  # root's agents read it, not dumpable as it is
            click.echo(readable, err=True)
        try:
            click.echo(f"cursor-agent-api worker {settings.name}{label} taking runs from queues "
                       f"{shown}", nl=True)
        except OSError as exc:  # stdout a full disk, a closed pipe: the worker stops cleanly
            lost.append(exc)
            raise

    # From the end of the worker's cleanup (its own signal handling over) to its last line:
    # a signal is held, then ends it (it had its default effect: the last lines were lost)
    teardown = contextlib.ExitStack()
    stopped_by: list[signal.Signals] = []  # the first signal that stopped it: it dies from it

    # Whichever of its threads the kernel gives a signal to, the main thread takes it at once
    wake = SignalWake()  # (it wakes the loop: asyncio's teardown waits there for threads)

    async def work() -> None:
        loop = asyncio.get_running_loop()
        wake.watch(loop)
        try:
            # A Ctrl-C, SIGTERM or SIGHUP before the worker's own handlers (as its database
            # connects) cancels its start, between two callbacks (no traceback); what it
            # opened is closed, then it dies from it; a second one ends it at once
            with cancelled_by_signals("cursor-agent-api worker"):
                await serve_worker(settings, on_ready=ready, on_signal=stopped_by.append)
        finally:
            teardown.enter_context(held_signals())

    given = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is threading.main_thread() and given is not None:
        # SIGINT's handler given back as it was before (held_signals, entered in the loop,
        # would put back asyncio.run's, of a finished run), then the stopping program's
        teardown.callback(stopping)
        teardown.callback(signal.signal, signal.SIGINT, given)
    with teardown:
        with without_ending_signals():  # (its writer, joined below, never takes them)
            log_lines.start()
        failed: Exception | None = None
        try:
            asyncio.run(work())
        except KeyboardInterrupt:  # a Ctrl-C before the worker takes signals (its start)
            raise SignalExit(signal.SIGINT) from None  # as every command's Ctrl-C
        except Exception as e:
            if lost and e is lost[0]:  # as serve: one line, exit 1 (a closed pipe: click, quietly)
                failed = _output_failure(e)
            else:
                failed = click.ClickException(stopped_message(e, database_url, started=bool(started)))
            if not stopped_by:
                raise failed from None
        finally:
            wake.close()
            log_lines.close()  # the last lines written (a stalled reader: a few seconds at most)
        if failed is not None:  # stopped by a signal, then by an error (its drain's database
            say_error(failed)  # lost): the error said, then it dies from the signal, below
        elif started:
            with contextlib.suppress(OSError):  # (stdout closed by now: nothing to say it on)
                click.echo(f"cursor-agent-api worker {settings.name} stopped")
    if stopped_by:  # (one held in the teardown, a later one, ended it above)
        raise SignalExit(stopped_by[0])


def _output_failure(lost: Exception) -> Exception:
    """What stops the worker when its stdout failed: one line (``writing_output``'s), or
    the closed pipe itself, which click ends quietly."""
    from .console import writing_output

    try:
        with writing_output():
            raise lost
    except Exception as said:
        return said


SUPERVISE = ("start it again once the database answers; run workers under a supervisor that "
             "restarts them (docs/distributed.md)")
"""What to do when a worker stopped because its database did not answer (for now)."""


def stopped_message(error: BaseException, database_url: str, *, started: bool) -> str:
    """The worker's last line when ``error`` stopped it: the database (its password hidden)
    and what it said, when it is the database that failed — at the start (before any job was
    taken) or later (Procrastinate's worker stops when it cannot reach it). Then, when the
    database did not answer (for now: :func:`~..server.store.errors.answers_later`),
    what to do; a lasting cause (a wrong password, no such database, a schema too new) is
    said as ``serve`` says it, with its own remedy when it has one. Any other error is named
    as is.

    Example:
        >>> url = "postgresql+asyncpg://me:secret@db/app"
        >>> stopped_message(TimeoutError(), url, started=False)  # doctest: +ELLIPSIS
        'cannot open the database postgresql+asyncpg://me:***@db/app: TimeoutError; start it again...'
        >>> stopped_message(ConnectionResetError(104, "Connection reset by peer"), url, started=True)
        ... # doctest: +ELLIPSIS
        'the worker stopped: its database postgresql+asyncpg://me:***@db/app failed: [Errno 104] ...'
        >>> from cursor_agent_api.server.store.errors import SchemaTooNewError
        >>> stopped_message(SchemaTooNewError("the database was upgraded by a newer "
        ...                 "cursor-agent-api: upgrade cursor-agent-api"), url, started=False)
        ... # doctest: +ELLIPSIS
        'cannot open the database ...: the database was upgraded ... (SchemaTooNewError)'
        >>> stopped_message(ValueError("no such queue"), url, started=True)
        'the worker stopped: no such queue (ValueError)'
    """
    from ..database_urls import shown_url
    from ..server.dispatch.worker_logs import is_database_error
    from ..server.store import describe_error
    from ..server.store.errors import answers_later
    from ..server.worker import WorkerLostError

    if isinstance(error, WorkerLostError):  # (its own words, whole whatever the name's length)
        return f"the worker stopped: {error} (WorkerLostError)"
    what, shown = describe_error(error), shown_url(database_url)
    then = f"; {SUPERVISE}" if answers_later(error) else ""
    if not started:
        return f"cannot open the database {shown}: {what}{then}"
    if is_database_error(error):
        return f"the worker stopped: its database {shown} failed: {what}{then}"
    return f"the worker stopped: {what}"
