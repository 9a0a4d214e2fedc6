"""Once a command stops because of a signal, a second Ctrl-C, SIGTERM or SIGHUP — any of
them, not only the same one again — ends it at once, quietly, from that second signal.

The last session made the *same* signal again end the exit handlers at once; a different
one (a Ctrl-C after a SIGTERM stop) raised ``KeyboardInterrupt`` inside an exit handler
(Python's "Exception ignored in atexit callback" and its traceback), or inside the cleanup
that ran before them (the uncaught ``KeyboardInterrupt``'s traceback). ``serve``'s second
Ctrl-C was uvicorn's "force quit": the app's shutdown skipped, then asyncio's teardown
cancelled it, with its traceback. Nothing is timed: each second signal is sent once a line
shows the command in the step it interrupts.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_signal_death import EXIT_BY_SIGNAL, in_own_group

PAIRS = [(signal.SIGTERM, signal.SIGINT), (signal.SIGINT, signal.SIGTERM),
         (signal.SIGHUP, signal.SIGINT), (signal.SIGTERM, signal.SIGHUP)]
IDS = [f"{first.name}-then-{second.name}" for first, second in PAIRS]


def _second_signal(code: str, mark: str, second: int, where: Path) -> tuple[int, str]:
    """Run ``code`` in ``where``; once it says ``mark`` on stderr (it waits there), send
    ``second``: its status and all it said on stderr."""
    env = {**os.environ, "TEST_WS": str(where)}
    with in_own_group([sys.executable, "-c", code], env) as proc:  # (killed if it hangs)
        assert proc.stderr is not None
        said = []
        for line in proc.stderr:
            said.append(line)
            if mark in line:
                break
        assert said and mark in said[-1], said
        proc.send_signal(second)
        err = "".join(said) + proc.stderr.read()
        proc.wait()
    return proc.returncode, err


@pytest.mark.parametrize(("first", "second"), PAIRS, ids=IDS)
def test_another_signal_while_the_exit_handlers_run_ends_it_at_once(
        first: int, second: int, tmp_path: Path) -> None:
    setup = ("import time\natexit.register(lambda: (print('waiting', file=sys.stderr, flush=True),"
             " time.sleep(120)))")
    code = EXIT_BY_SIGNAL.format(sig=signal.Signals(first).name, setup=setup)
    status, err = _second_signal(code, "waiting", second, tmp_path)
    assert status == -second, (status, err)
    assert "Traceback" not in err and "Exception ignored" not in err, err


PROGRAM = """
import signal, sys, time
import cursor_agent_api.cli as command_line
from cursor_agent_api.cli.turn_signals import Terminated, ending_signals
from cursor_agent_api.signal_exit import SignalExit


class Stopping:
    def main(self, args):
        try:
            {stop}
        finally:
            print("cleaning up", file=sys.stderr, flush=True)
            time.sleep(120)


command_line.main = Stopping()  # (what the console script runs)
from cursor_agent_api.console_script import main
main([])
"""
STOPS = {
    "SignalExit": "raise SignalExit(signal.{first})",
    # a turn's signals, given back as the SignalExit leaves (they undid what it set)
    "a turn's signals": "with ending_signals():\n                raise Terminated(signal.{first})",
}


@pytest.mark.parametrize("stop", list(STOPS))
@pytest.mark.parametrize(("first", "second"), PAIRS, ids=IDS)
def test_another_signal_during_the_cleanup_ends_the_program_at_once(
        stop: str, first: int, second: int, tmp_path: Path) -> None:
    """The cleanup a stopping command still runs as its ``SignalExit`` unwinds, before the
    console script's exit handlers."""
    code = PROGRAM.format(stop=STOPS[stop].format(first=signal.Signals(first).name))
    status, err = _second_signal(code, "cleaning up", second, tmp_path)
    assert status == -second, (status, err)
    assert "Traceback" not in err, err


def test_called_as_a_function_a_stopping_command_leaves_the_signals_alone() -> None:
    """``cursor_agent_api.cli.main()`` called by a program: its caller's handlers stay."""
    from cursor_agent_api.signal_exit import SignalExit

    before = signal.getsignal(signal.SIGINT)
    ended = SignalExit(signal.SIGTERM)
    assert ended.code == 143 and signal.getsignal(signal.SIGINT) is before


TOKEN = "second-signal-test-token-0123456789"


def _serve(env: dict[str, str], tmp: Path) -> list[str]:
    return [sys.executable, "-m", "cursor_agent_api.cli", "serve", "--simulate", "--port", "0",
            "--database-url", f"sqlite+aiosqlite:///{tmp / 'server.sqlite3'}"]


def _url(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("Open: "):
            return line.split()[1].split("/?code=")[0]
    raise AssertionError("serve ended before its link")


def _fill(pipe: int) -> None:
    """Fill ``pipe`` to its last byte, through a file description of its own (opened
    non-blocking: the server's stays blocking)."""
    filler = os.open(f"/proc/self/fd/{pipe}", os.O_WRONLY | os.O_NONBLOCK)
    try:
        for size in (512, 1):
            while True:
                try:
                    os.write(filler, b"x" * size)
                except BlockingIOError:
                    break
    finally:
        os.close(filler)


def _group_ends(pgid: int) -> bool:
    """Whether process group ``pgid`` has no member left within a minute (the owner guard:
    SIGTERM, ignored here, its grace, then SIGKILL); polled, as no event tells that another
    session's group ended."""
    for _ in range(600):
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def _run_past_its_first_event(proc: subprocess.Popen[str]) -> dict[str, Any]:
    """A run started on the server ``proc``, once its agent sent its first event (the
    simulated agent ignores SIGTERM from then: its stop waits the kill grace)."""
    headers = {"Authorization": f"token {TOKEN}"}
    with httpx.Client(base_url=_url(proc), headers=headers, timeout=30) as client:
        chat = client.post("/api/chats", json={"options": {"trust": True}}).json()["id"]
        run = client.post(f"/api/chats/{chat}/runs", json={"prompt": "list the files"}).json()
        while run["first_seq"] is None:
            time.sleep(0.05)  # (polled)
            run = client.get(f"/api/runs/{run['id']}").json()
    return run


def test_serve_second_ctrl_c_ends_it_at_once(cli_env: dict[str, str], tmp_path: Path) -> None:
    """A run whose agent ignores SIGTERM (from its first event) holds the shutdown (its
    stop waits for the kill); the second Ctrl-C comes as soon as the shutdown begins
    ("Shutting down"): uvicorn's force quit then ended it with a ``KeyboardInterrupt`` /
    ``CancelledError`` traceback (asyncio's teardown cancelling the app's shutdown). (Later,
    at "Waiting for application shutdown", it came too late to act: the shutdown went on.)
    It now ends at once, from the SIGINT, one line saying so. The database is left intact
    (the next start opens it: the run is interrupted), the agent is stopped by its owner
    guard."""
    env = {**cli_env, "CURSOR_AGENT_API_TOKEN": TOKEN, "CURSOR_AGENT_SIM_FAULT": "slow,ignore-sigterm",
           "CURSOR_AGENT_SIM_DELAY": "1"}
    headers = {"Authorization": f"token {TOKEN}"}
    with in_own_group(_serve(env, tmp_path), env) as proc:
        assert proc.stderr is not None
        run = _run_past_its_first_event(proc)
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C
        said = []
        for line in proc.stderr:
            said.append(line)
            if "Shutting down" in line:  # its shutdown begins (its runs are held)
                break
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C again
        err = "".join(said) + proc.stderr.read()
        proc.wait()
    assert proc.returncode == -signal.SIGINT, (proc.returncode, err)
    assert "Traceback" not in err, err
    (last,) = [line for line in err.splitlines() if "again" in line]
    assert "SIGINT again: stopped at once" in last and "interrupted at the next start" in last
    assert _group_ends(run["pid"])  # (and cli_env checks that nothing of the test is left)
    with in_own_group(_serve(env, tmp_path), {**env, "CURSOR_AGENT_SIM_FAULT": ""}) as again:
        with httpx.Client(base_url=_url(again), headers=headers, timeout=30) as client:
            ended = client.get(f"/api/runs/{run['id']}").json()
        os.killpg(again.pid, signal.SIGTERM)
        again.wait()
    # marked by the next start (ServerRestart), or already by the shutdown before it was cut
    # short (it marks a run as it asks its agent to stop): either way, never left running
    assert ended["status"] == "interrupted", ended
    assert ended["error_type"] in ("ServerRestart", None), ended


WORKER = """
import asyncio, logging, signal, sys, threading, time
import cursor_agent_api.server.worker as queue_worker


def tear_down():  # as the worker's loop ends: a thread its executor waits for
    print("tearing down", flush=True)
    if {self_signalled}:  # the kernel gives the signals to this thread, not to the main one
        main = threading.main_thread().native_id
        for _ in range(6000):  # once the main thread sleeps in its loop's wait (a minute at most)
            with open(f"/proc/self/task/{main}/wchan") as state:
                if "epoll" in state.read():
                    break
            time.sleep(0.01)
        signal.pthread_kill(threading.get_ident(), signal.SIGTERM)
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)
    sys.stdin.read()


async def worked(settings, on_ready=None, on_signal=None):  # the worker's run, its cleanup over
    on_ready()
    if {stalled}:  # its stderr's reader stalls: the test fills the pipe, then says so
        print("fill stderr", flush=True)
        sys.stdin.readline()
    logging.getLogger("cursor_agent_api.worker").warning("the cleanup's last log line")
    loop = asyncio.get_running_loop()
    loop.call_soon(loop.run_in_executor, None, tear_down)  # (once run() has returned)
    if {fails}:
        raise ValueError("no such queue")  # it stopped with an error


queue_worker.serve_worker = worked
from cursor_agent_api.console_script import main
main(["worker", "--simulate", "--root", ".", "--name", "w-teardown"])
"""


def _worker(*, fails: bool = False, stalled: bool = False, self_signalled: bool = False) -> list[str]:
    code = (WORKER.replace("{fails}", str(fails)).replace("{stalled}", str(stalled))
            .replace("{self_signalled}", str(self_signalled)))
    return [sys.executable, "-c", code]


def _until(proc: subprocess.Popen[str], mark: str) -> list[str]:
    """The lines of ``proc``'s stdout up to the one with ``mark``."""
    assert proc.stdout is not None
    said = []
    for line in proc.stdout:
        said.append(line.rstrip("\n"))
        if mark in line:
            return said
    raise AssertionError(f"its output ended before {mark!r}: {said}")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP],
                         ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_signal_during_the_workers_teardown_waits_for_its_last_lines(
        cli_env: dict[str, str], sig: int) -> None:
    """After the worker's cleanup (its own signal handling over), as its event loop and its
    log writer end, its stderr's reader stalled (a full pipe: its last log line still
    queued in LogLines): a SIGTERM or SIGHUP there killed it, that line lost. It is held:
    once the reader reads again the line is written (within LogLines' bound), then the
    worker's last line, then it dies from the signal. (A Ctrl-C there was
    ``KeyboardInterrupt``: the queued line was written as it unwound; it now ends the same
    way, with the worker's last line.)"""
    import fcntl

    env = {**cli_env, "CURSOR_AGENT_API_DATABASE_URL": "postgresql+asyncpg://u@127.0.0.1:9/db"}
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)
    try:
        with in_own_group(_worker(stalled=True), env, stdin=subprocess.PIPE,
                          stderr=write_end) as proc:
            os.close(write_end)
            write_end = -1
            assert proc.stdin is not None and proc.stdout is not None
            said = _until(proc, "fill stderr")
            _fill(read_end)  # its stderr's reader stalls: the log line waits in its queue
            proc.stdin.write("go on\n")
            proc.stdin.flush()
            said += _until(proc, "tearing down")
            proc.send_signal(sig)
            proc.stdin.close()  # the teardown ends
            with os.fdopen(read_end, "rb") as stderr:  # the reader reads again
                read_end = -1
                err = stderr.read().decode().replace("x", "")  # (the filling)
            out = said + proc.stdout.read().splitlines()
            proc.wait()
    finally:
        for fd in (read_end, write_end):
            if fd >= 0:
                os.close(fd)
    assert proc.returncode == -sig, (proc.returncode, out, err)
    assert "the cleanup's last log line" in err and "Traceback" not in err, err
    assert out[-1] == "cursor-agent-api worker w-teardown stopped", out


def test_one_more_signal_while_one_is_held_ends_the_worker_at_once(
        cli_env: dict[str, str]) -> None:
    """A teardown that cannot end (here: it waits for input that never comes) never keeps
    the worker running: the next signal ends it, from that signal. (Both are sent at once
    here: Python runs the handlers of two pending signals in their numbers' order, so
    either may be the one held.) The kernel gives the second one to another thread when
    the main one has the first still pending: here, often, the teardown's, in its read
    (see the next test, where that is certain)."""
    env = {**cli_env, "CURSOR_AGENT_API_DATABASE_URL": "postgresql+asyncpg://u@127.0.0.1:9/db"}
    with in_own_group(_worker(), env, stdin=subprocess.PIPE) as proc:
        assert proc.stderr is not None
        out = _until(proc, "tearing down")
        proc.send_signal(signal.SIGTERM)  # one is held, the other ends it
        proc.send_signal(signal.SIGINT)
        assert proc.stdout is not None
        out += proc.stdout.read().splitlines()
        err = proc.stderr.read()
        proc.wait()  # (its standard input still open: the teardown never ended)
    assert proc.returncode in (-signal.SIGINT, -signal.SIGTERM), (proc.returncode, err)
    assert "Traceback" not in err and "stopped" not in out[-1], (out, err)


def test_signals_the_kernel_gives_to_a_teardown_thread_still_reach_the_worker(
        cli_env: dict[str, str]) -> None:
    """The kernel may give a process's signal to any thread that does not block it; Python
    runs its handler in the main thread, once that thread wakes. At the worker's end the
    main thread waits in its event loop for the loop's executor's threads to end (asyncio's
    teardown): a signal given to one of them, in a read that never ends, woke nothing, so a
    held signal and the death at a second one waited for that thread's end: for ever (here
    the worker hung to the test's guard). Here the teardown's thread takes both signals
    (``pthread_kill``: where the kernel puts a process's signal when it picks that thread);
    the main thread is woken by each, holds the first and dies from the second."""
    env = {**cli_env, "CURSOR_AGENT_API_DATABASE_URL": "postgresql+asyncpg://u@127.0.0.1:9/db"}
    with in_own_group(_worker(self_signalled=True), env, stdin=subprocess.PIPE) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        _until(proc, "tearing down")
        try:
            proc.wait(60)  # (a hang guard: it hung for ever; its standard input stays open)
        except subprocess.TimeoutExpired:
            pytest.fail("the signals given to the teardown's thread did not end the worker")
        out, err = proc.stdout.read(), proc.stderr.read()
    # Python runs pending handlers in their numbers' order: both pending, SIGINT is held
    assert proc.returncode in (-signal.SIGINT, -signal.SIGTERM), (proc.returncode, out, err)
    assert "Traceback" not in err and "stopped" not in out, (out, err)


def test_serve_second_ctrl_c_with_stderr_a_full_pipe_ends_it_at_once(
        cli_env: dict[str, str], tmp_path: Path) -> None:
    """Review: the second Ctrl-C's line was written with a blocking write inside the signal
    handler: stderr a full pipe nobody reads, the server hung there for ever (a third Ctrl-C
    did nothing). The line is skipped when it cannot be written at once; the server dies
    from the Ctrl-C all the same."""
    import fcntl

    env = {**cli_env, "CURSOR_AGENT_API_TOKEN": TOKEN, "CURSOR_AGENT_SIM_FAULT": "slow,ignore-sigterm",
           "CURSOR_AGENT_SIM_DELAY": "1"}
    read_end, write_end = os.pipe()
    try:
        fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)
        with in_own_group(_serve(env, tmp_path), env, stderr=write_end) as proc:
            os.close(write_end)
            write_end = -1
            run = _run_past_its_first_event(proc)
            os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: it shuts down (its runs held)
            said = b""
            while b"Shutting down" not in said:  # (read until then)
                chunk = os.read(read_end, 4096)
                assert chunk, said
                said += chunk
            _fill(read_end)  # nobody reads it from now
            os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C again
            try:
                proc.wait(60)  # (a hang guard: it hung for ever)
            except subprocess.TimeoutExpired:
                pytest.fail("the second Ctrl-C did not end serve (its stderr a full pipe)")
        assert proc.returncode == -signal.SIGINT, proc.returncode
        assert _group_ends(run["pid"])
    finally:
        for fd in (read_end, write_end):
            if fd >= 0:
                os.close(fd)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP],
                         ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_signal_during_the_teardown_of_a_worker_stopped_by_an_error(
        cli_env: dict[str, str], sig: int) -> None:
    """Review: the worker stopped with an error (its line, click's ``Error: …``) and a
    signal came during its teardown: it exited 1, the signal held was lost (a shell loop
    went on). The error's line is written, then it dies from the signal."""
    env = {**cli_env, "CURSOR_AGENT_API_DATABASE_URL": "postgresql+asyncpg://u@127.0.0.1:9/db"}
    with in_own_group(_worker(fails=True), env, stdin=subprocess.PIPE) as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        _until(proc, "tearing down")
        proc.send_signal(sig)
        proc.stdin.close()  # the teardown ends
        proc.stdout.read()
        err = proc.stderr.read()
        proc.wait()
    assert proc.returncode == -sig, (proc.returncode, err)
    assert "Error: the worker stopped: no such queue (ValueError)\n" in err, err
    assert "Traceback" not in err, err


SIGNALLED_THEN_FAILED = """
import signal
import cursor_agent_api.server.worker as queue_worker


async def run(self):  # a SIGTERM began its drain, then its database went away
    self.stopped_by = signal.SIGTERM  # (what its handler keeps: the first signal)
    self.on_ready()  # (its stderr a full disk: its warning, if any, fails here: an error too)
    raise ConnectionError("the database went away")


queue_worker.Worker.run = run
from cursor_agent_api.console_script import main
main(["worker", "--simulate", "--root", ".", "--name", "w-failed"])
"""


def test_a_worker_stopped_by_a_signal_then_by_an_error_dies_from_the_signal(
        cli_env: dict[str, str]) -> None:
    """Review: a SIGTERM began the worker's drain, then the worker stopped with an error
    (its database lost during the drain): it exited 1, the signal lost (a shell loop around
    it went on after a Ctrl-C). The error's line is written, then it dies from the signal
    that stopped it, without the "stopped" line (the error said how it stopped)."""
    env = {**cli_env, "CURSOR_AGENT_API_DATABASE_URL": "postgresql+asyncpg://u@127.0.0.1:9/db"}
    with in_own_group([sys.executable, "-c", SIGNALLED_THEN_FAILED], env) as proc:
        out, err = proc.communicate()
    assert proc.returncode == -signal.SIGTERM, (proc.returncode, out, err)
    assert err.count("Error: the worker stopped: ") == 1 and "ConnectionError" in err, err
    assert "Traceback" not in err and "stopped" not in out.splitlines()[-1], (out, err)


def test_a_worker_stopped_by_a_signal_then_an_error_it_cannot_say_dies_from_the_signal(
        cli_env: dict[str, str]) -> None:
    """Review: its stderr a full disk (or a closed pipe), the error's line could not be
    written: that ``OSError`` exited 1, the signal lost again. It dies from the signal."""
    env = {**cli_env, "CURSOR_AGENT_API_DATABASE_URL": "postgresql+asyncpg://u@127.0.0.1:9/db"}
    full = open("/dev/full", "w")  # noqa: SIM115 (its descriptor the worker's stderr)
    with full, in_own_group([sys.executable, "-c", SIGNALLED_THEN_FAILED], env,
                            stderr=full.fileno()) as proc:
        proc.communicate()
    assert proc.returncode == -signal.SIGTERM, proc.returncode


LOST_THEN_SIGNALLED = """
import asyncio, os, signal
import cursor_agent_api.server.worker as queue_worker


async def run(self):  # its ready line cannot be written; a signal comes as it stops
    heard = asyncio.Event()

    def signalled(signum):
        self._signalled(signum)  # (the worker's own: it keeps the first)
        heard.set()

    with queue_worker._signals(signalled):
        try:
            self.on_ready()
        except OSError:
            os.kill(os.getpid(), signal.SIGTERM)
            await heard.wait()
            raise


queue_worker.Worker.run = run
from cursor_agent_api.console_script import main
main(["worker", "--simulate", "--root", ".", "--name", "w-lost"])
"""


@pytest.mark.parametrize("stdout", ["a full disk", "a closed pipe"])
def test_a_worker_whose_stdout_was_lost_then_signalled_dies_from_the_signal(
        cli_env: dict[str, str], stdout: str) -> None:
    """Review: its ready line could not be written (stdout a full disk, a closed pipe), and a
    SIGTERM came while it stopped for that: it exited 1, the signal lost (a shell loop around
    it went on). It says what it can (the full disk's line; a closed pipe, nothing), then dies
    from the signal."""
    env = {**cli_env, "CURSOR_AGENT_API_DATABASE_URL": "postgresql+asyncpg://u@127.0.0.1:9/db"}
    if stdout == "a full disk":
        out = os.open("/dev/full", os.O_WRONLY)
    else:
        read_end, out = os.pipe()
        os.close(read_end)
    try:
        proc = subprocess.Popen([sys.executable, "-c", LOST_THEN_SIGNALLED], cwd=env["TEST_WS"],
                                env=env, text=True, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.PIPE, start_new_session=True)
    finally:
        os.close(out)
    try:
        _, err = proc.communicate(timeout=120)  # (a hang guard)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == -signal.SIGTERM, (proc.returncode, err)
    assert "Traceback" not in err, err
    said = [line for line in err.splitlines() if line.startswith("Error")]
    if stdout == "a full disk":
        assert said == ["Error: cannot write the output: No space left on device"], err
    else:
        assert said == [], err
