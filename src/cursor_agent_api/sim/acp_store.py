"""ACP sessions on disk, beside print mode's chats in the same config dir (ACP.md §10)::

    acp-sessions/<session id>/meta.json      {"schemaVersion": 1, "cwd": …, "title": …}
    acp-sessions/<session id>/turns.jsonl    the finished turns (print mode's :class:`~.store.Chat`)
    acp-sessions/<session id>/replay.jsonl   one line per turn: its coalesced session updates

The two stores are separate, as on the real builds: ``session/load`` of a print-mode chat id is
"not found" and ``--resume`` of an ACP session id opens an empty chat. A session that never
took a turn has no ``turns.jsonl``: it cannot be loaded and ``session/list`` omits it.

Example:
    >>> import tempfile
    >>> store = AcpStore(ChatStore(tempfile.mkdtemp()))
    >>> s = store.create("8ef40118-8378-436d-8ba8-2436b19cc877", "/ws")
    >>> store.exists(s.session_id), store.list()
    (False, [])
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from ..files import replace_file
from . import node_text
from .store import Chat, ChatStore, Turn, is_uuid

SCHEMA_VERSION = 1


class AcpSessionFiles:
    """One session's files: its meta, its turns (a :class:`~.store.Chat`) and its replay."""

    def __init__(self, directory: Path, session_id: str, cwd: str) -> None:
        self.directory = directory
        self.session_id = session_id
        self.cwd = cwd
        self.chat = Chat(directory, session_id, cwd)

    def meta(self) -> dict[str, Any]:
        """The ``meta.json`` object (empty when missing or unreadable)."""
        try:
            obj: Any = orjson.loads((self.directory / "meta.json").read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return {}
        return obj if isinstance(obj, dict) else {}

    def write_meta(self, title: str | None, updated_ns: int | None = None) -> None:
        """Write ``meta.json`` (keeps the cwd it was created with, as the real store does;
        ``updatedAtNs``, the time of the last turn, orders ``session/list``)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        meta: dict[str, Any] = {"schemaVersion": SCHEMA_VERSION, "cwd": self.cwd, "title": title}
        if updated_ns is not None:
            meta["updatedAtNs"] = updated_ns
        replace_file(self.directory / "meta.json", node_text.dumps(meta))

    def add_turn(self, turn: Turn, updates: list[dict[str, Any]]) -> None:
        """Record a finished (or cancelled) turn and its coalesced updates."""
        self.chat.add_turn(turn)
        with open(self.directory / "replay.jsonl", "ab") as f:
            f.write(node_text.dumps({"updates": updates}) + b"\n")
        self.write_meta(self.meta().get("title"), time.time_ns())

    def turns(self) -> list[Turn]:
        """The turns, oldest first."""
        return self.chat.turns()

    def replay(self) -> list[dict[str, Any]]:
        """Every recorded update, oldest first."""
        try:
            data = (self.directory / "replay.jsonl").read_bytes()
        except FileNotFoundError:
            return []
        out: list[dict[str, Any]] = []
        for line in data.splitlines():
            try:
                obj: Any = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(obj, dict) and isinstance(obj.get("updates"), list):
                out.extend(u for u in obj["updates"] if isinstance(u, dict))
        return out


class AcpStore:
    """The ``acp-sessions`` directory of a :class:`~.store.ChatStore`'s config dir."""

    def __init__(self, chats: ChatStore) -> None:
        self.root = chats.config_dir / "acp-sessions"

    def create(self, session_id: str, cwd: str) -> AcpSessionFiles:
        """A new session's files (``meta.json`` written at once, no turns yet)."""
        files = AcpSessionFiles(self.root / session_id, session_id, cwd)
        files.write_meta(None)
        return files

    def open(self, session_id: str) -> AcpSessionFiles | None:
        """A stored session that took a turn, else ``None``."""
        if not self.exists(session_id):
            return None
        directory = self.root / session_id
        meta = AcpSessionFiles(directory, session_id, "").meta()
        return AcpSessionFiles(directory, session_id, str(meta.get("cwd") or ""))

    def exists(self, session_id: str) -> bool:
        """True for a well-formed id whose session took at least one turn."""
        return is_uuid(session_id) and (self.root / session_id / "turns.jsonl").is_file()

    def list(self) -> list[dict[str, Any]]:
        """``session/list``'s entries: sessions that took a turn, newest first, every cwd."""
        rows: list[tuple[int, dict[str, Any]]] = []
        try:
            entries = list(self.root.iterdir())
        except FileNotFoundError:
            return []
        for directory in entries:
            files = self.open(directory.name)
            if files is None:
                continue
            meta = files.meta()
            stamp = meta.get("updatedAtNs")
            ns = stamp if isinstance(stamp, int) else (directory / "turns.jsonl").stat().st_mtime_ns
            when = datetime.fromtimestamp(ns / 1e9, tz=timezone.utc)
            updated = when.isoformat(timespec="milliseconds").replace("+00:00", "Z")
            row = {
                "sessionId": files.session_id,
                "cwd": files.cwd,
                "title": meta.get("title"),
                "updatedAt": updated,
            }
            rows.append((ns, row))
        rows.sort(key=lambda r: r[0], reverse=True)
        return [r for _, r in rows]
