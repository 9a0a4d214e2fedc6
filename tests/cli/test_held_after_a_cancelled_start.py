"""A command whose start a signal cancelled (``cancelled_by_signals``) is stopping: a second
signal during its teardown (``held_signals``, the worker's ``finally``) ends it at once, as
documented (review 40: it was held, and only a third ended it; the teardown may wait for an
executor's thread, on Python 3.11 without a limit). The worker's shape, in a program of its own."""

from __future__ import annotations

import signal
import subprocess
import sys

PROGRAM = """
import asyncio, os, signal, time
from cursor_agent_api.signal_exit import (SignalExit, cancelled_by_signals, exit_by_signal,
                                          held_signals, run_as_program)

async def start():
    with cancelled_by_signals("demo"):
        os.kill(os.getpid(), signal.SIGTERM)  # the first: the start cancelled
        await asyncio.sleep(60)

try:
    with run_as_program():
        try:
            asyncio.run(start())
        finally:
            with held_signals():  # the teardown
                print("teardown", flush=True)
                time.sleep(30)  # (a thread waited for)
                print("after", flush=True)
except SignalExit as ended:
    exit_by_signal(ended.signum)
"""


def test_a_second_signal_in_the_teardown_after_a_cancelled_start_ends_it_at_once() -> None:
    with subprocess.Popen([sys.executable, "-c", PROGRAM], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "teardown\n"
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)  # (a hang guard)
    assert proc.returncode == -signal.SIGTERM, (proc.returncode, out, err)
    assert "after" not in out, out
    assert "Traceback" not in err, err
