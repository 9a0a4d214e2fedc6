"""An approvals file (``<data dir>/projects/<slug>/mcp-approvals.json``) that is not a regular
file of a sane size — a FIFO, a directory, a socket, a huge file — refuses the turn with
:class:`InjectionError` (as the workspace's ``.cursor/mcp.json`` does), changes nothing and
never blocks; taking the entries out, or a later turn's sweep, meeting such a file is one
warning. The simulator's readers of that file (and of ``mcp.json``/``cli.json``) do not block on
a FIFO either."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_api import CursorAgentClient
from cursor_agent_api.runtime.argv import build_env
from cursor_agent_api.sim.mcp_config import configured_servers, recorded_approvals, tool_allowed
from cursor_agent_api.tools.approvals import ApprovalInjection, approvals_file
from cursor_agent_api.tools.inject import InjectionError

from .conftest import TOOLS
from .test_approvals import _enter_and_die


def _listing(directory: Path) -> list[tuple[str, int, int]]:
    """Every path under ``directory`` with its mode and size, from ``lstat`` (nothing opened)."""
    out = []
    for root, dirs, files in os.walk(directory):
        for name in dirs + files:
            st = os.lstat(os.path.join(root, name))
            out.append((os.path.relpath(os.path.join(root, name), directory), st.st_mode, st.st_size))
    return sorted(out)


def _returns(fn: Callable[[], Any], fifos: list[Path]) -> Any:
    """``fn()`` in a thread: what it returned or raised. If it is still blocked after 30 s
    (reading a FIFO), each FIFO gets a writer that closes at once, so the read ends, and the
    test fails (a hang guard: a fixed build answers at once)."""
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as e:
            out.append(e)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(30)
    if thread.is_alive():
        for fifo in fifos:
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(30)
        pytest.fail("blocked reading a FIFO")
    return out[0]


HUGE = 64 << 20
"""Far more than an approvals file holds (a few dozen bytes a key): not read at all."""


def _make(path: Path, kind: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
        (path / "README").write_text("the user's")
    elif kind == "socket":  # bound where its path is short enough, then moved in place
        short = tempfile.mkdtemp(dir="/tmp")
        with socket.socket(socket.AF_UNIX) as s:
            s.bind(os.path.join(short, "s"))
        os.rename(os.path.join(short, "s"), path)
        os.rmdir(short)
    else:  # huge: sparse, nothing is allocated
        with open(path, "wb") as f:
            f.truncate(HUGE)


KINDS = {"fifo": "is a FIFO, not a file", "directory": "is a directory, not a file",
         "socket": "is a socket, not a file", "huge": "bytes, more than"}


@pytest.mark.parametrize("kind", list(KINDS))
def test_such_a_file_refuses_the_turn_and_changes_nothing(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "data" / "projects" / "ws" / "mcp-approvals.json"
    _make(path, kind)
    before = _listing(tmp_path / "data")
    e = _returns(lambda: ApprovalInjection(path, ["app-1"], root=tmp_path / "j").enter(), [path])
    assert isinstance(e, InjectionError), repr(e)
    assert KINDS[kind] in str(e) and "nothing was changed" in str(e) and str(path) in str(e)
    assert _listing(tmp_path / "data") == before


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_reader_refuses_it_too(tmp_path: Path, kind: str) -> None:
    """Put in place after the check, before the read (under the journal's lock)."""
    from cursor_agent_api.tools.approvals import _read_keys

    path = tmp_path / "projects" / "ws" / "mcp-approvals.json"
    _make(path, kind)
    e = _returns(lambda: _read_keys(path), [path])
    assert isinstance(e, InjectionError) and KINDS[kind].split(",")[0] in str(e), repr(e)


def test_a_slug_directory_that_is_a_file_refuses_the_turn(tmp_path: Path) -> None:
    slug = tmp_path / "data" / "projects" / "ws"
    slug.parent.mkdir(parents=True)
    slug.write_text("the user's")
    e = _returns(lambda: ApprovalInjection(slug / "mcp-approvals.json", ["app-1"],
                                           root=tmp_path / "j").enter(), [])
    assert isinstance(e, InjectionError) and "is a file, not a directory" in str(e), repr(e)
    assert slug.read_text() == "the user's"


def test_a_fifo_planted_during_the_turn_is_one_warning_when_it_ends(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "data" / "projects" / "ws" / "mcp-approvals.json"
    injection = ApprovalInjection(path, ["app-1"], root=tmp_path / "j")
    injection.enter()
    path.unlink()
    os.mkfifo(path)
    with caplog.at_level(logging.WARNING, logger="cursor_agent_api.tools"):
        assert _returns(injection.exit, [path]) is None
    (line,) = [r for r in caplog.records if "could not take" in r.getMessage()]
    assert "is a FIFO" in line.getMessage() and line.exc_info is None
    assert os.path.exists(path) and not path.is_file()  # the user's FIFO stays


def test_a_fifo_in_place_of_a_dead_turns_file_does_not_block_a_later_turn(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The sweep (every turn runs it) meets a dead holder whose file became a FIFO."""
    dead_path = tmp_path / "data" / "projects" / "old" / "mcp-approvals.json"
    _enter_and_die(dead_path, tmp_path / "j")
    dead_path.unlink()
    os.mkfifo(dead_path)
    path = tmp_path / "data" / "projects" / "ws" / "mcp-approvals.json"
    with caplog.at_level(logging.WARNING, logger="cursor_agent_api.tools"):
        later = ApprovalInjection(path, ["app-1"], root=tmp_path / "j")
        assert _returns(later.enter, [dead_path]) is None
        later.exit()
    assert "could not clean the approval journal" in caplog.text and "is a FIFO" in caplog.text


def test_the_client_gets_an_injection_error_and_the_workspace_is_restored(
        sim: Callable[..., Any], cursor_sim_workspace: Path) -> None:
    """The finding: a tools turn whose approvals file is a FIFO blocked before the agent
    started. Now the library's error, the workspace's ``.cursor`` taken back, nothing blocked."""
    config = sim()
    path = approvals_file(build_env(config), str(cursor_sim_workspace))  # the agent's data dir
    _make(path, "fifo")
    before = _listing(cursor_sim_workspace)

    def query() -> Any:
        with CursorAgentClient(config, tools=TOOLS) as client:
            return client.query("what is 6 * 7")

    e = _returns(query, [path])
    assert isinstance(e, InjectionError) and "is a FIFO" in str(e), repr(e)
    assert _listing(cursor_sim_workspace) == before


def test_the_simulator_does_not_block_on_a_fifo(tmp_path: Path) -> None:
    """Its approvals reader, and its ``mcp.json``/``cli.json`` readers, take a FIFO for an
    unreadable file: nothing recorded, nothing configured, nothing allowed."""
    ws, config = tmp_path / "ws", tmp_path / "config"
    approvals = config / "projects" / "ws" / "mcp-approvals.json"
    fifos = [approvals, ws / ".cursor" / "mcp.json", ws / ".cursor" / "cli.json",
             config / "mcp.json", config / "cli-config.json"]
    for fifo in fifos:
        _make(fifo, "fifo")
    assert _returns(lambda: recorded_approvals(config, "/ws"), fifos) == set()
    assert _returns(lambda: configured_servers(ws, config), fifos) == {}
    assert _returns(lambda: tool_allowed("s", "t", ws, config, force=False), fifos) is False
