"""Making MCP servers visible to one turn in the workspace's ``.cursor/``, and undoing it exactly.

What lives here: :class:`WorkspaceInjection` — for one turn, it merges uniquely named entries
into ``<workspace>/.cursor/mcp.json`` (the CLI reads it at start) and allowlist entries
``Mcp(server:tool)`` into ``<workspace>/.cursor/cli.json`` (``permissions.allow``), creating
what does not exist; at the end of the turn it puts back every byte: a file that existed gets
its original bytes, a file (or the ``.cursor`` directory) that did not is removed. The user
level ``~/.cursor`` is never read or written, nor anything else through a symbolic link: a
``.cursor`` (or one of the two files) that is a link is refused (:class:`InjectionError`), and
so is a ``.cursor`` that is not a directory or a file of ours that is not a regular file (a
directory, a FIFO: never opened in a way that could block).

How it survives the unexpected:

* a journal outside the workspace (``<per-user data dir>/injections/<hash of the
  workspace>/``, mode 0700) holds the original bytes and the live holders (pid and process
  start time), written *before* the workspace is touched, under an exclusive ``flock``. It
  belongs to the workspace: every program of the user finds the same one, whatever its
  ``$CURSOR_AGENT_API_HOME`` (:func:`injection_root`);
* several turns in one workspace at once (threads, processes) each add their own entry; the
  files always show the originals plus the live holders' entries; the last one out restores;
* a holder whose process died (SIGKILL, a power cut) is dropped by the next injection on this
  machine (any workspace) or the end of another turn in its workspace, and the files are
  restored when none is left (its entries also leave a file edited meanwhile); an ``atexit`` hook
  restores what this process still holds when it exits normally;
* a file the user edited during the turn is not overwritten: only our entries are taken out
  of it (and a warning is logged), and an entry of the user's own that one of ours shadowed
  (the same name) gets its own value back;
* a reader (another turn's agent starting, the editor watching the file) never sees a file
  half written: each version replaces the last at once (a new file, then ``rename``), or,
  where that would change what the user set up (hard links, another owner), is written in
  place with no moment where it is not the old or the new JSON (:func:`_write`).

What does not live here: the tool server (:mod:`.server`), choosing the entries (:mod:`.host`).

Example:
    >>> import os, tempfile
    >>> ws, journals = tempfile.mkdtemp(), Path(tempfile.mkdtemp())  # journals: the default's stand-in
    >>> inj = WorkspaceInjection(ws, {"app": {"url": "http://127.0.0.1:9/mcp"}}, ["Mcp(app:ping)"],
    ...                          root=journals)
    >>> with inj:
    ...     sorted(os.listdir(os.path.join(ws, ".cursor")))
    ['cli.json', 'mcp.json']
    >>> os.listdir(ws)
    []
"""

from __future__ import annotations

import base64
import contextlib
import copy
import errno
import hashlib
import json
import logging
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from ..errors import CursorAgentError
from ..files import replace_file
from .journal import HELD, Journal, alive, this_holder
from .journal import sweep as journal_sweep

__all__ = ["InjectionError", "WorkspaceInjection", "injection_root", "kind_of", "sweep"]

log = logging.getLogger("cursor_agent_api.tools")

HOME_ENV = "CURSOR_AGENT_API_HOME"
MCP_FILE = "mcp.json"
CLI_FILE = "cli.json"


class InjectionError(CursorAgentError, RuntimeError):
    """The workspace's ``.cursor`` files cannot be merged (not JSON, not an object, a symbolic
    link, not a regular file): nothing changed. A
    :class:`~cursor_agent_api.errors.CursorAgentError`, raised by the turn before the agent
    starts.

    Example:
        >>> str(InjectionError("x")), isinstance(InjectionError("x"), CursorAgentError)
        ('x', True)
    """


def injection_root() -> Path:
    """Where the journals live: ``injections`` in the per-user data directory
    (``$XDG_DATA_HOME/cursor-agent-api``, else ``~/.local/share/cursor-agent-api``), whatever
    ``$CURSOR_AGENT_API_HOME`` says. A journal and its lock belong to the workspace, not to a
    program: two programs with different homes running turns in one workspace must find the
    same one, or the second takes the first's entries for the user's and puts them "back".

    Example:
        >>> from unittest import mock
        >>> with mock.patch.dict(os.environ, XDG_DATA_HOME="/tmp/d", CURSOR_AGENT_API_HOME="/tmp/h"):
        ...     str(injection_root()), [str(r) for r in _legacy_roots()]
        ('/tmp/d/cursor-agent-api/injections', ['/tmp/h/injections'])
    """
    import platformdirs

    return Path(platformdirs.user_data_dir("cursor-agent-api")) / "injections"


def _legacy_roots() -> list[Path]:
    """Where versions before 2026-11-24 kept the journals, ``$CURSOR_AGENT_API_HOME/injections``:
    swept too, so what a crash left there is still put back."""
    env = os.environ.get(HOME_ENV)
    legacy = Path(env) / "injections" if env else None
    return [legacy] if legacy is not None and legacy != injection_root() else []


def _read(path: Path) -> bytes | None:
    """The file's bytes (``None`` when absent); :class:`InjectionError` if it is anything but a
    regular file: never read through a symbolic link (``O_NOFOLLOW``), and a FIFO is opened
    without blocking (``O_NONBLOCK``) and refused, not read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise InjectionError(f"{path} is a symbolic link: the tools are not injected through "
                                 "it; nothing was changed") from None
        if e.errno == errno.ENOTDIR:
            raise InjectionError(f"{path.parent} is not a directory: the tools are not injected; "
                                 "nothing was changed") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # (before fdopen: it refuses a directory itself)
        os.close(fd)
        raise InjectionError(f"{path} is not a regular file: the tools are not injected; "
                             "nothing was changed")
    with os.fdopen(fd, "rb") as f:
        return f.read()


TMP_SUFFIX = ".cursor-agent-api.tmp"
"""What ends the name of the file a new version is written to before it replaces ours
(``.mcp.json.cursor-agent-api.tmp``): every write is under the journal's lock, so one there
when a write starts is a crash's leftover, and is removed."""


def _tmp(path: Path) -> Path:
    return path.with_name(f".{path.name}{TMP_SUFFIX}")


def _write(path: Path, data: bytes) -> None:
    """Make ``path`` hold ``data`` so that a reader (an agent starting, the editor watching the
    file) sees the old bytes or the new, never a mix: a new file in ``.cursor`` (the old
    one's mode, ``fsync``'d) replaces it (``rename``). Where a new file would change what the
    user set up — a file with other hard links (they would stop sharing it), one owned by
    someone else (it would become ours), a ``.cursor`` we may not create files in — it is
    written in place instead (:func:`_write_in_place`). Never through a symbolic link: the
    rename replaces a link planted meanwhile rather than follows it.

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "mcp.json"
        >>> _ = path.write_bytes(b'{"mcpServers": {"a": {}}}  ')
        >>> path.chmod(0o640)
        >>> _write(path, b"{}\\n")
        >>> path.read_bytes(), oct(path.stat().st_mode & 0o777), sorted(os.listdir(path.parent))
        (b'{}\\n', '0o640', ['mcp.json'])
    """
    try:
        st: os.stat_result | None = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None and (st.st_nlink > 1 or st.st_uid != os.geteuid()):
        _write_in_place(path, data)
        return
    try:
        replace_file(path, data, mode=None if st is None else stat.S_IMODE(st.st_mode), tmp=_tmp(path))
    except PermissionError:  # a .cursor we may not create files in (the file itself we may write)
        if st is None:
            raise
        _write_in_place(path, data)


def _write_in_place(path: Path, data: bytes) -> None:
    """Write over the file itself (its inode, owner, links and mode stay the user's); never
    through a symbolic link (``O_NOFOLLOW``: a link planted meanwhile fails with ``ELOOP``).
    ``data`` shorter than the file is first written padded with spaces to the file's length
    (JSON still, the same document), then the file is cut: a reader never sees the new bytes
    followed by the old tail.

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "mcp.json"
        >>> _ = path.write_bytes(b'{"mcpServers": {"a": {}}}')
        >>> _write_in_place(path, b"{}")
        >>> path.read_bytes()
        b'{}'
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o666)
    try:
        padded = data.ljust(os.fstat(fd).st_size, b" ")
        done = 0
        while done < len(padded):
            done += os.pwrite(fd, padded[done:], done)
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)


def _only_plain(workspace: Path) -> None:
    """:class:`InjectionError` unless ``.cursor`` is absent or a directory and each of our files
    in it absent or a regular file. A symbolic link: a repository could point it at the user's
    own ``~/.cursor`` (their global MCP servers) or anywhere else, and the injection would
    write there; a directory, a FIFO (reading it would block the turn), a socket or a device
    cannot be merged. Checked with ``lstat``, nothing opened.

    Example:
        >>> import tempfile
        >>> ws = Path(tempfile.mkdtemp())
        >>> (ws / ".cursor" / "mcp.json").mkdir(parents=True)
        >>> _only_plain(ws)
        Traceback (most recent call last):
        ...
        cursor_agent_api.tools.inject.InjectionError: ... is a directory, not a file: ...
    """
    cursor = workspace / ".cursor"
    for path, want, what in ((cursor, stat.S_ISDIR, "a directory"),
                             (cursor / MCP_FILE, stat.S_ISREG, "a file"),
                             (cursor / CLI_FILE, stat.S_ISREG, "a file")):
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            if path == cursor:
                return
            continue
        if stat.S_ISLNK(mode):
            raise InjectionError(f"{path} is a symbolic link (to {os.readlink(path)}): the "
                                 "tools are not injected through it; nothing was changed")
        if not want(mode):
            raise InjectionError(f"{path} is {kind_of(mode)}, not {what}: the tools are not "
                                 "injected; nothing was changed")


def kind_of(mode: int) -> str:
    """What a file of ``mode`` is, in words.

    Example:
        >>> kind_of(stat.S_IFIFO), kind_of(stat.S_IFREG)
        ('a FIFO', 'a file')
    """
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISREG, "a file")):
        if test(mode):
            return name
    return "not a regular file"


def _parse(name: str, data: bytes | None) -> dict[str, Any]:
    if data is None or not data.strip():
        return {}
    try:
        value = json.loads(data)
    except ValueError as e:
        raise InjectionError(f".cursor/{name} is not valid JSON ({e}); it was left as it is") from None
    if not isinstance(value, dict):
        raise InjectionError(f".cursor/{name} is not a JSON object; it was left as it is")
    return value


def _render_mcp(original: bytes | None, holders: Mapping[str, Any]) -> bytes:
    doc = _parse(MCP_FILE, original)
    servers = doc.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise InjectionError(".cursor/mcp.json: mcpServers is not an object; it was left as it is")
    for holder in holders.values():
        servers.update(copy.deepcopy(holder["servers"]))
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode()


def _render_cli(original: bytes | None, holders: Mapping[str, Any]) -> bytes:
    doc = _parse(CLI_FILE, original)
    permissions = doc.setdefault("permissions", {})
    if not isinstance(permissions, dict):
        raise InjectionError(".cursor/cli.json: permissions is not an object; it was left as it is")
    allow = permissions.setdefault("allow", [])
    if not isinstance(allow, list):
        raise InjectionError(".cursor/cli.json: permissions.allow is not a list; it was left as it is")
    for holder in holders.values():
        allow.extend(a for a in holder["allow"] if a not in allow)
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode()


def _remove_ours(name: str, data: bytes, holder: Mapping[str, Any], original: bytes | None) -> bytes | None:
    """``data`` (edited by someone else meanwhile) without ``holder``'s entries; None if
    unreadable. What the user's ``original`` had under the same name is the user's, and comes
    back with its own value: a server the turn's entry shadowed, an allowlist entry they had.

    Example:
        >>> mine = b'{"mcpServers": {"docs": {"command": "mine"}}}'
        >>> edited = b'{"mcpServers": {"docs": {"command": "turn"}, "new": {}}}'
        >>> json.loads(_remove_ours(MCP_FILE, edited, {"servers": {"docs": {}}, "allow": []}, mine))
        {'mcpServers': {'docs': {'command': 'mine'}, 'new': {}}}
    """
    try:
        doc = json.loads(data)
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None
    try:
        before = _parse(name, original)
    except InjectionError:
        before = {}
    if name == MCP_FILE and isinstance(doc.get("mcpServers"), dict):
        theirs = before.get("mcpServers")
        theirs = theirs if isinstance(theirs, dict) else {}
        for key in holder["servers"]:
            if key in theirs:
                doc["mcpServers"][key] = theirs[key]
            else:
                doc["mcpServers"].pop(key, None)
    if name == CLI_FILE and isinstance(doc.get("permissions"), dict) \
            and isinstance(doc["permissions"].get("allow"), list):
        permissions = before.get("permissions")
        had = permissions.get("allow") if isinstance(permissions, dict) else None
        had = had if isinstance(had, list) else []
        doc["permissions"]["allow"] = [a for a in doc["permissions"]["allow"]
                                       if a not in holder["allow"] or a in had]
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode()


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def _unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def _apply(state: dict[str, Any], *, leaving: Sequence[Mapping[str, Any]] = ()) -> None:
    """Make the workspace's files show the originals plus the live holders' entries
    (``leaving``: the holders just taken out, whose entries go too from a file edited meanwhile)."""
    cursor = Path(state["workspace"]) / ".cursor"
    holders = state["holders"]
    written = state.setdefault("written", {})
    for name in (MCP_FILE, CLI_FILE):  # a write a crash cut short (we hold the lock: no other)
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            _tmp(cursor / name).unlink()
    for name, render in ((MCP_FILE, _render_mcp), (CLI_FILE, _render_cli)):
        original = _unb64(state["originals"].get(name))
        path = cursor / name
        wanted = any(h["servers"] if name == MCP_FILE else h["allow"] for h in holders.values())
        current = _read(path)
        ours = _unb64(written.get(name))
        if ours is not None and current != ours and current != original:
            # someone else changed the file during the turn: keep their change, take ours out
            log.warning("%s changed during the turn; only the injected entries are removed", path)
            for holder in [*leaving, *holders.values()]:
                if current is not None:
                    current = _remove_ours(name, current, holder, original) or current
            if current is not None:
                _write(path, current)
            state["originals"][name] = _b64(current)
            original, ours = current, None
        if wanted:
            data = render(original, holders)
            cursor.mkdir(exist_ok=True)
            if _read(path) != data:
                _write(path, data)
            written[name] = _b64(data)
        elif ours is not None or (name in state.get("touched", ()) and current != original):
            # ours, or (after a crash between writing and journaling) a file we meant to write
            if original is None:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            else:
                _write(path, original)
            written.pop(name, None)
    if not holders and not state["cursor_existed"]:
        with contextlib.suppress(OSError):
            cursor.rmdir()  # only if empty: anything the user put there stays


def _drop_dead(state: dict[str, Any]) -> list[Mapping[str, Any]]:
    """Take the holders whose process is gone out of ``state``; they are returned."""
    dead = [key for key, holder in state["holders"].items() if not alive(holder)]
    if dead:
        log.warning("restoring %s/.cursor after %d turn(s) of a process that died",
                    state["workspace"], len(dead))
    return [state["holders"].pop(key) for key in dead]


def _release_dead(journal: Journal) -> None:
    """Under the lock: drop the holders whose process is gone; restore when none is left."""
    state = journal.load()
    if state is None:
        return
    dead = _drop_dead(state)
    if not dead:
        return
    _apply(state, leaving=dead)
    if state["holders"]:
        journal.save(state)
    else:
        journal.delete()


def _journal(directory: Path) -> Journal:
    return Journal(directory, what="injection")


def sweep(root: Path | None = None) -> None:
    """Clean what crashed processes left in any workspace (run by every injection at its start):
    the journals under ``root``; by default under :func:`injection_root` and where earlier
    versions kept them.

    Example:
        >>> import tempfile
        >>> sweep(Path(tempfile.mkdtemp()))
    """
    for found in [root] if root is not None else [injection_root(), *_legacy_roots()]:
        journal_sweep(found, _release_dead, _journal)


class WorkspaceInjection:
    """One turn's entries in ``<workspace>/.cursor``: :meth:`enter` before the agent starts,
    :meth:`exit` after it ended (also a context manager). ``servers`` has ``mcp.json``'s shape
    (name → entry); ``allow`` are ``cli.json`` allowlist tokens (``Mcp(server:tool)``).

    Example:
        >>> WorkspaceInjection("/tmp", {}, []).key.startswith("turn-")
        True
    """

    def __init__(self, workspace: str | os.PathLike[str], servers: Mapping[str, Mapping[str, Any]],
                 allow: Sequence[str], *, root: Path | None = None) -> None:
        self.workspace = Path(os.path.realpath(os.fspath(workspace)))
        self.servers = {name: dict(entry) for name, entry in servers.items()}
        self.allow = list(allow)
        self.root = root if root is not None else injection_root()
        self._swept = root  # None: the default root, and the legacy ones
        digest = hashlib.sha256(str(self.workspace).encode()).hexdigest()[:24]
        self.journal = _journal(self.root / digest)
        self.key = f"turn-{os.getpid()}-{id(self):x}-{os.urandom(4).hex()}"
        self._entered = False

    def enter(self) -> None:
        """Write the entries (raises :class:`InjectionError`, with nothing changed, if the
        files cannot be merged)."""
        if self._entered:
            return
        # Not redundant with TurnScope.enter's check_workspace: between the two, it awaits the
        # tool server's start, long enough for the workspace to go (or become a file); and this
        # class is used on its own. Without it, either ends in a bare FileNotFoundError or
        # NotADirectoryError (making .cursor), not this error.
        if not self.workspace.is_dir():
            raise InjectionError(f"the workspace {self.workspace} is not a directory")
        _only_plain(self.workspace)
        try:
            self.journal.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as e:
            raise InjectionError(
                f"the journal of the workspace's .cursor files, {self.journal.directory}, cannot "
                f"be made ({e.strerror}): the tools are not injected; nothing was changed. It is "
                "in the per-user data directory: set XDG_DATA_HOME to one you can write") from None
        sweep(self._swept)
        with self.journal.locked():
            state = self.journal.load()
            if state is None:
                cursor = self.workspace / ".cursor"
                state = {"workspace": str(self.workspace), "cursor_existed": cursor.is_dir(),
                         "originals": {n: _b64(_read(cursor / n)) for n in (MCP_FILE, CLI_FILE)},
                         "holders": {}, "written": {}}
            holder = {**this_holder(), "servers": self.servers, "allow": self.allow}
            trial = dict(state, holders={**state["holders"], self.key: holder})
            # check the merge before anything is written
            _render_mcp(_unb64(state["originals"].get(MCP_FILE)), trial["holders"])
            _render_cli(_unb64(state["originals"].get(CLI_FILE)), trial["holders"])
            state["holders"][self.key] = holder
            touched = set(state.get("touched", ()))
            touched |= {MCP_FILE} if self.servers else set()
            touched |= {CLI_FILE} if self.allow else set()
            state["touched"] = sorted(touched)
            self.journal.save(state)  # first the journal, then the workspace
            try:
                _apply(state)
            except BaseException:
                del state["holders"][self.key]
                _apply(state)
                self._save_or_delete(state)
                raise
            self.journal.save(state)
        self._entered = True
        HELD.hold(self)

    def exit(self) -> None:
        """Take this turn's entries out; the last turn out restores the files byte for byte."""
        if not self._entered:
            return
        self._entered = False
        HELD.drop(self)
        with self.journal.locked():
            state = self.journal.load()
            if state is None or self.key not in state["holders"]:
                return
            leaving = state["holders"].pop(self.key)
            _apply(state, leaving=[leaving, *_drop_dead(state)])  # a turn killed meanwhile too
            self._save_or_delete(state)

    def _save_or_delete(self, state: dict[str, Any]) -> None:
        if state["holders"]:
            self.journal.save(state)
        else:
            self.journal.delete()

    def __enter__(self) -> WorkspaceInjection:
        self.enter()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.exit()
