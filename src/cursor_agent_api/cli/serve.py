"""``cursor-agent-api serve``: the HTTP/WebSocket server (FastAPI on uvicorn).

Binds 127.0.0.1 by default. At start it prints, once, on stdout: the link to
open, with a one-time login code (it signs one browser in, then it is dead, so
the browser's history keeps no password; when stdout is not a terminal, a log,
it works for 10 minutes: :func:`open_lines`), and the token for program clients
when it was generated here. Everything else (logs) goes to stderr, with tokens
and codes redacted, written by a thread of its own so that a stderr nobody reads never
blocks the event loop (:mod:`.log_output`; the lines at start are written before the server
answers anything). ``--port 0`` picks a free port (the printed URL tells which).

Example:
    $ cursor-agent-api serve --simulate
    cursor-agent-api server (simulated agents) at http://127.0.0.1:8765
    Open: http://127.0.0.1:8765/?code=Xq3…
    Token: 3f9c…
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import gc
import logging
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .. import __version__
from ..extras import QUEUE_MODULES, SERVER_MODULES, first_absent, first_missing, needs_extra
from ..server_options import LONGEST_STALLED_AFTER, LOOPBACK_HOSTS, WILDCARD_HOSTS, check_token
from ..signal_exit import (
    ENDING,
    SignalExit,
    SignalWake,
    cancelled_by_signals,
    die_now,
    running_as_program,
    say_at_once,
    without_ending_signals,
)
from .log_output import LogLines
from .runner_options import Seconds, check_simulate_or_binary, parse_agent_env, runner_options

if TYPE_CHECKING:  # (the server extra may be missing: imported where serve starts)
    from ..server.auth import Auth
    from ..server.settings import ServerSettings


def serve_database_url(*, simulate: bool) -> str:
    """The default database of ``serve``: ``server.sqlite3`` in the tool's home, and
    ``server-simulated.sqlite3`` beside it for ``--simulate`` (simulated chats kept apart)."""
    from ..database_urls import default_database_url

    return default_database_url("server-simulated.sqlite3" if simulate else "server.sqlite3")


def listen_socket(host: str, port: int) -> socket.socket:
    """A bound, listening TCP socket with ``TCP_NODELAY`` (raises ``OSError``).

    The socket is made with ``IPPROTO_TCP`` named: asyncio sets ``TCP_NODELAY`` on the
    connections it accepts only for such sockets. Without it, Nagle's algorithm and
    delayed ACKs add about 40 ms to every request after the first on a kept-alive
    connection. The option is set on the listening socket too (Linux copies it to the
    accepted ones).

    Example:
        >>> s = listen_socket("127.0.0.1", 0)
        >>> s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        True
        >>> s.close()
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def exposure_warnings(host: str) -> list[str]:
    """What ``serve`` says on stderr before it listens on ``host``: nothing for loopback.

    A wildcard bind's ``Open:`` link names the loopback address (the one the server accepts
    as it is, :attr:`~cursor_agent_api.server.settings.ServerSettings.base_url`); the second
    line says what another machine needs. The allowlist gets no wildcard: a Host header
    is checked against names given, never against "any".

    Example:
        >>> exposure_warnings("127.0.0.1")
        []
        >>> for line in exposure_warnings("0.0.0.0"): print(line)  # doctest: +ELLIPSIS
        listening on 0.0.0.0: anyone who can reach it and has the token can run the agent ...
        the Open: link is for this machine (127.0.0.1); from another one, start with --allow-host NAME ...
    """
    if host in LOOPBACK_HOSTS:
        return []
    lines = [f"listening on {host}: anyone who can reach it and has the token can run "
             "the agent (shell commands included) on this machine"]
    if host in WILDCARD_HOSTS:
        loopback = "[::1]" if host == "::" else "127.0.0.1"
        lines.append(f"the Open: link is for this machine ({loopback}); from another one, start "
                     "with --allow-host NAME (the name or address it is reached by: any other "
                     "Host is refused, 403)")
    return lines


def open_lines(settings: ServerSettings, auth: Auth, terminal: bool) -> list[str]:
    """``serve``'s ``Open:`` line: the link with a new one-time sign-in code, and, when stdout is
    not a ``terminal``, a second line for the code's lifetime.

    On a terminal the code is good until it is used. Elsewhere stdout is a log (a file, the
    journal) that others may read later: the code works for ``settings.printed_code_seconds``
    only, and the second line says so and how to get another link.

    Example:
        >>> from cursor_agent_api.server.auth import Auth
        >>> from cursor_agent_api.server.settings import ServerSettings
        >>> from cursor_agent_api.server.store import Store
        >>> settings = ServerSettings(token="a" * 16, port=1)
        >>> now = [0.0]
        >>> auth = Auth(settings, Store("sqlite+aiosqlite://"), code_clock=lambda: now[0])
        >>> opened, note = open_lines(settings, auth, terminal=False)
        >>> print(note)  # doctest: +ELLIPSIS
          (stdout is not a terminal: the link works once, for 10 minutes; a new one: POST ...)
        >>> now[0] = 600.0; auth.redeem_code(opened.split("code=")[1])
        False
    """
    if terminal:
        return [f"Open: {settings.login_url(auth.issue_code())}"]
    seconds = settings.printed_code_seconds
    code = auth.issue_code(ttl_seconds=seconds)
    lifetime = f"{seconds / 60:g} minutes" if seconds % 60 == 0 else f"{seconds:g} seconds"
    return [f"Open: {settings.login_url(code)}",
            f"  (stdout is not a terminal: the link works once, for {lifetime}; a new one: "
            "POST /api/auth/codes with the token)"]


def refuse_absent_server_extra(who: str) -> None:
    """Refuse at once when a module of the ``server`` extra is not installed at all: asked
    without importing anything, before the options are checked (the database URL's check
    reads it with SQLAlchemy's URL class)."""
    absent = first_absent(SERVER_MODULES)
    if absent is not None:
        raise click.ClickException(needs_extra(who, "server", absent))


def refuse_database_url(database_url: str) -> None:
    """``serve``'s and ``worker``'s refusal of a database URL they cannot use: one line naming
    the fix, exit 2 (:func:`~cursor_agent_api.database_urls.database_url_problem`). Called
    before either imports the server: only the URL's text is read.

    Example:
        >>> refuse_database_url("sqlite+aiosqlite:///x.db")
        >>> refuse_database_url("mysql://x")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        cursor_agent_api.cli.console.CliUsageError: --database-url mysql://x: unsupported database; ...
    """
    from ..database_urls import database_url_problem
    from .console import CliUsageError, given_as

    problem = database_url_problem(database_url)
    if problem is not None:
        raise CliUsageError(f"{given_as('database_url', '--database-url')} {problem}")


def argv_secret_warnings(token: str | None, database_url: str | None) -> list[str]:
    """``serve``'s and ``worker``'s warnings for a secret given on the command line: the
    token, a database URL with a password (each belongs in its environment variable)."""
    from ..database_urls import holds_password
    from .console import secret_on_argv

    found = []
    if token is not None:
        found.append(secret_on_argv("token", "--token", "CURSOR_AGENT_API_TOKEN"))
    if database_url is not None and holds_password(database_url):
        found.append(secret_on_argv("database_url", "--database-url (its password)",
                                    "CURSOR_AGENT_API_DATABASE_URL"))
    return [w for w in found if w is not None]


def freeze_start_up_objects() -> int:
    """Collect, then move every object alive now out of the garbage collector's reach
    (:func:`gc.freeze`); returns how many. For a long-running process, once started.

    What start-up made (modules, the app, the database's compiled statements: about
    100,000 objects) lives as long as the process. Left in the collector's oldest
    generation, each full collection during a run walks all of it again (~0.1 s, in the
    event loop). Frozen, a collection walks what the runs made. The price: a frozen object
    that later becomes cyclic garbage is never collected (``serve`` and ``worker`` make
    their long-lived objects at start-up, so that is little). A process-wide policy: the
    commands call it, the library never does.

    Example:
        >>> freeze_start_up_objects() > 0
        True
        >>> gc.unfreeze()
    """
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


@click.command("serve")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to bind. Anything but loopback exposes the agent to your network.",
)
@click.option(
    "--port",
    default=8765,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port to bind (0: any free port).",
)
@click.option(
    "--token",
    envvar="CURSOR_AGENT_API_TOKEN",
    default=None,
    help="Access token, 16 characters or more (default: a new random one, printed once). "
    "[env: CURSOR_AGENT_API_TOKEN]",
)
@click.option(
    "--database-url",
    envvar="CURSOR_AGENT_API_DATABASE_URL",
    default=None,
    help="SQLAlchemy URL: sqlite+aiosqlite:///PATH (default: a file in the user "
    "data directory) or postgresql+asyncpg://… [env: CURSOR_AGENT_API_DATABASE_URL]",
)
@click.option(
    "--max-runs",
    default=4,
    show_default=True,
    type=click.IntRange(1, 1000),
    help="Runs at the same time; the rest wait, queued.",
)
@click.option(
    "--max-prompt-bytes", default=262_144, show_default=True, type=click.IntRange(1, 64 * 1024 * 1024)
)
@click.option(
    "--max-body-bytes", default=1_048_576, show_default=True, type=click.IntRange(1024, 256 * 1024 * 1024)
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    help="Another host name accepted in the Host header (repeatable).",
)
@click.option(
    "--allow-origin",
    "allow_origins",
    multiple=True,
    help="Another origin allowed for WebSockets and writes (repeatable).",
)
@click.option(
    "--ws-queue-size",
    default=2000,
    show_default=True,
    type=click.IntRange(1, 10**6),
    help="Records queued per WebSocket before a slow client is told to resync.",
)
@click.option(
    "--permission-timeout",
    type=Seconds(min=0.001),
    default=900.0,
    show_default=True,
    help="Seconds an ACP chat's permission request, question or plan waits for an answer "
    "in the page before it is rejected.",
)
@click.option(
    "--dispatch",
    type=click.Choice(["inprocess", "queue"]),
    default="inprocess",
    show_default=True,
    help="Where runs execute: in this process, or on workers ('cursor-agent-api worker') "
    "through a job queue in the database (PostgreSQL only; docs/distributed.md).",
)
@click.option(
    "--queue",
    "queue_name",
    default="runs",
    show_default=True,
    help="With --dispatch queue: the shared queue new chats' runs go to.",
)
@click.option(
    "--stalled-after",
    type=Seconds(1.0, LONGEST_STALLED_AFTER),
    default=30.0,
    show_default=True,
    help="With --dispatch queue: seconds without a worker's heartbeat before its runs are "
    "marked interrupted.",
)
@click.option(
    "--access-log/--no-access-log",
    default=False,
    show_default=True,
    help="Log every HTTP request on stderr (tokens redacted).",
)
@runner_options
def serve(
    host: str,
    port: int,
    token: str | None,
    database_url: str | None,
    roots: tuple[str, ...],
    simulate: bool,
    agent_binary: str | None,
    agent_env: tuple[str, ...],
    pass_env: tuple[str, ...],
    max_runs: int,
    max_prompt_bytes: int,
    max_body_bytes: int,
    allow_hosts: tuple[str, ...],
    allow_origins: tuple[str, ...],
    ws_queue_size: int,
    run_timeout: float | None,
    idle_timeout: float | None,
    permission_timeout: float,
    dispatch: str,
    queue_name: str,
    stalled_after: float,
    log_level: str,
    access_log: bool,
) -> None:
    """Serve agents over HTTP and WebSocket, with a durable, replayable event log."""
    # What the options' text tells is refused before the server's imports (a second of CPU)
    refuse_absent_server_extra("the server")
    if database_url is not None:
        refuse_database_url(database_url)
    check_simulate_or_binary(simulate, agent_binary)
    if token is not None:
        problem = check_token(token)
        if problem is not None:
            raise click.BadParameter(problem, param_hint="'--token' / CURSOR_AGENT_API_TOKEN")
    if dispatch == "queue":
        from ..database_urls import is_postgres
        from .console import CliUsageError

        if database_url is None or not is_postgres(database_url):  # (the default is SQLite)
            raise CliUsageError(
                "--dispatch queue needs a PostgreSQL database (the job queue lives in it): "
                "give --database-url postgresql+asyncpg://USER@HOST/DB"
            )
    extra_env = parse_agent_env(agent_env, pass_env)
    for warning in argv_secret_warnings(token, database_url):
        click.echo(warning, err=True)
    try:
        import uvicorn

        from ..server import ServerSettings, create_app
        from ..server.non_dumpable import make_non_dumpable
        from ..server.security import RedactTokens
        from ..server.settings import new_token
        from ..server.websocket import MAX_CLIENT_MESSAGE
    except ImportError as e:  # pragma: no cover - depends on the installation
        raise click.ClickException(needs_extra("the server", "server", str(e.name))) from None

    missing = first_missing(SERVER_MODULES)
    if missing is not None:
        raise click.ClickException(needs_extra("the server", "server", missing))
    if database_url is None:
        database_url = serve_database_url(simulate=simulate)
        from ..server.settings import earlier_default_database

        moved = earlier_default_database(database_url)
        if moved is not None:
            click.echo(f"warning: {moved}", err=True)
    if dispatch == "queue":
        missing = first_missing(QUEUE_MODULES)
        if missing is not None:
            raise click.ClickException(needs_extra("--dispatch queue", "postgres", missing))
    from .console import current_folder
    settings = ServerSettings(
        token=token or new_token(),
        host=host,
        port=port,
        database_url=database_url,
        roots=tuple(Path(r).resolve() for r in roots) or (current_folder().resolve(),),
        agent_binary=agent_binary,
        agent_env=extra_env,
        simulate=simulate,
        max_concurrent_runs=max_runs,
        max_prompt_bytes=max_prompt_bytes,
        max_body_bytes=max_body_bytes,
        allowed_hosts=allow_hosts,
        allowed_origins=allow_origins,
        subscriber_queue_size=ws_queue_size,
        run_timeout=run_timeout,
        idle_timeout=idle_timeout,
        permission_timeout=permission_timeout,
        dispatch=dispatch,
        queue=queue_name,
        stalled_after=stalled_after,
        sweep_interval=min(5.0, stalled_after / 3),
    )
    for line in exposure_warnings(host):
        click.echo(f"warning: {line}", err=True)
    try:
        sock = listen_socket(host, port)
    except OSError as e:
        raise click.ClickException(f"cannot listen on {host}:{port}: {e.strerror}") from None
    bound_port = sock.getsockname()[1]
    from dataclasses import replace

    settings = replace(settings, port=bound_port)

    # Logs (the access log, when on) go to stderr; stdout carries only the URL lines. The
    # event loop only queues them: a thread writes them, so a stderr nobody reads blocks no
    # request (what does not fit is dropped and counted: .log_output).
    log_lines = LogLines(sys.stderr)
    log_config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    for handler_name in ("default", "access"):
        log_config["handlers"][handler_name] = {"()": log_lines.handler, "formatter": handler_name}
    # the server's own logs, at --log-level too, on stderr as uvicorn's; the libraries'
    # warnings (asyncio's, Python's own) through the root logger, queued as well
    log_config["loggers"]["cursor_agent_api"] = {
        "handlers": ["default"], "level": log_level.upper(), "propagate": False}
    log_config["root"] = {"handlers": ["default"], "level": "WARNING"}
    logging.captureWarnings(True)
    app = create_app(settings)
    from ..server.connections import serving_limits

    config = uvicorn.Config(
        app,
        log_config=log_config,
        log_level=log_level,
        access_log=access_log,
        ws_ping_interval=settings.ws_ping_interval,
        ws_ping_timeout=settings.ws_ping_interval,
        ws_max_size=MAX_CLIENT_MESSAGE,
        ws_per_message_deflate=False,  # loopback: compression only costs CPU
        timeout_graceful_shutdown=5,
        server_header=False,
        # no proxy is trusted: X-Forwarded-For from 127.0.0.1 (uvicorn's default) let any
        # local process write the client address in the access log
        proxy_headers=False,
        # unfinished requests time out, connections are capped, the open-file limit raised
        **serving_limits(),
    )
    for name in ("uvicorn.access", "uvicorn.error", "uvicorn", "cursor_agent_api"):
        logger = logging.getLogger(name)
        logger.addFilter(RedactTokens())
        for handler in logger.handlers:  # what children propagate passes here, not there
            handler.addFilter(RedactTokens())
    # a refused WebSocket (401, 403) is no ERROR (uvicorn's websockets-sansio logs one)
    from ..server.checks.asgi import RefusedUpgrades

    logging.getLogger("uvicorn.error").addFilter(RefusedUpgrades())
    # before any agent starts: it runs as this user, and would read the token (and the
    # database URL) from /proc/<this pid>/environ; logged once logging is set up
    make_non_dumpable()

    def announce() -> None:
        if dispatch != "queue":  # else the workers run the agents, on their machines
            from ..server.runner import missing_agent
            from .superuser import agents_read_secrets_warning

            missing = missing_agent(settings)
            if missing is not None:  # said once the database is open, before the URL
                click.echo(f"warning: {missing}", err=True)
            for warning in beside_workers:
                click.echo(f"warning: {warning}", err=True)
            readable = agents_read_secrets_warning("its token and database URL")
            if readable is not None:  # root's agents read it, not dumpable as it is
                click.echo(readable, err=True)
        label = " (simulated agents)" if simulate else ""
        if dispatch == "queue":  # each worker's own --simulate decides: not this server's to say
            label = f" dispatching to workers (queue {queue_name!r})"
        click.echo(f"cursor-agent-api {__version__} server{label} at {settings.base_url}")
        # A one-time code, not the token: the link in the browser's history is dead.
        for line in open_lines(settings, app.state.auth, sys.stdout.isatty()):
            click.echo(line)
        if token is None:
            click.echo(f"Token: {settings.token}  (for programs: 'Authorization: token …')")
        sys.stdout.flush()

    class _Server(uvicorn.Server):
        output_lost: OSError | None = None

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            # Once shut down, uvicorn sends itself the signal that stopped it again: taken by
            # main()'s cancelled_by_signals, it ends the command once the app is closed (a
            # handler of the caller's own may end the process there: the log lines still
            # queued are written before). SIGHUP (its terminal or SSH session closed) stops it
            # as SIGTERM does: gracefully, its runs marked interrupted (it died at once, its
            # runs left "running"); unless it was started to ignore it (nohup)
            with super().capture_signals():
                try:
                    hangup = getattr(signal, "SIGHUP", None)
                    if (hangup is None or threading.current_thread() is not threading.main_thread()
                            or signal.getsignal(hangup) == signal.SIG_IGN):
                        yield
                        return
                    previous = signal.signal(hangup, self.handle_exit)
                    try:
                        yield
                    finally:
                        signal.signal(hangup, previous)
                finally:
                    log_lines.close()

        def handle_exit(self, sig: int, frame: Any) -> None:
            # A second Ctrl-C, SIGTERM or SIGHUP while it shuts down ends the program at once
            # (uvicorn's "force quit" skipped the app's shutdown, then asyncio's teardown
            # cancelled it: its traceback), from that signal: what the shutdown had not done
            # is said, and done by the next start as after a kill -9 (runs interrupted); the
            # agents' groups are stopped by their owner guards. (A function call, not the
            # program: uvicorn's own force quit, the caller is not killed.)
            if self.should_exit and sig in ENDING and running_as_program():
                lifespan = getattr(self, "lifespan", None)
                done = getattr(lifespan, "shutdown_event", None)
                if done is None or not done.is_set():
                    # (never blocks: stderr a full pipe nobody reads, the line is skipped)
                    say_at_once(f"cursor-agent-api serve: {signal.Signals(sig).name} again: "
                                "stopped at once, its shutdown cut short: the runs it had not "
                                "ended are marked interrupted at the next start; their agents "
                                "are stopped\n")
                die_now(sig)
            super().handle_exit(sig, frame)

        async def main_loop(self) -> None:
            # Entered once started, before serving; every uvicorn shuts down (the app's
            # store closed) when it returns: a link that cannot be printed (stdout a full
            # disk, a closed pipe) stops the server cleanly, then is said in one line.
            try:
                announce()
            except OSError as exc:
                self.output_lost = exc
                return
            frozen = freeze_start_up_objects()
            logging.getLogger("cursor_agent_api.server").debug(
                "start-up objects frozen: %d (out of the garbage collector's walks)", frozen)
            await super().main_loop()

    server: Any = _Server(config)
    beside_workers: list[str] = []  # (a database of serve --dispatch queue's workers)

    # Whichever of its threads the kernel gives a signal to, the main thread takes it at once
    wake = SignalWake()  # (it wakes the loop: asyncio's teardown waits there for threads)

    async def main() -> None:
        # The app's whole start-up (the store opened, its migrations run, the LISTEN
        # connections, the job queue's pool, the recovery: AppStart) is done here, on the
        # server's loop, before uvicorn's (whose lifespan then finds it started, and closes it
        # at shutdown): a step the database fails is said in one line, not as the start-up's
        # traceback, what the start opened closed. A Ctrl-C, SIGTERM or SIGHUP meanwhile
        # cancels the start (what it opened is closed), then the command dies from it; a
        # second one ends it at once. uvicorn's handlers take them while it serves, and
        # re-send the one that stopped it as they end: taken here, it ends the command once
        # the app is closed.
        wake.watch(asyncio.get_running_loop())
        with cancelled_by_signals("cursor-agent-api serve") as signals:
            try:
                problem = await _start_app(app.state.start, settings.database_url)
                if problem is not None:  # (said before the death from a signal taken meanwhile)
                    raise click.ClickException(problem)
                if dispatch != "queue":
                    beside_workers.extend(await _queue_workers_warning(app.state.store))
                # a signal from here to uvicorn's handlers is uvicorn's graceful stop
                signals.hand_over(lambda: setattr(server, "should_exit", True))
                await server.serve(sockets=[sock])
            finally:  # (uvicorn's lifespan closed it, unless uvicorn stopped before it ran)
                signals.settle("its shutdown")
                await app.state.start.close()

    with without_ending_signals():  # (its writer, joined below, never takes them)
        log_lines.start()
    try:
        asyncio.run(main())
    except KeyboardInterrupt:  # a Ctrl-C before the start takes the signals
        raise SignalExit(signal.SIGINT) from None  # dies from it, as from SIGTERM (a shell loop stops)
    finally:
        wake.close()
        sock.close()
        log_lines.close()  # the last lines written (a stalled reader: a few seconds at most)
    if server.output_lost is not None:  # one line, exit 1 (a closed pipe: click, quietly)
        from .console import writing_output

        with writing_output():
            raise server.output_lost
    if not server.started:
        raise click.ClickException("the server did not start; see the messages above")


async def _start_app(start: Any, url: str) -> str | None:
    """Run the app's start-up (:class:`~..server.app.AppStart`; its first step opens the
    store): what the database failed, in one line with what to do, or None. A bug is raised
    as it is. What the start opened is closed when it fails, or is cancelled.

    Example:
        >>> import asyncio
        >>> from cursor_agent_api.server.app import AppStart, start_step
        >>> async def steps(stack):
        ...     with start_step("the LISTEN connection for the workers' records (the relay)"):
        ...         raise TimeoutError()
        >>> print(asyncio.run(_start_app(AppStart(steps), "postgresql+asyncpg://me:pw@db/app")))
        ... # doctest: +NORMALIZE_WHITESPACE
        cannot start the server: the LISTEN connection for the workers' records (the relay) failed
        on the database postgresql+asyncpg://me:***@db/app: TimeoutError; start it again once
        the database answers
    """
    from ..database_urls import shown_url
    from ..server.app import OPENING_THE_DATABASE, StartError
    from ..server.store import describe_error
    from ..server.store.errors import answers_later

    try:
        await start.start()
    except StartError as e:  # (what the start opened is closed)
        if e.step == OPENING_THE_DATABASE:
            return f"cannot open the database {shown_url(url)}: {describe_error(e.cause)}"
        then = "; start it again once the database answers" if answers_later(e.cause) else ""
        return (f"cannot start the server: {e.step} failed on the database {shown_url(url)}: "
                f"{describe_error(e.cause)}{then}")
    return None


async def _queue_workers_warning(store: Any) -> list[str]:
    """A ``serve`` without ``--dispatch queue`` on a database whose queue workers are alive
    (a heartbeat within :data:`~..server_options.LIVE_WITHIN`, a minute, as the
    migrations count them): a warning that its runs do not go to them (it runs its
    agents itself, on this machine) — most likely ``--dispatch queue`` was forgotten. Its
    runs are left alone by the queue servers' sweeps. Nothing on SQLite, or when the count
    cannot be read."""
    from ..server.store.engine import LIVE_WITHIN

    if store.is_sqlite:
        return []
    try:
        alive = (await store.worker_counts(LIVE_WITHIN))["alive"]
    except Exception:  # the queue's tables missing, the database away: nothing to say
        return []
    if not alive:
        return []
    return [f"{alive} queue worker(s) take runs from this database, but this server runs its "
            "agents itself, on this machine (no --dispatch queue): start it with --dispatch "
            "queue to hand its runs to them (docs/distributed.md)"]
