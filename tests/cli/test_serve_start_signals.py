"""A Ctrl-C, SIGTERM or SIGHUP during ``serve``'s start (before uvicorn takes the signals)
cancels the start: what it opened is closed, its log lines are written, then it dies from
that signal; a second one ends it at once, with one line. The worker's start the same.

The start is held at a precise step: the store opened (SQLite: its ``-wal`` and ``-shm``
files there), then an await that only the signal's cancel ends; the signal is sent once the
program says so. Before, a Ctrl-C there left the store open (``-wal`` and ``-shm`` kept until
the next start: the store was opened outside the app's start-up, whose closing it missed),
a SIGTERM or SIGHUP killed it at once (nothing closed, log lines queued lost), and a second
Ctrl-C was asyncio's, said nothing.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from test_signal_death import in_own_group

HELD = """
import asyncio, logging, signal
from cursor_agent_api.server.store import Store

opened = Store.start


async def held(self):
    await opened(self)
    print("held", flush=True)
    try:
        await asyncio.sleep(120)
    except asyncio.CancelledError:
        logging.getLogger("cursor_agent_api.server").warning("start cancelled")
        if {hold_the_cancel}:
            print("cancelling", flush=True)
            await asyncio.sleep(120)
        raise


Store.start = held
if {nohup}:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
from cursor_agent_api.console_script import main
main(["serve", "--simulate", "--port", "0", "--database-url", {url!r}])
"""


def _held_serve(env: dict[str, str], db: Path, *, hold_the_cancel: bool = False,
                nohup: bool = False) -> str:
    return HELD.format(hold_the_cancel=hold_the_cancel, nohup=nohup,
                       url=f"sqlite+aiosqlite:///{db}")


def _signalled(env: dict[str, str], program: str, mark: str,
               signals: list[int]) -> tuple[subprocess.Popen[str], str, str]:
    """Run ``program``; once it says ``mark`` on stdout, send ``signals`` (in order);
    its process, stdout and stderr once it ended."""
    with in_own_group([sys.executable, "-c", program], env) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        seen = []
        for line in proc.stdout:
            seen.append(line)
            if line.strip() == mark:
                break
        assert seen and seen[-1].strip() == mark, (seen, proc.stderr.read())
        for signum in signals:
            proc.send_signal(signum)
        out, err = proc.communicate(timeout=120)  # (a hang guard)
    return proc, "".join(seen) + out, err


def _left(db: Path) -> list[str]:
    return [p.name for p in db.parent.iterdir() if p.name.startswith(db.name + "-")]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP],
                         ids=lambda s: signal.Signals(s).name)
def test_a_signal_during_the_start_closes_what_it_opened_then_ends_it(
        cli_env: dict[str, str], signum: int) -> None:
    db = Path(cli_env["TEST_WS"]) / "server.sqlite3"
    proc, out, err = _signalled(cli_env, _held_serve(cli_env, db), "held", [signum])
    assert proc.returncode == -signum, (proc.returncode, out, err)
    assert "start cancelled" in err, err  # the cancel ran; its log line written
    assert "Traceback" not in err and "Error" not in err, err
    assert _left(db) == [], _left(db)  # the store closed: no -wal, no -shm


def test_a_sighup_ignored_at_start_stays_ignored_during_the_start(cli_env: dict[str, str]) -> None:
    """Under ``nohup``: the SIGHUP sent first (pending together, it is taken first) does
    not stop it; the SIGTERM after it does."""
    db = Path(cli_env["TEST_WS"]) / "server.sqlite3"
    proc, out, err = _signalled(cli_env, _held_serve(cli_env, db, nohup=True), "held",
                                [signal.SIGHUP, signal.SIGTERM])
    assert proc.returncode == -signal.SIGTERM, (proc.returncode, out, err)
    assert "start cancelled" in err, err


@pytest.mark.parametrize(("first", "second"), [(signal.SIGINT, signal.SIGINT),
                                               (signal.SIGTERM, signal.SIGINT),
                                               (signal.SIGINT, signal.SIGHUP)],
                         ids=lambda s: signal.Signals(s).name)
def test_a_second_signal_during_the_start_ends_it_at_once_saying_so(
        cli_env: dict[str, str], first: int, second: int) -> None:
    """The first signal's cancel is held in the start's cleanup; the second ends it there,
    at once (it used to be asyncio's second Ctrl-C, saying nothing; a SIGTERM killed it)."""
    db = Path(cli_env["TEST_WS"]) / "server.sqlite3"
    program = _held_serve(cli_env, db, hold_the_cancel=True)
    with in_own_group([sys.executable, "-c", program], cli_env) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        for line in proc.stdout:
            if line.strip() == "held":
                proc.send_signal(first)
            elif line.strip() == "cancelling":
                proc.send_signal(second)
                break
        out, err = proc.communicate(timeout=120)  # (a hang guard)
    name = signal.Signals(second).name
    assert proc.returncode == -second, (proc.returncode, out, err)
    assert f"cursor-agent-api serve: {name} again: stopped at once, its start cut short" in err, err
    assert "Traceback" not in err, err


WRITER = """
import signal, threading
from cursor_agent_api.server.store import Store


def blocked(thread):  # the signals this thread blocks, as the kernel sees them
    with open(f"/proc/self/task/{thread.native_id}/status") as status:
        mask = next(line for line in status if line.startswith("SigBlk:"))
    return int(mask.split()[1], 16)


async def seen(self):
    (writer,) = [t for t in threading.enumerate() if t.name == "log-lines"]
    wake = signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(wake)
    print("writer blocks", blocked(writer), "main blocks", blocked(threading.main_thread()),
          "wake", wake, flush=True)
    raise ConnectionRefusedError(111, "Connect call failed")


Store.start = seen
from cursor_agent_api.console_script import main
main(["serve", "--simulate", "--port", "0", "--database-url", "sqlite+aiosqlite:///s.db"])
"""


def test_serves_log_writer_leaves_the_ending_signals_to_the_main_thread(
        cli_env: dict[str, str]) -> None:
    """As the worker's (``test_worker_threads``): the writer, which the main thread joins
    after the loop, is born with Ctrl-C, SIGTERM and SIGHUP blocked, and while the loop runs
    a signal any other thread takes wakes it (the signals' wakeup file descriptor is set)."""
    with in_own_group([sys.executable, "-c", WRITER], cli_env) as proc:
        out, err = proc.communicate(timeout=120)  # (a hang guard)
    assert proc.returncode == 1 and "cannot open the database" in err, (out, err)
    (said,) = [line for line in out.splitlines() if line.startswith("writer blocks")]
    words = said.split()
    writer, main, wake = int(words[2]), int(words[5]), int(words[7])
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        bit = 1 << (sig - 1)
        assert writer & bit and not main & bit, (signal.Signals(sig).name, said)
    assert wake != -1, said


WORKER_HELD = """
import asyncio, logging
import cursor_agent_api.server.worker as queue_worker


async def held(settings, on_ready=None, on_signal=None):
    print("held", flush=True)
    try:
        await asyncio.sleep(120)
    except asyncio.CancelledError:
        logging.getLogger("cursor_agent_api.worker").warning("start cancelled")
        raise


queue_worker.serve_worker = held
from cursor_agent_api.console_script import main
main(["worker", "--simulate", "--root", ".", "--name", "w-held"])
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP],
                         ids=lambda s: signal.Signals(s).name)
def test_a_signal_during_the_workers_start_cancels_it_then_ends_it(
        cli_env: dict[str, str], signum: int) -> None:
    """The same mechanism for the worker's start (before its own handlers): it was killed
    at once, its log lines lost."""
    env = {**cli_env, "CURSOR_AGENT_API_DATABASE_URL": "postgresql+asyncpg://u@127.0.0.1:9/db"}
    proc, out, err = _signalled(env, WORKER_HELD, "held", [signum])
    assert proc.returncode == -signum, (proc.returncode, out, err)
    assert "start cancelled" in err and "Traceback" not in err, err


TWICE = """
import signal
from cursor_agent_api.cli import main

before = signal.getsignal(signal.SIGINT)
for _ in range(2):
    try:
        main(["worker", "--simulate", "--root", ".", "--name", "w-twice"], standalone_mode=False)
    except BaseException as e:
        print("raised", type(e).__name__)
    print("SIGINT's handler as before:", signal.getsignal(signal.SIGINT) is before)
"""


def test_the_workers_main_gives_sigint_its_handler_back(cli_env: dict[str, str]) -> None:
    """On the worker's early path (its database refused), ``held_signals`` put back
    ``asyncio.run``'s handler, bound to the finished run: a second ``main()`` in the same
    process got none of its own (review 34)."""
    env = {**cli_env, "CURSOR_AGENT_API_DATABASE_URL": "postgresql+asyncpg://u@127.0.0.1:9/db"}
    with in_own_group([sys.executable, "-c", TWICE], env) as proc:
        out, err = proc.communicate(timeout=120)  # (a hang guard)
    assert proc.returncode == 0, (out, err)
    assert out.count("raised ClickException") == 2, (out, err)
    assert out.count("SIGINT's handler as before: True") == 2, (out, err)


AT_THE_RECOVERY = """
import asyncio
from cursor_agent_api.server.recovery import Recovery


async def held(self):  # the start's last step: the store and the sign-outs' LISTEN open
    print("held", flush=True)
    await asyncio.sleep(120)


Recovery.start = held
from cursor_agent_api.console_script import main
main(["serve", "--simulate", "--port", "0"])
"""


def test_a_sigterm_late_in_the_start_closes_the_database_connections_with_a_goodbye(
        cli_env: dict[str, str], postgres_url: str) -> None:
    """``serve`` on PostgreSQL, held at its recovery step: every connection its start opened
    (the store's, the sign-outs' LISTEN) is closed with PostgreSQL's goodbye before it dies
    from the SIGTERM (it was killed: none said goodbye; the migrations' connection, closed
    before, did). (With ``--dispatch queue``, the job queue's psycopg connections hang up
    right after their goodbye, which the proxy cannot tell from a drop.)"""
    from pg_proxy import proxied  # (tests/server, put on the path by postgres_url)

    with proxied(postgres_url) as (proxy, through):
        env = {**cli_env, "CURSOR_AGENT_API_DATABASE_URL": through}
        proc, out, err = _signalled(env, AT_THE_RECOVERY, "held", [signal.SIGTERM])
        goodbyes = proxy.goodbyes()
    assert proc.returncode == -signal.SIGTERM, (proc.returncode, out, err)
    assert "Traceback" not in err, err
    assert len(goodbyes) >= 2 and all(goodbyes), goodbyes


HANDED_OVER = """
import os, signal
import cursor_agent_api.cli.serve as serve


async def warned(store):  # the start's last step: the signal taken, no await before uvicorn's
    os.kill(os.getpid(), {signum})
    return []


serve._queue_workers_warning = warned
from cursor_agent_api.console_script import main
main(["serve", "--simulate", "--port", "0", "--database-url", {url!r}])
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=lambda s: signal.Signals(s).name)
def test_a_signal_as_uvicorn_takes_over_stops_it_gracefully(cli_env: dict[str, str],
                                                            signum: int) -> None:
    """A signal taken after the start's last await and before uvicorn's handlers are in place
    (review 36): its cancel landed inside uvicorn's own start-up, an ERROR traceback. It is
    uvicorn's graceful stop now: no link printed, the app closed, death from the signal."""
    db = Path(cli_env["TEST_WS"]) / "server.sqlite3"
    program = HANDED_OVER.format(signum=int(signum), url=f"sqlite+aiosqlite:///{db}")
    proc = subprocess.run([sys.executable, "-c", program], env=cli_env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == -signum, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and "ERROR" not in proc.stderr, proc.stderr
    assert "Open:" not in proc.stdout, proc.stdout
    assert _left(db) == [], _left(db)


FAILING = """
import asyncio, os, signal
from cursor_agent_api.server.recovery import Recovery
from cursor_agent_api.server.store import Store


async def refused(self):
    raise ConnectionRefusedError(111, "Connect call failed")


closes = Store.close


async def signalled_close(self):
    os.kill(os.getpid(), signal.SIGTERM)  # as the failed start closes what it opened
    if {during}:
        await asyncio.sleep(0.5)  # (the cancel lands here)
    await closes(self)


Recovery.start = refused
Store.close = signalled_close
from cursor_agent_api.console_script import main
main(["serve", "--simulate", "--port", "0", "--database-url", {url!r}])
"""


@pytest.mark.parametrize("during", [True, False], ids=["during-the-close", "after-it"])
def test_a_signal_as_a_failed_start_closes_lets_it_close_and_say_why(
        cli_env: dict[str, str], during: bool) -> None:
    """The start failed (the recovery step, on the database); a SIGTERM comes as it closes
    what it opened (review 36): the cancel cut the store's close short (its -wal and -shm
    left), and the failure's line was lost either way. Now the close ends, the line is said,
    then it dies from the signal."""
    db = Path(cli_env["TEST_WS"]) / "server.sqlite3"
    program = FAILING.format(during=during, url=f"sqlite+aiosqlite:///{db}")
    proc = subprocess.run([sys.executable, "-c", program], env=cli_env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == -signal.SIGTERM, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "Error: cannot start the server: marking the runs a previous server left active " \
        "interrupted failed on the database" in proc.stderr, proc.stderr
    assert _left(db) == [], _left(db)
