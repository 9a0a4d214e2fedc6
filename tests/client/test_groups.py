"""The one /proc reader and the one group stopper (``runtime/groups.py``), on real processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from cursor_agent_api.runtime import groups

pytestmark = pytest.mark.skipif(not groups.HAVE_PROC, reason="reads /proc (Linux)")

# a child that renames itself (comm with a space and parentheses), ignores SIGTERM if asked,
# says it is ready, then sleeps
_CHILD = """
import signal, sys, time
open('/proc/self/comm', 'w').write('a) b (c')
if sys.argv[1] == 'stubborn':
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
print('ready', flush=True)
time.sleep(120)
"""


def _spawn(kind: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, kind], stdout=subprocess.PIPE,
                            start_new_session=True)
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"ready\n"
    return proc


@pytest.fixture
def spawned() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()


def test_stat_fields_survive_a_command_name_with_parentheses(
        spawned: list[subprocess.Popen[bytes]]) -> None:
    proc = _spawn("plain")
    spawned.append(proc)
    fields = groups.stat_fields(proc.pid)
    assert fields is not None
    assert int(fields[2]) == proc.pid  # its own group
    assert groups.start_time(proc.pid) == int(fields[19])
    assert groups.group_members(proc.pid) == [proc.pid]
    start = groups.start_time(proc.pid)
    assert start is not None
    assert groups.group_members(proc.pid, not_before=start + 1) == []


def test_a_zombie_is_not_a_member(spawned: list[subprocess.Popen[bytes]]) -> None:
    proc = _spawn("plain")
    spawned.append(proc)
    os.kill(proc.pid, signal.SIGKILL)
    while (groups.stat_fields(proc.pid) or [b"Z"])[0] != b"Z":
        time.sleep(0.01)
    assert groups.group_members(proc.pid) == []
    assert not groups.group_alive(proc.pid)


def test_stop_groups_escalates_to_sigkill_and_stops_several_groups(
        spawned: list[subprocess.Popen[bytes]]) -> None:
    polite, stubborn = _spawn("plain"), _spawn("stubborn")
    spawned += [polite, stubborn]
    assert groups.stop_groups([polite.pid, stubborn.pid], grace=0.5) == 2
    assert polite.wait(30) == -signal.SIGTERM
    assert stubborn.wait(30) == -signal.SIGKILL


def test_stop_groups_with_not_before_spares_older_processes(
        spawned: list[subprocess.Popen[bytes]]) -> None:
    proc = _spawn("plain")
    spawned.append(proc)
    start = groups.start_time(proc.pid)
    assert start is not None
    assert groups.stop_groups([proc.pid], grace=0.5, not_before=start + 1) == 0
    assert proc.poll() is None
    assert groups.stop_groups([proc.pid], grace=0.5, not_before=start) == 1
    assert proc.wait(30) == -signal.SIGTERM


def test_stop_groups_with_a_fake_clock_never_sleeps_past_grace() -> None:
    # nothing alive: returns at once, without sleeping
    def no_sleep(_: float) -> None:
        raise AssertionError("slept")

    assert groups.stop_groups([2 ** 22 + 12345], grace=5.0, sleep=no_sleep) == 0
