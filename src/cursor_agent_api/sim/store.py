"""The simulator's state on disk: chats, the per-chat run lock, trusted workspaces, login.

Layout under the config dir (``CURSOR_CONFIG_DIR``, else a per-user directory from
platformdirs, ``cursor-agent-sim`` — never the real CLI's ``~/.cursor``)::

    chats/<md5 of the workspace path>/<chat id>/meta.json     the chat: id, workspace, model
    chats/<md5 of the workspace path>/<chat id>/turns.jsonl   one line per finished turn
    chats/<md5 of the workspace path>/<chat id>/run.lock      flock'd by the running turn; its pid
    trusted-workspaces.json                                   workspaces trusted with --trust
    sim-auth.json                                             {"loggedIn": false} after logout

The one file the simulator reads under ``~/.cursor`` (never writes) is the CLI's MCP approvals
file, where the CLI reads it (:func:`.mcp_config.approval_root`).

A turn is saved only when it finishes (a killed turn is not saved, as in the real CLI).
A lock file left by a killed turn is not locked any more (the kernel drops an ``flock`` with its
holder) and is taken over. A file that runs at once may each change (the trusted workspaces,
ACP's "allow always" rules) is changed by :func:`update_file`, under the same kind of lock
(``.<name>.lock`` beside it, while it is read and written again).

Example:
    >>> import tempfile
    >>> store = ChatStore(tempfile.mkdtemp())
    >>> chat = store.chat("/ws", "8ef40118-8378-436d-8ba8-2436b19cc877")
    >>> chat.exists(), chat.turns()
    (False, [])
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from .. import files
from . import node_text

UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def is_uuid(text: str) -> bool:
    """True for a well-formed UUID (what ``--resume`` accepts).

    Example:
        >>> is_uuid("8ef40118-8378-436d-8ba8-2436b19cc877"), is_uuid("abc")
        (True, False)
    """
    return bool(UUID_RE.match(text))


def default_config_dir(env: Mapping[str, str]) -> Path:
    """``CURSOR_CONFIG_DIR``, else the per-user data directory of ``cursor-agent-sim``.

    Example:
        >>> str(default_config_dir({"CURSOR_CONFIG_DIR": "/tmp/x"}))
        '/tmp/x'
    """
    value = env.get("CURSOR_CONFIG_DIR")
    if value:
        return Path(value).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("cursor-agent-sim", appauthor=False))


def workspace_key(workspace: str) -> str:
    """The md5 of the workspace path: the chat store's directory for that workspace.

    Example:
        >>> workspace_key("/ws") == hashlib.md5(b"/ws").hexdigest()
        True
    """
    return hashlib.md5(workspace.encode("utf-8", "surrogateescape")).hexdigest()


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    files.replace_file(path, data)


def _unlock(path: Path, fd: int) -> None:
    """Drop a lock :func:`~cursor_agent_api.files.lock_file` took (unlinked while still held:
    one waiting for it then locks the file made again). Safe to call from a signal handler."""
    with contextlib.suppress(OSError):
        path.unlink()  # while still locked: a contender re-checks the path
    with contextlib.suppress(OSError):
        os.close(fd)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = path.with_name(f".{path.name}.lock")
    fd = files.lock_file(lock, mode=0o644)
    try:
        yield
    finally:
        _unlock(lock, fd)


def update_file(path: Path, change: Callable[[bytes | None], bytes | None]) -> None:
    """Replace ``path`` by ``change(its bytes)`` (``None`` when it is missing), unless that is
    ``None``: read and written again under a lock, so that no change made at once by another
    process is lost; the new file replaces the old one at once.

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "n"
        >>> update_file(path, lambda data: b"1" if data is None else data + b"1")
        >>> update_file(path, lambda data: b"1" if data is None else data + b"1")
        >>> path.read_bytes(), sorted(p.name for p in path.parent.iterdir())
        (b'11', ['n'])
    """
    with _locked(path):
        try:
            data: bytes | None = path.read_bytes()
        except FileNotFoundError:
            data = None
        new = change(data)
        if new is not None:
            _write_atomic(path, new)


@dataclass(frozen=True, slots=True)
class Turn:
    """One finished turn of a chat.

    Example:
        >>> Turn("hi", "Hello", "r1").prompt
        'hi'
    """

    prompt: str
    result: str
    request_id: str


class ChatBusy(Exception):
    """Another live process holds the chat's run lock; ``str(e)`` is the chat id.

    Example:
        >>> str(ChatBusy("c1"))
        'c1'
    """


class Chat:
    """One chat of one workspace: its turns and its run lock.

    Example:
        >>> import tempfile
        >>> chat = ChatStore(tempfile.mkdtemp()).chat("/ws", "11111111-2222-4333-8444-555555555555")
        >>> chat.acquire(); chat.lock_path.exists(); chat.release(); chat.lock_path.exists()
        True
        False
        >>> chat.add_turn(Turn("hi", "Hello", "r1")); [t.prompt for t in chat.turns()]
        ['hi']
    """

    def __init__(self, directory: Path, chat_id: str, workspace: str) -> None:
        self.directory = directory
        self.chat_id = chat_id
        self.workspace = workspace
        self._lock_fd: int | None = None

    @property
    def lock_path(self) -> Path:
        """Where the run lock lives."""
        return self.directory / "run.lock"

    def exists(self) -> bool:
        """True once the chat was created (``create-chat`` or a finished turn)."""
        return (self.directory / "meta.json").exists()

    def create(self, model: str | None = None) -> None:
        """Write the chat's ``meta.json`` if it is not there yet."""
        if self.exists():
            return
        meta = {"chatId": self.chat_id, "workspace": self.workspace, "model": model}
        _write_atomic(self.directory / "meta.json", node_text.dumps(meta))

    def turns(self) -> list[Turn]:
        """The finished turns, oldest first."""
        path = self.directory / "turns.jsonl"
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return []
        out: list[Turn] = []
        for line in data.splitlines():
            try:
                obj: Any = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(obj, dict):
                out.append(
                    Turn(
                        str(obj.get("prompt", "")), str(obj.get("result", "")), str(obj.get("requestId", ""))
                    )
                )
        return out

    def add_turn(self, turn: Turn, model: str | None = None) -> None:
        """Append a finished turn (creating the chat if needed)."""
        self.create(model)
        line = node_text.dumps({"prompt": turn.prompt, "result": turn.result, "requestId": turn.request_id})
        with open(self.directory / "turns.jsonl", "ab") as f:
            f.write(line + b"\n")

    def acquire(self) -> None:
        """Take the run lock; raise :class:`ChatBusy` when a live process holds it.

        The lock is an ``flock`` on ``run.lock``: the kernel drops it when its holder dies, so a
        file left behind by a killed turn is simply locked again. The file holds the holder's pid
        for people reading the store.
        """
        if self._lock_fd is not None:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        fd = files.lock_file(self.lock_path, mode=0o644, wait=0)
        if fd is None:
            raise ChatBusy(self.chat_id)
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._lock_fd = fd

    def release(self) -> None:
        """Drop the run lock if this process holds it. Safe to call from a signal handler."""
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            _unlock(self.lock_path, fd)


class ChatStore:
    """The config dir: chats, trust, login state.

    Example:
        >>> import tempfile
        >>> store = ChatStore(tempfile.mkdtemp())
        >>> store.is_trusted("/ws"); store.trust("/ws"); store.is_trusted("/ws")
        False
        True
    """

    def __init__(self, config_dir: str | os.PathLike[str]) -> None:
        self.config_dir = Path(config_dir)

    def chat(self, workspace: str, chat_id: str) -> Chat:
        """The chat ``chat_id`` of ``workspace`` (it may not exist yet)."""
        return Chat(self.config_dir / "chats" / workspace_key(workspace) / chat_id, chat_id, workspace)

    def chat_count(self, workspace: str) -> int:
        """How many chats the workspace has."""
        directory = self.config_dir / "chats" / workspace_key(workspace)
        try:
            return sum(1 for p in directory.iterdir() if p.is_dir())
        except FileNotFoundError:
            return 0

    # ---- trust ---------------------------------------------------------------------------

    @property
    def _trust_path(self) -> Path:
        return self.config_dir / "trusted-workspaces.json"

    def is_trusted(self, workspace: str) -> bool:
        """True when ``workspace`` was trusted before (``--trust`` records it)."""
        try:
            data = self._trust_path.read_bytes()
        except FileNotFoundError:
            return False
        return node_text.node_str(workspace) in _trusted(data)

    def trust(self, workspace: str) -> None:
        """Record ``workspace`` as trusted (with those runs at once record)."""
        shown = node_text.node_str(workspace)  # as the real CLI (Node) would write it

        def add(data: bytes | None) -> bytes | None:
            items = _trusted(data)
            return None if shown in items else node_text.dumps({"workspaces": [*items, shown]})

        update_file(self._trust_path, add)

    # ---- login ---------------------------------------------------------------------------

    def logged_in(self) -> bool:
        """True unless ``logout`` was run (the simulator starts logged in)."""
        try:
            obj: Any = orjson.loads((self.config_dir / "sim-auth.json").read_bytes())
        except (FileNotFoundError, orjson.JSONDecodeError):
            return True
        return not (isinstance(obj, dict) and obj.get("loggedIn") is False)

    def set_logged_in(self, value: bool) -> None:
        """``login`` / ``logout``."""
        _write_atomic(self.config_dir / "sim-auth.json", orjson.dumps({"loggedIn": value}))


def _trusted(data: bytes | None) -> list[str]:
    """The workspaces of ``trusted-workspaces.json`` (none when it is missing or malformed)."""
    try:
        obj: Any = orjson.loads(data) if data is not None else None
    except orjson.JSONDecodeError:
        return []
    items = obj.get("workspaces") if isinstance(obj, dict) else None
    return [str(x) for x in items] if isinstance(items, list) else []
