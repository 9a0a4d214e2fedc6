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

* a journal outside the workspace (``$CURSOR_AGENT_API_HOME/injections/<hash>/``, else the
  per-user data directory; mode 0700) holds the original bytes and the live holders (pid and
  process start time), written *before* the workspace is touched, under an exclusive
  ``flock``;
* several turns in one workspace at once (threads, processes) each add their own entry; the
  files always show the originals plus the live holders' entries; the last one out restores;
* a holder whose process died (SIGKILL, a power cut) is dropped by the next injection on this
  machine (any workspace), and the files are restored when none is left; an ``atexit`` hook
  restores what this process still holds when it exits normally;
* a file the user edited during the turn is not overwritten: only our entries are taken out
  of it (and a warning is logged).

What does not live here: the tool server (:mod:`.server`), choosing the entries (:mod:`.host`).

Example:
    >>> import os, tempfile
    >>> os.environ["CURSOR_AGENT_API_HOME"] = tempfile.mkdtemp()
    >>> ws = tempfile.mkdtemp()
    >>> inj = WorkspaceInjection(ws, {"app": {"url": "http://127.0.0.1:9/mcp"}}, ["Mcp(app:ping)"])
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
    """Where the journals live: ``$CURSOR_AGENT_API_HOME/injections`` or the per-user data dir.

    Example:
        >>> import os
        >>> os.environ["CURSOR_AGENT_API_HOME"] = "/tmp/h"
        >>> str(injection_root())
        '/tmp/h/injections'
    """
    env = os.environ.get(HOME_ENV)
    if env:
        return Path(env) / "injections"
    import platformdirs

    return Path(platformdirs.user_data_dir("cursor-agent-api")) / "injections"


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


def _write_in_place(path: Path, data: bytes) -> None:
    """Write over the file itself (its inode and mode stay the user's); never through a
    symbolic link (``O_NOFOLLOW``: a link planted meanwhile fails with ``ELOOP``)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o666)
    with os.fdopen(fd, "r+b") as f:
        f.write(data)
        f.truncate()


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


def _remove_ours(name: str, data: bytes, holder: Mapping[str, Any]) -> bytes | None:
    """``data`` (edited by someone else meanwhile) without ``holder``'s entries; None if unreadable."""
    try:
        doc = json.loads(data)
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None
    if name == MCP_FILE and isinstance(doc.get("mcpServers"), dict):
        for key in holder["servers"]:
            doc["mcpServers"].pop(key, None)
    if name == CLI_FILE and isinstance(doc.get("permissions"), dict) \
            and isinstance(doc["permissions"].get("allow"), list):
        doc["permissions"]["allow"] = [a for a in doc["permissions"]["allow"] if a not in holder["allow"]]
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode()


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def _unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def _apply(state: dict[str, Any], *, leaving: Mapping[str, Any] | None = None) -> None:
    """Make the workspace's files show the originals plus the live holders' entries."""
    cursor = Path(state["workspace"]) / ".cursor"
    holders = state["holders"]
    written = state.setdefault("written", {})
    for name, render in ((MCP_FILE, _render_mcp), (CLI_FILE, _render_cli)):
        original = _unb64(state["originals"].get(name))
        path = cursor / name
        wanted = any(h["servers"] if name == MCP_FILE else h["allow"] for h in holders.values())
        current = _read(path)
        ours = _unb64(written.get(name))
        if ours is not None and current != ours and current != original:
            # someone else changed the file during the turn: keep their change, take ours out
            log.warning("%s changed during the turn; only the injected entries are removed", path)
            for holder in ([leaving] if leaving else []) + [h for h in holders.values()]:
                if current is not None:
                    current = _remove_ours(name, current, holder) or current
            if current is not None:
                _write_in_place(path, current)
            state["originals"][name] = _b64(current)
            original, ours = current, None
        if wanted:
            data = render(original, holders)
            cursor.mkdir(exist_ok=True)
            if _read(path) != data:
                _write_in_place(path, data)
            written[name] = _b64(data)
        elif ours is not None or (name in state.get("touched", ()) and current != original):
            # ours, or (after a crash between writing and journaling) a file we meant to write
            if original is None:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            else:
                _write_in_place(path, original)
            written.pop(name, None)
    if not holders and not state["cursor_existed"]:
        with contextlib.suppress(OSError):
            cursor.rmdir()  # only if empty: anything the user put there stays


def _release_dead(journal: Journal) -> None:
    """Under the lock: drop the holders whose process is gone; restore when none is left."""
    state = journal.load()
    if state is None:
        return
    dead = {k: h for k, h in state["holders"].items() if not alive(h)}
    if not dead:
        return
    for key in dead:
        del state["holders"][key]
    log.warning("restoring %s/.cursor after %d turn(s) of a process that died", state["workspace"],
                len(dead))
    _apply(state)
    if state["holders"]:
        journal.save(state)
    else:
        journal.delete()


def _journal(directory: Path) -> Journal:
    return Journal(directory, what="injection")


def sweep(root: Path | None = None) -> None:
    """Clean what crashed processes left in any workspace (run by every injection at its start).

    Example:
        >>> import tempfile
        >>> sweep(Path(tempfile.mkdtemp()))
    """
    journal_sweep(root if root is not None else injection_root(), _release_dead, _journal)


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
        digest = hashlib.sha256(str(self.workspace).encode()).hexdigest()[:24]
        self.journal = _journal(self.root / digest)
        self.key = f"turn-{os.getpid()}-{id(self):x}-{os.urandom(4).hex()}"
        self._entered = False

    def enter(self) -> None:
        """Write the entries (raises :class:`InjectionError`, with nothing changed, if the
        files cannot be merged)."""
        if self._entered:
            return
        if not self.workspace.is_dir():
            raise InjectionError(f"the workspace {self.workspace} is not a directory")
        _only_plain(self.workspace)
        sweep(self.root)
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
            _apply(state, leaving=leaving)
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
