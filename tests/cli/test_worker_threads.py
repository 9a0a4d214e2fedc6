"""The worker's threads leave its ending signals to the main thread where they can.

The kernel gives a process's signal to any thread that does not block it; Python runs the
handler only in the main thread, once it runs again. After its event loop, the worker's
main thread joins its log lines' writer (a stalled stderr: up to ``LogLines``' bound): a
signal given to that thread, stuck in its write, waited for that bound. The writer is now
born with Ctrl-C, SIGTERM and SIGHUP blocked, so the kernel gives them to the main thread.
(The loop's executor's threads keep them: their calls start ``git``, whose hooks would
inherit the blocked signals; a signal they take wakes the loop instead: see
``test_second_signal``.)"""

from __future__ import annotations

import signal
import sys

from ctrl_c_in_a_callback import ctrl_c_in_a_callback
from test_signal_death import in_own_group

PROGRAM = """
import threading
import cursor_agent_api.server.worker as queue_worker


def blocked(thread):  # the signals this thread blocks, as the kernel sees them
    with open(f"/proc/self/task/{thread.native_id}/status") as status:
        mask = next(line for line in status if line.startswith("SigBlk:"))
    return int(mask.split()[1], 16)


async def worked(settings, on_ready=None, on_signal=None):
    on_ready()
    (writer,) = [t for t in threading.enumerate() if t.name == "log-lines"]
    print("writer blocks", blocked(writer), "main blocks", blocked(threading.main_thread()))


queue_worker.serve_worker = worked
from cursor_agent_api.console_script import main
main(["worker", "--simulate", "--root", ".", "--name", "w-threads"])
"""


def test_the_log_writer_leaves_the_ending_signals_to_the_main_thread(
        cli_env: dict[str, str]) -> None:
    env = {**cli_env, "CURSOR_AGENT_API_DATABASE_URL": "postgresql+asyncpg://u@127.0.0.1:9/db"}
    with in_own_group([sys.executable, "-c", PROGRAM], env) as proc:
        out, err = proc.communicate(timeout=120)  # (a hang guard)
    assert proc.returncode == 0, (out, err)
    (said,) = [line for line in out.splitlines() if line.startswith("writer blocks")]
    writer, main = (int(n) for n in said.split()[2::3])
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        bit = 1 << (sig - 1)
        assert writer & bit and not main & bit, (signal.Signals(sig).name, said)


def test_the_workers_own_signal_handling_sets_the_commands_wakeup_back() -> None:
    """The worker's signal handlers (the loop's) replace the signals' wakeup file descriptor
    while it runs; as they end (its cleanup over), the command's one, which wakes the loop
    whichever thread takes a signal, is set back: it was left unset, and asyncio's teardown
    that follows slept through a signal another thread took."""
    import asyncio

    from cursor_agent_api.server.worker import _signals
    from cursor_agent_api.signal_exit import SignalWake

    async def around() -> tuple[int, int]:
        wake = SignalWake()
        wake.watch(asyncio.get_running_loop())
        try:
            with _signals(lambda signum: None):
                pass
            ours = signal.set_wakeup_fd(-1)
            signal.set_wakeup_fd(ours)
            return ours, wake.fd
        finally:
            wake.close()

    after, ours = asyncio.run(around())
    assert after == ours


IN_A_THREAD = """
import threading
from cursor_agent_api.cli import main

raised = []


def run():
    try:
        main(["worker", "--simulate", "--root", ".", "--name", "w-thread"], standalone_mode=False)
    except BaseException as e:
        raised.append(e)


thread = threading.Thread(target=run)
thread.start()
thread.join(100)
print("raised", repr(raised))
"""


def test_the_worker_command_called_from_another_thread_says_its_own_error(
        cli_env: dict[str, str]) -> None:
    """``main()`` is a plain function, callable from any thread; there, no signal handler
    runs and the wake is not set. It was: ``set_wakeup_fd only works in main thread``, said as
    the database's error (review 33)."""
    env = {**cli_env, "CURSOR_AGENT_API_DATABASE_URL": "postgresql+asyncpg://u@127.0.0.1:9/db"}
    with in_own_group([sys.executable, "-c", IN_A_THREAD], env) as proc:
        out, err = proc.communicate(timeout=120)  # (a hang guard)
    assert proc.returncode == 0, (out, err)
    (said,) = [line for line in out.splitlines() if line.startswith("raised")]
    assert "cannot open the database" in said and "Connect call failed" in said, said
    assert "set_wakeup_fd" not in said + err, (said, err)


CTRL_C_IN_A_CALLBACK = ctrl_c_in_a_callback(
    "cursor_agent_api.server.worker", "serve_worker",
    ["worker", "--simulate", "--root", ".", "--name", "w-ctrl-c"])


def test_a_ctrl_c_inside_a_callback_as_the_worker_starts_is_no_traceback(
        cli_env: dict[str, str]) -> None:
    """Before the worker's own handlers, Ctrl-C is ``asyncio.run``'s, which cancelled its task
    from inside whichever callback the signal interrupted: as a connection completed, its
    ``set_result`` raised ``InvalidStateError``, logged with a traceback (the fresh clone's
    ``test_ctrl_c_while_a_worker_starts_dies_from_the_sigint``, once). The cancel is now done
    by the loop between callbacks; the worker dies from the SIGINT, quietly."""
    env = {**cli_env, "CURSOR_AGENT_API_DATABASE_URL": "postgresql+asyncpg://u@127.0.0.1:9/db"}
    with in_own_group([sys.executable, "-c", CTRL_C_IN_A_CALLBACK], env) as proc:
        out, err = proc.communicate(timeout=120)  # (a hang guard)
    assert proc.returncode == -signal.SIGINT, (proc.returncode, out, err)
    assert "connected" in out, (out, err)
    assert "Traceback" not in err and "InvalidStateError" not in err, err
