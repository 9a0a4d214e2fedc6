"""A reader of ``.cursor/mcp.json`` while turns start and end (another turn's agent starting,
the Cursor IDE watching the file) always finds the old JSON or the new, never a file half
written: the version was written over the old one and cut after, so for a moment the file was
the new text followed by the old one's tail (``Extra data``), also when the user's original
was put back.

Each test looks at the file after every step the injection takes (every call into C made from
``inject.py``: each write, truncate, rename), in the test's thread, with ``sys.setprofile``.
The documents are larger than a file object's buffer, so a write goes straight to the file."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from cursor_agent_api.tools import inject
from cursor_agent_api.tools.inject import WorkspaceInjection

BIG = "x" * 20_000  # over io's buffer: written through at once, not on close


def _user_file(ws: Path) -> Path:
    path = ws / ".cursor" / "mcp.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"mcpServers": {"users-own": {"command": "x", "args": [BIG]}}}))
    return path


@pytest.fixture
def states() -> Iterator[Callable[[Path, Callable[[], None]], list[Any]]]:
    """``watch(path, action)``: run ``action``; the document ``path`` held after each step
    (``None`` when absent, ``"NOT JSON: …"`` when it did not parse)."""

    def watch(path: Path, action: Callable[[], None]) -> list[Any]:
        seen: list[Any] = []

        def look(frame: FrameType, event: str, arg: object) -> None:
            if event in ("c_return", "c_exception") and frame.f_code.co_filename == inject.__file__:
                try:
                    data = path.read_bytes()
                except FileNotFoundError:
                    seen.append(None)
                    return
                try:
                    seen.append(json.loads(data))
                except ValueError as e:
                    seen.append(f"NOT JSON: {e}")

        sys.setprofile(look)
        try:
            action()
        finally:
            sys.setprofile(None)
        return seen

    yield watch


def _docs(path: Path) -> Any:
    return json.loads(path.read_bytes())


def test_turns_starting_and_ending_never_show_a_half_written_file(
        tmp_path: Path, states: Callable[[Path, Callable[[], None]], list[Any]]) -> None:
    ws = tmp_path / "ws"
    path = _user_file(ws)
    original = _docs(path)
    y = WorkspaceInjection(ws, {"turn-Y": {"url": "http://127.0.0.1:9/mcp"}}, [], root=tmp_path / "j")
    x = WorkspaceInjection(ws, {"turn-X": {"url": "http://127.0.0.1:9/mcp", "args": [BIG]}}, [],
                           root=tmp_path / "j")
    seen = states(path, y.enter)
    with_y = _docs(path)
    seen += states(path, x.enter)
    with_x_and_y = _docs(path)
    seen += states(path, x.exit)  # shorter again: the old code left X's tail for a moment
    assert _docs(path) == with_y
    seen += states(path, y.exit)  # the user's original put back
    assert _docs(path) == original
    assert seen and all(s in (original, with_y, with_x_and_y) for s in seen), \
        [s for s in seen if s not in (original, with_y, with_x_and_y)][:1]


def test_the_users_file_is_replaced_whole_keeping_its_mode(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    path = _user_file(ws)
    path.chmod(0o640)
    before = path.read_bytes()
    with WorkspaceInjection(ws, {"turn": {"url": "http://127.0.0.1:9/mcp"}}, [], root=tmp_path / "j"):
        assert oct(path.stat().st_mode & 0o777) == "0o640"
    assert path.read_bytes() == before and oct(path.stat().st_mode & 0o777) == "0o640"
    assert sorted(os.listdir(ws / ".cursor")) == ["mcp.json"]  # no temporary file left


def test_a_hard_linked_file_is_written_in_place_and_never_half_written(
        tmp_path: Path, states: Callable[[Path, Callable[[], None]], list[Any]]) -> None:
    """A user who shares one mcp.json between checkouts with a hard link keeps the link (a
    rename would cut it); written in place, the file is still never half written."""
    ws = tmp_path / "ws"
    path = _user_file(ws)
    shared = tmp_path / "shared-mcp.json"
    os.link(path, shared)
    original = _docs(path)
    turn = WorkspaceInjection(ws, {"turn": {"url": "http://127.0.0.1:9/mcp", "args": [BIG]}}, [],
                              root=tmp_path / "j")
    seen = states(path, turn.enter)
    during = _docs(path)
    assert path.samefile(shared) and "turn" in during["mcpServers"]
    seen += states(path, turn.exit)
    assert path.samefile(shared) and _docs(path) == original
    assert seen and all(s in (original, during) for s in seen), \
        [s for s in seen if s not in (original, during)][:1]


def test_a_write_a_crash_cut_short_is_cleaned_up(tmp_path: Path) -> None:
    """A host killed between writing the new version and putting it in place leaves the
    temporary file; the restore removes it, so ``.cursor`` is gone again when it was not there."""
    ws = tmp_path / "ws"
    ws.mkdir()
    with WorkspaceInjection(ws, {"turn": {"url": "http://127.0.0.1:9/mcp"}}, [], root=tmp_path / "j"):
        (ws / ".cursor" / f".mcp.json{inject.TMP_SUFFIX}").write_text("{")
    assert os.listdir(ws) == []
