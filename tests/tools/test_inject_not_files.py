"""A workspace whose ``.cursor`` is not a directory, or whose ``.cursor/mcp.json``/``cli.json``
is not a regular file (a directory — git can hold ``.cursor/mcp.json/README`` —, a FIFO): the
turn is refused with :class:`InjectionError` (a ``CursorAgentError``), nothing is changed, and
a FIFO never blocks it."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_api import CursorAgentClient
from cursor_agent_api.errors import CursorAgentError
from cursor_agent_api.tools.inject import InjectionError, WorkspaceInjection

from .conftest import TOOLS, tree_hash

SERVERS = {"app": {"url": "http://127.0.0.1:9/mcp"}}
ALLOW = ["Mcp(app:ping)"]


def _listing(directory: Path) -> list[tuple[str, int, int]]:
    """Every path under ``directory`` with its mode and size, from ``lstat`` (nothing opened:
    a FIFO must not be read)."""
    out = []
    for root, dirs, files in os.walk(directory):
        for name in sorted(dirs + files):
            st = os.lstat(os.path.join(root, name))
            out.append((os.path.relpath(os.path.join(root, name), directory), st.st_mode, st.st_size))
    return sorted(out)


def _enter(ws: Path, root: Path) -> BaseException | None:
    """``WorkspaceInjection.enter`` in a thread; what it raised. If it is still blocked after
    30 s (reading a FIFO), the FIFO gets a writer that closes at once, so the read ends, and
    the test fails (a hang guard: a fixed build answers at once)."""
    raised: list[BaseException | None] = []

    def run() -> None:
        injection = WorkspaceInjection(ws, SERVERS, ALLOW, root=root)
        try:
            injection.enter()
        except BaseException as e:
            raised.append(e)
        else:
            raised.append(None)
            injection.exit()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(30)
    if thread.is_alive():
        for fifo in (ws / ".cursor" / "mcp.json", ws / ".cursor" / "cli.json"):
            if fifo.exists() and not fifo.is_file() and not fifo.is_dir():
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(30)
        pytest.fail("the injection blocked reading a FIFO")
    return raised[0]


@pytest.mark.parametrize("name", ["mcp.json", "cli.json"])
def test_a_directory_in_place_of_a_file_is_refused(tmp_path: Path, name: str) -> None:
    ws = tmp_path / "repo"
    (ws / ".cursor" / name).mkdir(parents=True)
    (ws / ".cursor" / name / "README").write_text("x")
    before = tree_hash(ws)
    e = _enter(ws, tmp_path / "journal")
    assert isinstance(e, InjectionError) and isinstance(e, CursorAgentError), repr(e)
    assert "is a directory, not a file" in str(e) and "nothing was changed" in str(e)
    assert tree_hash(ws) == before


@pytest.mark.parametrize("name", ["mcp.json", "cli.json"])
def test_a_fifo_is_refused_without_blocking(tmp_path: Path, name: str) -> None:
    ws = tmp_path / "repo"
    (ws / ".cursor").mkdir(parents=True)
    os.mkfifo(ws / ".cursor" / name)
    before = _listing(ws)
    e = _enter(ws, tmp_path / "journal")
    assert isinstance(e, InjectionError), repr(e)
    assert "is a FIFO, not a file" in str(e)
    assert _listing(ws) == before


def test_a_cursor_that_is_a_file_is_refused(tmp_path: Path) -> None:
    ws = tmp_path / "repo"
    ws.mkdir()
    (ws / ".cursor").write_text("not a directory\n")
    before = tree_hash(ws)
    e = _enter(ws, tmp_path / "journal")
    assert isinstance(e, InjectionError), repr(e)
    assert "is a file, not a directory" in str(e)
    assert tree_hash(ws) == before


def test_the_client_gets_an_injection_error(sim: Callable[..., Any], cursor_sim_workspace: Path) -> None:
    """The reviewer's repro: a tools turn in such a workspace raises the library's error (no
    bare ``IsADirectoryError``), and the agent never started."""
    (cursor_sim_workspace / ".cursor" / "mcp.json").mkdir(parents=True)
    (cursor_sim_workspace / ".cursor" / "mcp.json" / "README").write_text("x")
    before = tree_hash(cursor_sim_workspace)
    with CursorAgentClient(sim(), tools=TOOLS) as client, \
            pytest.raises(InjectionError, match="is a directory, not a file"):
        client.query("what is 6 * 7")
    assert tree_hash(cursor_sim_workspace) == before
