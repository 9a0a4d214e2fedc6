"""Shared test configuration: every test leaves the process's signal handling as it found it.

The Ctrl-C tests (here and in the processes the tests start, which inherit an ignored or
blocked signal) need SIGINT to raise ``KeyboardInterrupt``. A test that changes its
disposition or blocks it fails itself, instead of hanging whichever test runs next in the
same worker.
"""

from __future__ import annotations

import atexit
import fcntl
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

_WATCHED = (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD)

# The tests that can reach PostgreSQL are marked ``postgresql``: scripts/test.sh's PostgreSQL
# pass runs only those (``-m postgresql``), since every other test runs the same with or without
# CURSOR_AGENT_API_TEST_DATABASE_URL and would only repeat the SQLite pass. A test gets a
# PostgreSQL database from a fixture (tests/server's and tests/distributed's ``db_url``,
# tests/cli's ``postgres_url``) or from the distributed mode's cluster (all of tests/distributed);
# a module whose text names the variable (``PG_ENV``) may read it itself, and is kept whole. A
# test that takes one of those fixtures another way (``request.getfixturevalue``) is not seen
# by this rule: it is marked by hand, and the fixtures refuse an unmarked test (pg_marked), so
# none runs in neither pass.
_PG_FIXTURES = frozenset({"db_url", "postgres_url"})
_PG_NAMES = ("PG_ENV", "CURSOR_AGENT_API_TEST_DATABASE_URL")
_DISTRIBUTED = Path(__file__).parent / "distributed"


def _can_reach_postgresql(item: pytest.Item, names_it: dict[Path, bool]) -> bool:
    if _PG_FIXTURES.intersection(getattr(item, "fixturenames", ())):
        return True
    path = Path(item.path)
    if _DISTRIBUTED in path.parents:
        return True
    if path not in names_it:
        text = path.read_text(errors="replace") if path.suffix == ".py" else ""
        names_it[path] = any(name in text for name in _PG_NAMES)
    return names_it[path]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    names_it: dict[Path, bool] = {}
    for item in items:
        if _can_reach_postgresql(item, names_it):
            item.add_marker(pytest.mark.postgresql)


@pytest.fixture
def pg_marked(request: pytest.FixtureRequest) -> None:
    """Taken by the fixtures that give a test a PostgreSQL database: a test not marked
    ``postgresql`` (it took one through ``request.getfixturevalue``, which the marking rule
    cannot see) fails, saying so, in both passes: otherwise the PostgreSQL pass would leave it
    out and the SQLite pass skip it."""
    if request.node.get_closest_marker("postgresql") is None:
        pytest.fail("this test takes a PostgreSQL database through request.getfixturevalue: mark "
                    "it @pytest.mark.postgresql (or pytest.param(..., marks=pytest.mark.postgresql)), "
                    "or scripts/test.sh's PostgreSQL pass leaves it out (tests/conftest.py)")

# No test writes into the user's own per-user data directory (~/.local/share: the simulator's
# chats, sessions and trusted folders, the tools' journals, a default server database): each
# process of the suite, and every process it starts, gets one of its own, removed at its end.
# A test that needs another sets its own.
_DATA_HOME = tempfile.mkdtemp(prefix="cursor-agent-api-tests-data-")
os.environ["XDG_DATA_HOME"] = _DATA_HOME
atexit.register(shutil.rmtree, _DATA_HOME, True)

# A suite started in the background of a non-interactive shell (`cmd &`, nohup) inherits
# SIGINT ignored, and so would every process the tests start: the Ctrl-C tests would then
# wait for an interrupt that never comes. They test Ctrl-C, so the suite restores it.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _signal_state() -> tuple[object, ...]:
    handlers = tuple(signal.getsignal(s) for s in _WATCHED)
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, []) if \
        threading.current_thread() is threading.main_thread() else frozenset()
    return handlers, frozenset(blocked)


@pytest.fixture(autouse=True)
def _signals_restored() -> Iterator[None]:
    before = _signal_state()
    yield
    after = _signal_state()
    if after != before:
        for sig, handler in zip(_WATCHED, before[0], strict=True):
            signal.signal(sig, handler)  # type: ignore[arg-type]
        signal.pthread_sigmask(signal.SIG_SETMASK, before[1])  # type: ignore[arg-type]
        pytest.fail(f"the test left the process's signal handling changed: {before} -> {after}")


@pytest.fixture
def stand_in_agent(tmp_path: Path) -> Callable[..., Path]:
    """``make(body, name="agent.sh")``: an executable stand-in for the agent in ``tmp_path``, a
    shell script that reads its prompt (stdin, to the end, as the CLI does) and then runs
    ``body`` (its output lines, its exit). Returns its path (``agent_binary=str(path)``)."""

    def make(body: str, name: str = "agent.sh") -> Path:
        path = tmp_path / name
        path.write_text(f"#!/bin/sh\ncat >/dev/null\n{body}\n")
        path.chmod(0o755)
        return path

    return make


@pytest.fixture
def on_lock_wait(monkeypatch: pytest.MonkeyPatch) -> Callable[[Callable[[], None]], None]:
    """``on_lock_wait(told)``: from then on, an ``flock`` that finds the lock held elsewhere
    first calls ``told()`` (which may look at who waits), then waits, or fails, as asked. So a
    test holding one side of a lock knows when the other waits for it (or polls for it), and
    lets the first go on. Set before a ``fork``, it watches the children's locks too."""
    real_flock = fcntl.flock

    def watch(told: Callable[[], None]) -> None:
        def flock(fd: int, op: int) -> None:
            try:
                real_flock(fd, op | fcntl.LOCK_NB)
            except BlockingIOError:
                told()
                if op & fcntl.LOCK_NB:
                    raise
                real_flock(fd, op)

        monkeypatch.setattr(fcntl, "flock", flock)

    return watch
