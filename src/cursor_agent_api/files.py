"""Replacing a file at once, and locking one across processes: what the saved chats, the
tools' journals and ``.cursor`` files, the MCP approvals file, the simulator's own records and
the worker's worktrees write and lock with.

A reader of the file (another process, an editor watching it) sees the old bytes or the new,
never a mix or an empty file: the new bytes go to a new file beside it (``fsync``'d), which
then takes its name (``rename``). Never through a symbolic link: the new file is created with
``O_NOFOLLOW | O_EXCL``, and the rename replaces a link planted at the name rather than
follows it. A failure leaves the old file as it was and no new file behind.

:func:`lock_file` takes an exclusive ``flock`` on a lock file, waiting for it as long as it
takes, not at all, or a bounded time; what a caller does when it is not had is the caller's.

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
import errno
import fcntl
import os
import stat
import time
from pathlib import Path
from typing import overload

__all__ = ["lock_file", "replace_file"]


def replace_file(path: Path, data: bytes, *, mode: int | None = None, tmp: Path | None = None) -> None:
    """Make ``path`` hold ``data`` at once (see the module).

    ``mode``: the file's permission bits, exactly (``None``: ``0o666`` less the umask, as a
    new file gets). ``tmp``: the name of the new file until the rename — a fixed one for a
    writer that holds a lock, so that one a crash left is simply replaced; by default a name
    no other writer uses (``.<name>.<pid>.<random>.tmp`` beside ``path``, the name's first 200
    bytes). An ``OSError`` writing or renaming names ``path``, not the temporary file (which is
    gone); a fixed ``tmp`` that a crash left and that cannot be removed is named itself.

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "mcp.json"
        >>> left = path.with_name(".mcp.json.tmp"); _ = left.write_bytes(b"a crash's")
        >>> replace_file(path, b"[]", tmp=left)
        >>> path.read_bytes(), left.exists()
        (b'[]', False)
    """
    _refuse_special(path)
    if tmp is None:
        # (the name's first 200 bytes: a name near the 255-byte limit is valid, and its
        # temporary one must be too: review 47)
        name = os.fsdecode(os.fsencode(path.name)[:200])
        tmp = path.with_name(f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    else:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(tmp, flags, 0o666 if mode is None else mode)
    except OSError as exc:
        raise _naming(exc, path) from None
    try:
        with os.fdopen(fd, "wb") as f:
            if mode is not None:
                os.fchmod(f.fileno(), mode)  # exactly: the umask took bits off at creation
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError):
            raise _naming(exc, path) from None
        raise


def _refuse_special(path: Path) -> None:
    """Refuse a ``path`` that is there and is neither a file nor a symbolic link: the rename
    would replace a folder's name, or a device (``save("/dev/null")`` run as root replaced
    ``/dev/null`` with a file of the session, and every program that wrote to /dev/null
    after wrote there), a pipe or a socket. ``IsADirectoryError`` or ``FileExistsError``,
    naming ``path`` (not the new file's name).

    Example:
        >>> import tempfile
        >>> fifo = Path(tempfile.mkdtemp()) / "pipe"; os.mkfifo(fifo)
        >>> try:
        ...     replace_file(fifo, b"{}")
        ... except FileExistsError as exc:
        ...     print(exc.strerror)
        not a regular file (a device, a pipe or a socket): left as it is
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, "a folder, not a file: left as it is", str(path))
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
        raise FileExistsError(errno.EEXIST, "not a regular file (a device, a pipe or a socket): "
                              "left as it is", str(path))


def _naming(exc: OSError, path: Path) -> OSError:
    """``exc`` as the caller's failure: the same class and errno, naming ``path`` (the file
    asked for), not the temporary file beside it, which is gone.

    Example:
        >>> _naming(FileNotFoundError(2, "No such file or directory", "d/.c.json.1.ab.tmp"),
        ...         Path("d/c.json"))
        FileNotFoundError(2, 'No such file or directory')
        >>> str(_)
        "[Errno 2] No such file or directory: 'd/c.json'"
    """
    if exc.errno is None:
        return exc
    return type(exc)(exc.errno, exc.strerror, os.fspath(path))


@overload
def lock_file(path: Path, *, mode: int = ..., wait: None = None, nofollow: bool = ...) -> int: ...
@overload
def lock_file(path: Path, *, mode: int = ..., wait: float, nofollow: bool = ...) -> int | None: ...
def lock_file(path: Path, *, mode: int = 0o600, wait: float | None = None,
              nofollow: bool = False) -> int | None:
    """An exclusive ``flock`` on the file ``path`` (made with ``mode`` if missing; its directory
    must exist): the descriptor holding it, which the caller closes to release it (the kernel
    also drops it with its process). ``wait``: ``None``, as long as it takes; else ``None`` is
    returned when another still holds it after so many seconds (``0``: at once, polled
    otherwise, so that a process keeping the lock stops nobody for ever). ``nofollow``: a
    symbolic link at ``path`` is refused (``OSError``), for a lock in a folder others write.

    A holder may unlink the file while it still holds the lock, so after locking, ``path`` must
    still name the locked file; otherwise the file now at ``path`` is locked instead.

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "lock"
        >>> held = lock_file(path)
        >>> lock_file(path, wait=0), lock_file(path, wait=0.01)  # another holds it
        (None, None)
        >>> os.close(held)
        >>> fd = lock_file(path, wait=0)
        >>> fd is not None, oct(path.stat().st_mode & 0o777)
        (True, '0o600')
        >>> link = path.with_name("link"); link.symlink_to(path)
        >>> try:
        ...     lock_file(link, nofollow=True)
        ... except OSError as exc:
        ...     print("refused:", exc.strerror)
        refused: Too many levels of symbolic links
    """
    flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | (os.O_NOFOLLOW if nofollow else 0)
    deadline = None if wait is None else time.monotonic() + wait
    while True:
        fd = os.open(path, flags, mode)
        try:
            got = _flock(fd, deadline)
            try:
                same = got and os.path.samestat(os.fstat(fd), os.stat(path))
            except FileNotFoundError:
                same = False
        except BaseException:
            os.close(fd)
            raise
        if same:
            return fd
        os.close(fd)
        if not got:
            return None
        # its holder unlinked it meanwhile: the file now at ``path`` is the lock


def _flock(fd: int, deadline: float | None) -> bool:
    """Lock ``fd`` exclusively: True, or False when not had by ``deadline`` (``None``: waits)."""
    if deadline is None:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return True
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
