"""``save()`` to a path it cannot write names that path, not its temporary file.

``replace_file`` writes ``.<name>.<pid>.<random>.tmp`` beside the file, then renames it: an
``OSError`` of either step named that internal file (``No such file or directory:
'/x/nope/.c.json.4472.18e4bc22.tmp'``, ``Is a directory: '/x/.store.….tmp' -> '/x/store'``).
It now names the path the caller gave, keeps its class and errno, and leaves nothing behind.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from cursor_agent_api import ConversationSession
from cursor_agent_api.files import replace_file

CHAT = "8b72ae6d-ab42-4854-991e-6ecf580e66c2"


@pytest.mark.parametrize(("where", "error", "code"), [
    ("nope/c.json", FileNotFoundError, errno.ENOENT),  # a missing folder
    ("store", IsADirectoryError, errno.EISDIR),  # a directory
    ("~/no-such-dir-here/c.json", FileNotFoundError, errno.ENOENT),  # "~" as given
], ids=["missing-folder", "a-directory", "tilde"])
def test_save_names_the_path_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   where: str, error: type[OSError], code: int) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "store").mkdir()
    with pytest.raises(error) as caught:
        ConversationSession(session_id=CHAT, workspace=str(tmp_path)).save(where)
    exc = caught.value
    assert exc.errno == code and exc.filename == where and exc.filename2 is None
    assert ".tmp" not in str(exc) and repr(where) in str(exc), str(exc)
    assert sorted(os.listdir(tmp_path)) == ["store"] and os.listdir(tmp_path / "store") == []


def test_replace_file_names_its_target_when_the_write_fails(tmp_path: Path) -> None:
    target = tmp_path / "ro" / "state.json"
    target.parent.mkdir()
    target.parent.chmod(0o500)
    try:
        if os.access(target.parent, os.W_OK):
            pytest.skip("this user writes in any folder (root)")
        with pytest.raises(PermissionError) as caught:
            replace_file(target, b"{}")
        assert caught.value.filename == str(target) and ".tmp" not in str(caught.value)
    finally:
        target.parent.chmod(0o700)
