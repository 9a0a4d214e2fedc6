"""The CLI's MCP approval entries for one turn's servers, written and taken back like ``mcp.json``.

What lives here: :func:`approval_key` (``"<name>-<16 hex>"``: SHA-256 of
``JSON.stringify({path, server})``, MCP.md §4), :func:`turn_approval_keys` (the keys of one
turn's servers, in every form a build may hash), :func:`approvals_file` (where the CLI looks:
``<data dir>/projects/<slug>/mcp-approvals.json``, the data dir being ``CURSOR_DATA_DIR``,
else ``CURSOR_CONFIG_DIR``, else ``~/.cursor``, from the agent's environment) and
:class:`ApprovalInjection` — for one turn, it merges the keys into that file and, when the
turn ends, takes out exactly the keys it added (a key the user had, or another live turn
needs, stays). This is what makes the turn's servers load, in both modes: the entries approve
exactly them (vibe-kanban pre-writes them before its print-mode runs, MCP.md §4; the 09.10
bundle's ACP loader uses the file, §7), while ``--approve-mcps`` would approve every server
the agent finds (a cloned repository's too) and is not wired to ACP.

How it is careful, as :mod:`.inject` is with ``.cursor/mcp.json``: a journal
(``<per-user data dir>/approvals/<hash>/``, mode 0700, under an exclusive ``flock``) holds
the keys each live turn added, written before the file is touched; the file is replaced
atomically (a temporary file in its directory, then ``rename``) and never through a symbolic
link (``O_NOFOLLOW``); a linked file or ``projects/<slug>`` directory, a file that is not a
regular file (a directory, a FIFO: never opened in a way that could block, a socket) or is
larger than :data:`MAX_APPROVALS_BYTES` (not read), and a ``projects/<slug>`` that is not a
directory refuse the turn (:class:`~.inject.InjectionError`, nothing changed), as the
workspace's ``.cursor/mcp.json`` does; a turn whose process died is cleaned up by the next
injection; a file that is not a JSON array is left alone (the turn goes on without the entries,
with a warning), and an entry in it that is not a string is the user's, kept as it is. Taking
the entries out never stops the turn's teardown: an unexpected error there, or such a file
planted meanwhile, is one warning.

What does not live here: the workspace's ``.cursor`` files (:mod:`.inject`).

Example:
    >>> import os, tempfile
    >>> data, ws, journals = tempfile.mkdtemp(), tempfile.mkdtemp(), Path(tempfile.mkdtemp())
    >>> keys = turn_approval_keys(ws, {"app": {"url": "http://127.0.0.1:9/mcp"}}, {})
    >>> path = approvals_file({"CURSOR_DATA_DIR": data}, ws)
    >>> with ApprovalInjection(path, keys, root=journals) as inj:
    ...     len(json.loads(inj.path.read_bytes()))
    1
    >>> inj.path.exists()
    False
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from ..files import replace_file
from .inject import InjectionError, injection_root, kind_of
from .journal import HELD, Journal, alive, this_holder
from .journal import sweep as journal_sweep

__all__ = ["MAX_APPROVALS_BYTES", "ApprovalInjection", "approval_key", "approvals_file",
           "turn_approval_keys"]

log = logging.getLogger("cursor_agent_api.tools")

APPROVALS_FILE = "mcp-approvals.json"

MAX_APPROVALS_BYTES = 4 << 20
"""The largest approvals file that is read (4 MiB; a key is a few dozen bytes): a larger one
refuses the turn unread."""

_ENV = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}")


def workspace_slug(workspace: str) -> str:
    """The approvals directory's name: every run of non-alphanumerics becomes ``-``, trimmed.

    Example:
        >>> workspace_slug("/home/u/my repo")
        'home-u-my-repo'
    """
    return re.sub(r"[^A-Za-z0-9]+", "-", workspace).strip("-")


def approval_key(name: str, definition: Mapping[str, Any], workspace: str) -> str:
    """``<name>-<first 16 hex of SHA-256>`` over ``JSON.stringify({path, server})`` (the
    definition's own key order, no spaces, UTF-8: what JavaScript writes).

    Example:
        >>> approval_key("app", {"url": "http://127.0.0.1:1/mcp"}, "/ws")
        'app-b814e234210ef99f'
    """
    text = json.dumps({"path": workspace, "server": dict(definition)}, separators=(",", ":"),
                      ensure_ascii=False)
    return f"{name}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def _resolve(value: Any, env: Mapping[str, str]) -> str:
    return _ENV.sub(lambda m: env.get(m.group(1), ""), str(value))


def turn_approval_keys(workspace: str, servers: Mapping[str, Mapping[str, Any]],
                       env: Mapping[str, str]) -> list[str]:
    """Every key that may approve ``servers`` (``mcp.json`` shape) in ``workspace`` (its real
    path): the definition as written in ``mcp.json`` (vibe-kanban's input); for an HTTP server
    also ``{url}`` alone (the forum's ACP ``session/new`` repro); for a stdio server also the
    definition as ACP gives it (``{command, args, env}``, ``${env:…}`` resolved from ``env``).
    Which one a build hashes is not known (MCP.md §4, §11), so all are written.

    Example:
        >>> keys = turn_approval_keys("/ws", {"app": {"url": "http://h/mcp", "headers": {}}}, {})
        >>> len(keys), keys[1] == approval_key("app", {"url": "http://h/mcp"}, "/ws")
        (2, True)
    """
    ws = os.path.realpath(workspace)
    keys: list[str] = []
    for name, entry in servers.items():
        forms: list[Mapping[str, Any]] = [entry]
        if isinstance(entry.get("url"), str):
            forms.append({"url": _resolve(entry["url"], env)})
        elif isinstance(entry.get("command"), str):
            raw_env = entry.get("env")
            given_env: Mapping[str, Any] = raw_env if isinstance(raw_env, Mapping) else {}
            forms.append({"command": _resolve(entry["command"], env),
                          "args": [_resolve(a, env) for a in entry.get("args") or []],
                          "env": {str(k): _resolve(v, env) for k, v in given_env.items()}})
        for form in forms:
            key = approval_key(name, form, ws)
            if key not in keys:
                keys.append(key)
    return keys


def approvals_file(env: Mapping[str, str], workspace: str) -> Path:
    """Where the agent looks for ``workspace``'s approvals, with ``env`` its environment:
    ``CURSOR_DATA_DIR`` (the bundle resolves ``projects/`` through it), else
    ``CURSOR_CONFIG_DIR``, else ``$HOME/.cursor`` (whether the config dir moves the file is
    not known, MCP.md §11; the simulator looks in the same order).

    Example:
        >>> str(approvals_file({"CURSOR_DATA_DIR": "/d", "CURSOR_CONFIG_DIR": "/c"}, "/w s"))
        '/d/projects/w-s/mcp-approvals.json'
        >>> str(approvals_file({"HOME": "/h"}, "/ws"))
        '/h/.cursor/projects/ws/mcp-approvals.json'
    """
    root = env.get("CURSOR_DATA_DIR") or env.get("CURSOR_CONFIG_DIR")
    if not root:
        home = env.get("HOME") or os.path.expanduser("~")
        root = os.path.join(home, ".cursor")
    return Path(root) / "projects" / workspace_slug(os.path.realpath(workspace)) / APPROVALS_FILE


def approvals_root() -> Path:
    """Where the approval journals live (beside the injection journals, whatever
    ``$CURSOR_AGENT_API_HOME`` says: a journal belongs to the approvals file, not a program).

    Example:
        >>> from unittest import mock
        >>> with mock.patch.dict(os.environ, XDG_DATA_HOME="/tmp/d"):
        ...     str(approvals_root())
        '/tmp/d/cursor-agent-api/approvals'
    """
    return injection_root().with_name("approvals")


def _refuse(path: Path, st: os.stat_result, want: Any, what: str) -> None:
    """:class:`InjectionError` if ``st`` (``path``'s, from ``lstat``/``fstat``) is a link, not
    ``want`` (``stat.S_ISDIR``/``S_ISREG``) or a file larger than :data:`MAX_APPROVALS_BYTES`."""
    if stat.S_ISLNK(st.st_mode):
        raise InjectionError(f"{path} is a symbolic link (to {os.readlink(path)}): no MCP approval "
                             "entry is written through it; nothing was changed")
    if not want(st.st_mode):
        raise InjectionError(f"{path} is {kind_of(st.st_mode)}, not {what}: MCP approval entries "
                             "are not written there; nothing was changed")
    if want is stat.S_ISREG and st.st_size > MAX_APPROVALS_BYTES:
        raise InjectionError(f"{path} is {st.st_size} bytes, more than the {MAX_APPROVALS_BYTES} an "
                             "approvals file is read up to: MCP approval entries are not written "
                             "there; nothing was changed")


def _only_plain(path: Path) -> None:
    """:class:`InjectionError` unless ``projects/<slug>`` is absent or a directory and the
    approvals file absent or a regular file of a sane size; neither a symbolic link. Checked
    with ``lstat``, nothing opened (a FIFO would block a reader).

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "ws" / APPROVALS_FILE
        >>> path.mkdir(parents=True)
        >>> _only_plain(path)
        Traceback (most recent call last):
        ...
        cursor_agent_api.tools.inject.InjectionError: ... is a directory, not a file: ...
    """
    for p, want, what in ((path.parent, stat.S_ISDIR, "a directory"), (path, stat.S_ISREG, "a file")):
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            return
        _refuse(p, st, want, what)


def _read_keys(path: Path) -> list[Any] | None:
    """The file's array (``[]`` when absent); ``None`` when it is not a JSON array;
    :class:`InjectionError` when it is not a regular file of a sane size (never read through a
    symbolic link, ``O_NOFOLLOW``; a FIFO is opened without blocking, ``O_NONBLOCK``, and
    refused, not read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return []
    except OSError:  # a link (ELOOP), a socket (ENXIO): say what it is
        with contextlib.suppress(OSError):
            _refuse(path, os.lstat(path), stat.S_ISREG, "a file")
        raise
    try:  # (before fdopen, which refuses a directory with an error of its own)
        _refuse(path, os.fstat(fd), stat.S_ISREG, "a file")
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as f:
        data = f.read(MAX_APPROVALS_BYTES + 1)
    if len(data) > MAX_APPROVALS_BYTES:  # (it grew since fstat)
        raise InjectionError(f"{path} is more than the {MAX_APPROVALS_BYTES} bytes an approvals "
                             "file is read up to: MCP approval entries are not written there; "
                             "nothing was changed")
    try:
        value = json.loads(data) if data.strip() else []
    except ValueError:
        return None
    return value if isinstance(value, list) else None


def _write_keys(path: Path, keys: Sequence[Any]) -> None:
    """Replace the file at once (a reader sees the old array or the new one), keeping its mode."""
    try:
        mode = os.stat(path, follow_symlinks=False).st_mode & 0o777
    except FileNotFoundError:
        mode = 0o600
    replace_file(path, json.dumps(list(keys)).encode(), mode=mode)


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _well_formed(state: Any) -> bool:
    """Whether a journal's state is what :class:`ApprovalInjection` writes (its keys strings)."""
    if not isinstance(state, dict) or not isinstance(state.get("path"), str):
        return False
    holders = state.get("holders")
    return (isinstance(holders, dict) and _strings(state.get("created", []))
            and all(isinstance(h, dict) and _strings(h.get("keys")) and _strings(h.get("added"))
                    for h in holders.values()))


def _journal(directory: Path) -> Journal:
    return Journal(directory, what="approval", well_formed=_well_formed)


def _save_state(journal: Journal, state: dict[str, Any]) -> None:
    if state["holders"]:
        journal.save(state)
    else:
        journal.delete()


def _take_out(state: dict[str, Any], leaving: Mapping[str, Any]) -> None:
    """Under the lock: remove from the file the keys ``leaving`` added that no live holder
    still needs; the file (and the directories the turns created) go when nothing is left."""
    path = Path(state["path"])
    needed = {k for h in state["holders"].values() for k in h["keys"]}
    drop = {k for k in leaving["added"] if k not in needed}
    for holder in state["holders"].values():  # a key still needed now counts as that holder's
        holder["added"] = sorted(set(holder["added"]) | (set(leaving["added"]) & set(holder["keys"])))
    if drop:
        _only_plain(path)
        current = _read_keys(path)
        if current is None:
            log.warning("%s is no longer a JSON array: the turn's approval entries stay in it", path)
        else:
            # an entry that is not a string (an object, a list) is the user's: kept as it is
            kept = [k for k in current if not (isinstance(k, str) and k in drop)]
            if kept or state.get("existed", True):  # unknown: the file stays
                if kept != current:
                    _write_keys(path, kept)
            else:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
    if not state["holders"]:
        _remove_dirs(state.get("created", []))


def _remove_dirs(directories: Sequence[str]) -> None:
    """Remove each of ``directories`` (deepest first) that is empty."""
    for directory in directories:
        with contextlib.suppress(OSError):
            os.rmdir(directory)


def _release_dead(journal: Journal) -> None:
    state = journal.load()
    if state is None:
        return
    dead = [k for k, h in state["holders"].items() if not alive(h)]
    for key in dead:
        _take_out(state, state["holders"].pop(key))
    if dead:
        log.warning("took out the MCP approval entries of %d turn(s) of a process that died", len(dead))
        _save_state(journal, state)


def sweep(root: Path | None = None) -> None:
    """Take out what crashed processes left in any approvals file.

    Example:
        >>> import tempfile
        >>> sweep(Path(tempfile.mkdtemp()))
    """
    journal_sweep(root if root is not None else approvals_root(), _release_dead, _journal)


def _missing_dirs(path: Path) -> list[str]:
    """The directories above ``path`` that do not exist yet, deepest first (a data dir that
    did not exist either counts: all are removed, if empty, when the last turn leaves)."""
    out: list[str] = []
    directory = path.parent
    while not directory.exists() and directory != directory.parent:
        out.append(str(directory))
        directory = directory.parent
    return out


class ApprovalInjection:
    """One turn's keys in an approvals file: :meth:`enter` before the agent starts, :meth:`exit`
    after (also a context manager). A failure to write (a read-only data dir, a file that is not
    a JSON array) is a warning, not an error: the turn runs, without its servers unless the
    user passed ``approve_mcps=True`` (then ``--approve-mcps`` loads them in print mode); a
    symbolic link, a file that is not a regular file (a FIFO is never read) or is too large
    raise :class:`~.inject.InjectionError` with nothing changed.

    Example:
        >>> ApprovalInjection(Path("/tmp/x/projects/w/mcp-approvals.json"), []).keys
        []
    """

    def __init__(self, path: Path, keys: Sequence[str], *, root: Path | None = None) -> None:
        self.path = path
        self.keys = list(dict.fromkeys(keys))
        self.root = root if root is not None else approvals_root()
        self.journal = _journal(self.root / hashlib.sha256(str(path).encode()).hexdigest()[:24])
        self.key = f"turn-{os.getpid()}-{id(self):x}-{os.urandom(4).hex()}"
        self.written = False
        """Whether the keys are in the file (for the turn's warnings)."""
        self._entered = False

    def enter(self) -> None:
        if self._entered or not self.keys:
            return
        _only_plain(self.path)
        sweep(self.root)
        try:
            with self.journal.locked():
                if not self._enter_locked():
                    return
        except OSError as e:
            log.warning("could not write the MCP approval entries to %s (%s): the agent will not "
                        "load the turn's servers (unless --approve-mcps, print mode)", self.path, e)
            return
        self._entered = True
        HELD.hold(self)

    def _enter_locked(self) -> bool:
        state = self.journal.load() or {"path": str(self.path), "holders": {}}
        created = _missing_dirs(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            _only_plain(self.path)  # (again: anything may have changed before the lock)
            current = _read_keys(self.path)
        except BaseException:
            _remove_dirs(created)
            raise
        if current is None:
            log.warning("%s is not a JSON array: it is left alone, and the turn's MCP servers "
                        "will not load (unless --approve-mcps, print mode)", self.path)
            _remove_dirs(created)
            return False
        if not state["holders"]:
            state["existed"] = self.path.exists()
            state["created"] = created
        added = [k for k in self.keys if k not in current]
        state["holders"][self.key] = {**this_holder(), "keys": self.keys, "added": added}
        _save_state(self.journal, state)  # first the journal, then the file
        if added:
            _write_keys(self.path, current + added)
        self.written = True
        return True

    def exit(self) -> None:
        """Take out the keys this turn added that no other live turn needs. Idempotent."""
        if not self._entered:
            return
        self._entered = False
        HELD.drop(self)
        try:
            with self.journal.locked():
                state = self.journal.load()
                if state is None or self.key not in state["holders"]:
                    return
                _take_out(state, state["holders"].pop(self.key))
                for key in [k for k, h in state["holders"].items() if not alive(h)]:
                    _take_out(state, state["holders"].pop(key))  # a turn killed meanwhile
                _save_state(self.journal, state)
        except (OSError, InjectionError) as e:
            log.warning("could not take the turn's MCP approval entries out of %s: %s", self.path, e)
        except Exception as e:  # a bug must not stop the rest of the turn's teardown
            log.warning("could not take the turn's MCP approval entries out of %s (unexpected %s: "
                        "%s); the next turn after this process ends retries", self.path,
                        type(e).__name__, e)

    def __enter__(self) -> ApprovalInjection:
        self.enter()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.exit()

