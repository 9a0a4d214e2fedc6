"""Saving onto a path that is not a file: ``save("/dev/null")`` run as root replaced the device
with a file of the session (the rename of ``files.replace_file``), so every program writing to
/dev/null afterwards wrote into it, and every one reading it read that (a flaky test of
2026-11-26 read another command's output from /dev/null). A device, pipe or socket is refused,
named; a folder says it is one, with the path the user gave, not the temporary file's."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from cursor_agent_api.files import replace_file


def test_a_fifo_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(FileExistsError, match="not a regular file") as caught:
        replace_file(fifo, b"{}")
    assert caught.value.filename == str(fifo)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert os.listdir(tmp_path) == ["pipe"]  # no new file left beside it


def test_a_character_device_is_refused(tmp_path: Path) -> None:
    """A copy of /dev/null's device (root only: mknod); never the real one."""
    if os.geteuid() != 0:
        pytest.skip("mknod of a character device needs root")
    dev = tmp_path / "null"
    os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    with pytest.raises(FileExistsError, match="not a regular file"):
        replace_file(dev, b"{}")
    assert stat.S_ISCHR(os.lstat(dev).st_mode)


def test_a_folder_is_named_as_such(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    folder.mkdir()
    with pytest.raises(IsADirectoryError) as caught:
        replace_file(folder, b"{}")
    assert caught.value.filename == str(folder) and ".tmp" not in str(caught.value)


def test_a_symbolic_link_is_still_replaced_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_bytes(b"old")
    link = tmp_path / "link"
    link.symlink_to(target)
    replace_file(link, b"new")
    assert link.read_bytes() == b"new" and not link.is_symlink() and target.read_bytes() == b"old"


def test_a_name_near_the_limit_is_saved(tmp_path: Path) -> None:
    """A valid 245-byte name: its temporary file's name (``.<name>.<pid>.<hex>.tmp``) went past
    the 255-byte limit, and the error blamed the user's path (review 47)."""
    path = tmp_path / ("é" * 100 + "x" * 41 + ".json")  # 245 bytes
    assert 240 <= len(path.name.encode()) <= 255
    replace_file(path, b"{}")
    assert path.read_bytes() == b"{}" and os.listdir(tmp_path) == [path.name]
