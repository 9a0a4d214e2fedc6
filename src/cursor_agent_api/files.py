"""Replacing a file at once: what the saved chats, the tools' journals and ``.cursor`` files,
the MCP approvals file and the simulator's own records all write with.

A reader of the file (another process, an editor watching it) sees the old bytes or the new,
never a mix or an empty file: the new bytes go to a new file beside it (``fsync``'d), which
then takes its name (``rename``). Never through a symbolic link: the new file is created with
``O_NOFOLLOW | O_EXCL``, and the rename replaces a link planted at the name rather than
follows it. A failure leaves the old file as it was and no new file behind.

Example:
    >>> import os, tempfile
    >>> path = Path(tempfile.mkdtemp()) / "state.json"
    >>> replace_file(path, b"{}", mode=0o600)
    >>> replace_file(path, b'{"n": 1}', mode=0o600)
    >>> path.read_bytes(), oct(path.stat().st_mode & 0o777), os.listdir(path.parent)
    (b'{"n": 1}', '0o600', ['state.json'])
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ["replace_file"]


def replace_file(path: Path, data: bytes, *, mode: int | None = None, tmp: Path | None = None) -> None:
    """Make ``path`` hold ``data`` at once (see the module).

    ``mode``: the file's permission bits, exactly (``None``: ``0o666`` less the umask, as a
    new file gets). ``tmp``: the name of the new file until the rename — a fixed one for a
    writer that holds a lock, so that one a crash left is simply replaced; by default a name
    no other writer uses (``.<name>.<pid>.<random>.tmp`` beside ``path``).

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "mcp.json"
        >>> left = path.with_name(".mcp.json.tmp"); _ = left.write_bytes(b"a crash's")
        >>> replace_file(path, b"[]", tmp=left)
        >>> path.read_bytes(), left.exists()
        (b'[]', False)
    """
    if tmp is None:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    else:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, 0o666 if mode is None else mode)
    try:
        with os.fdopen(fd, "wb") as f:
            if mode is not None:
                os.fchmod(f.fileno(), mode)  # exactly: the umask took bits off at creation
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
