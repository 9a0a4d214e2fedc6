"""The chats this tool has saved: one file per chat, in the client's suspend/restore format.

Each file is what :meth:`ConversationSession.save` writes (``version``, ``chat_id``,
``workspace``, ``model``, ``history``), so a saved chat can be restored from Python
with :meth:`ConversationSession.load`. They live in ``$CURSOR_AGENT_API_HOME/chats``
(default: the per-user data directory, e.g. ``~/.local/share/cursor-agent-api/chats``).

Example:
    >>> import tempfile, os
    >>> os.environ["CURSOR_AGENT_API_HOME"] = tempfile.mkdtemp()
    >>> SavedChats().list()
    []
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
from collections import Counter
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import AgentConfig
from ..errors import SessionError
from ..files import lock_file
from ..home import home_dir, private_dir
from ..sessions import ConversationSession, SessionTurn, read_session_file

_SAFE_ID = re.compile(r"^[A-Za-z0-9._-]{1,128}$")


def _turn_key(turn: SessionTurn) -> tuple[object, ...]:
    """What tells one saved turn from another (its stamp, to the microsecond, and its text)."""
    return tuple(turn.to_dict().values())


@dataclass(frozen=True, slots=True)
class ChatSummary:
    """One line of ``sessions list``.

    Example:
        >>> ChatSummary("id", "/w", "hi", 2, 0.0, None).turns
        2
    """

    chat_id: str
    workspace: str | None
    first_prompt: str
    turns: int
    last_used: float
    model: str | None
    transport: str = "print"
    """The transport it ran on, ``"print"`` or ``"acp"`` (a file that records none: print)."""
    unreadable: str | None = None
    """Why the chat's file cannot be read (then ``chat_id`` is the file's name, the rest
    empty, ``last_used`` the file's time), ``None`` for a chat read whole."""


class ChatLookupError(SessionError):
    """No saved chat has this id (or prefix), or several do; the message says which.

    Example:
        >>> str(ChatLookupError("no saved chat abc"))
        'no saved chat abc'
    """

    remedy = ""


class AmbiguousChatError(ChatLookupError):
    """A prefix that several saved chats share."""


class DamagedChatError(SessionError):
    """A saved chat's file that cannot be read or is not a session; the message says which
    file, why, and what to do.

    Example:
        >>> DamagedChatError("cannot read the saved chat x").cli_message()
        'cannot read the saved chat x'
    """

    remedy = ""


class SavedChats:
    """The saved chats: paths, listing, removal."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or home_dir() / "chats"

    def path(self, chat_id: str) -> Path:
        """Where the chat's file is (``SessionError`` for an id that is not a safe file name)."""
        if not _SAFE_ID.match(chat_id):
            raise ChatLookupError(f"not a chat id: {chat_id!r}")
        return self.root / f"{chat_id}.json"

    def save(self, session: ConversationSession) -> Path | None:
        """Save the session under its chat id (nothing before the chat has an id).

        Several commands may have the same chat open (a ``chat`` left open, a ``run
        --resume`` meanwhile): under an exclusive lock, the file is read again and the
        session's turns that it lacks are added after its own, so no command erases the
        turns another saved. ``session.history`` becomes what the file then holds. A file
        that cannot be read raises (``SessionError``, ``OSError``) and is left as it is.

        Example:
            >>> import tempfile
            >>> from cursor_agent_api.sessions import SessionTurn
            >>> chats, chat = SavedChats(Path(tempfile.mkdtemp())), "8b72ae6d-ab42-4854-991e-6ecf580e66c2"
            >>> one, two = ConversationSession(session_id=chat), ConversationSession(session_id=chat)
            >>> one.history.append(SessionTurn("from one", "ok", True, chat, timestamp=1.0))
            >>> two.history.append(SessionTurn("from two", "ok", True, chat, timestamp=2.0))
            >>> path = chats.save(one); path = chats.save(two)
            >>> [turn.prompt for turn in read_session_file(path)["history"]]
            ['from one', 'from two']
        """
        if not session.session_id:
            return None
        if not self.root.is_dir():  # prompts and answers: for this user only (files are 0600)
            private_dir(self.root)
        path = self.path(session.session_id)
        with self._lock():
            if os.path.lexists(path):  # (a folder, another chat's copy: raised, left as it is)
                on_disk = self._read(path, session.session_id)["history"]
                saved = Counter(_turn_key(t) for t in on_disk)
                mine = []
                for turn in session.history:  # a turn the file has already is not added again
                    key = _turn_key(turn)
                    if saved[key]:
                        saved[key] -= 1
                    else:
                        mine.append(turn)
                session.history[:] = [*on_disk, *mine]
            session.save(path)
        return path

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        """Exclusive, across processes, while a chat's file is read and written again (one
        lock file for the folder: a save takes milliseconds)."""
        fd = lock_file(self.root / ".lock")
        try:
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def load(self, chat_id: str, config: AgentConfig,
             keep: Collection[str] = ()) -> ConversationSession:
        """The saved chat as a session run with ``config`` and the file's workspace and model,
        except those named in ``keep`` (given on the command line: they win).

        :class:`DamagedChatError` if the file cannot be read or is not a session.
        """
        path = self.path(chat_id)
        try:
            self._read(path, chat_id)  # (not a file, another chat's: not loaded)
            return ConversationSession.load(path, config,
                                            **{name: getattr(config, name) for name in keep})
        except (OSError, SessionError) as exc:
            raise _damaged(path, chat_id, exc, ", or start a new chat without --resume") from None

    def transport(self, chat_id: str) -> str | None:
        """The transport the saved chat ran on (``"print"``, ``"acp"``), as its file records
        it (a file that records none was saved before ACP mode existed: ``"print"``); ``None``
        when the file names another chat (a copy, a file renamed by hand), or cannot be read
        (loading it says why).

        Example:
            >>> import tempfile
            >>> chats, chat = SavedChats(Path(tempfile.mkdtemp())), "8b72ae6d-ab42-4854-991e-6ecf580e66c2"
            >>> _ = chats.save(ConversationSession(AgentConfig(transport="acp"), session_id=chat))
            >>> chats.transport(chat), chats.transport("not-saved")
            ('acp', None)
        """
        data = self.recorded(chat_id)
        return None if data is None else _recorded_transport(data)

    def recorded(self, chat_id: str) -> dict[str, Any] | None:
        """The saved chat's file as :func:`read_session_file` reads it (its ``config``,
        when it has one: the settings the chat ran with); ``None`` when there is no
        such file, it names another chat, or it cannot be read (loading it says why).

        Example:
            >>> import tempfile
            >>> chats, chat = SavedChats(Path(tempfile.mkdtemp())), "8b72ae6d-ab42-4854-991e-6ecf580e66c2"
            >>> _ = chats.save(ConversationSession(AgentConfig(agent_binary="x"), session_id=chat))
            >>> chats.recorded(chat)["config"]["agent_binary"], chats.recorded("not-saved")
            ('x', None)
        """
        try:
            return self._read(self.path(chat_id), chat_id)
        except (SessionError, OSError):
            return None

    @staticmethod
    def _read(path: Path, chat_id: str) -> dict[str, Any]:
        """The file of chat ``chat_id``, as :func:`read_session_file` reads it: ``OSError``
        when it is not a file (a folder; a FIFO would be read for ever) or cannot be read,
        ``SessionError`` when it is not a session or holds another chat (a copy, a file
        renamed by hand: resuming or saving it would mix two chats).

        Example:
            >>> import tempfile
            >>> chats = SavedChats(Path(tempfile.mkdtemp()))
            >>> path = chats.save(ConversationSession(session_id="8b72ae6d-ab42-4854-991e-6ecf580e66c2"))
            >>> try:
            ...     SavedChats._read(path, "11111111-1111-4111-8111-111111111111")
            ... except SessionError as exc:
            ...     print(exc.message)  # doctest: +ELLIPSIS
            it holds chat 8b72ae6d-..., not 11111111-...: a copy, or a file renamed by hand
        """
        if not path.is_file():
            raise _not_a_file(path)
        data = read_session_file(path)
        held = data.get("chat_id")
        if held not in (None, chat_id):
            raise SessionError(f"it holds chat {held}, not {chat_id}: a copy, or a file "
                               "renamed by hand")
        return data

    def exists(self, chat_id: str) -> bool:
        """True if this chat was saved: something is there under its name (a folder, a
        damaged file too: :meth:`load` says what)."""
        try:
            return os.path.lexists(self.path(chat_id))
        except SessionError:
            return False

    def ids(self) -> list[str]:
        """The ids of every saved chat, sorted."""
        if not self.root.is_dir():
            return []
        return sorted(p.stem for p in self.root.glob("*.json") if _SAFE_ID.match(p.stem))

    def resolve(self, text: str) -> str:
        """The saved chat's full id for an id or a unique prefix of one.

        A trailing ``…`` (an id cut by a narrow table) is ignored. :class:`ChatLookupError`
        when no saved chat matches, :class:`AmbiguousChatError` when several do (named).

        Example:
            >>> import tempfile
            >>> chats = SavedChats(Path(tempfile.mkdtemp()))
            >>> for name in ("8ef40118-aa", "8ef4ffff-bb"):
            ...     _ = (chats.root / f"{name}.json").write_text("{}")
            >>> chats.resolve("8ef40"), chats.resolve("8ef40118-aa…")
            ('8ef40118-aa', '8ef40118-aa')
            >>> try:
            ...     chats.resolve("8ef4")
            ... except AmbiguousChatError as exc:
            ...     print(exc)
            8ef4 matches 2 saved chats (8ef40118-aa, 8ef4ffff-bb): give more of the id
        """
        prefix = text.strip().removesuffix("…").removesuffix("...")
        ids = self.ids()
        if prefix in ids:
            return prefix
        matches = [i for i in ids if prefix and i.startswith(prefix)]
        if len(matches) == 1:
            return matches[0]
        if matches:
            shown = ", ".join(matches[:5]) + (", …" if len(matches) > 5 else "")
            raise AmbiguousChatError(
                f"{text} matches {len(matches)} saved chats ({shown}): give more of the id")
        raise ChatLookupError(f"no saved chat matches {text!r} (see `cursor-agent-api sessions list`)")

    def summary(self, chat_id: str) -> ChatSummary:
        """The summary of one saved chat (:class:`ChatLookupError` if unknown,
        :class:`DamagedChatError`, which names ``sessions rm``, if unreadable)."""
        path = self.path(chat_id)
        if not path.is_file():
            if path.exists():  # a folder, a pipe: listed as unreadable, so named as such
                raise _damaged(path, chat_id, _not_a_file(path))
            raise ChatLookupError(
                f"no saved chat {chat_id} (see `cursor-agent-api sessions list`)")
        try:
            return self._summary(path)
        except (OSError, SessionError) as exc:
            raise _damaged(path, chat_id, exc) from None

    def _summary(self, path: Path) -> ChatSummary:
        data = self._read(path, path.stem)
        history = data["history"]
        last = max((t.timestamp for t in history), default=0.0) or path.stat().st_mtime
        return ChatSummary(
            chat_id=path.stem,
            workspace=data.get("workspace"),
            first_prompt=history[0].prompt if history else "",
            turns=len(history),
            last_used=last,
            model=data.get("model"),
            transport=_recorded_transport(data),
        )

    def list(self) -> list[ChatSummary]:
        """Every saved chat, most recently used first; a file that cannot be read is listed
        too, with why (:attr:`ChatSummary.unreadable`): a chat is never hidden.

        Example:
            >>> import tempfile
            >>> chats = SavedChats(Path(tempfile.mkdtemp()))
            >>> _ = (chats.root / "8b72ae6d.json").write_text("{")
            >>> [(c.chat_id, c.unreadable[:8]) for c in chats.list()]
            [('8b72ae6d', 'not JSON')]
        """
        if not self.root.is_dir():
            return []
        out = []
        for path in self.root.glob("*.json"):
            try:
                if not _SAFE_ID.match(path.stem):  # (no command can name it)
                    raise SessionError("not a saved chat's file name: remove the file by hand")
                if not path.is_file():  # (a FIFO would be read for ever)
                    raise _not_a_file(path)
                out.append(self._summary(path))
            except (SessionError, OSError) as exc:
                with contextlib.suppress(OSError):  # (gone meanwhile: not a chat any more)
                    out.append(ChatSummary(path.stem, None, "", 0, path.stat().st_mtime, None,
                                           "", unreadable=_why(path, exc)))
        return sorted(out, key=lambda c: c.last_used, reverse=True)

    def remove(self, chat_id: str) -> None:
        """Forget a saved chat (``SessionError`` if unknown)."""
        path = self.path(chat_id)
        try:
            path.unlink()
        except FileNotFoundError:
            raise ChatLookupError(f"no saved chat {chat_id}") from None
        except OSError as exc:  # a folder where the file goes, a file it may not remove
            raise DamagedChatError(f"cannot remove {path}: {exc.strerror or exc}: "
                                   "remove it by hand") from None


def _not_a_file(path: Path) -> OSError:
    """The error of a saved chat's name that is there but is not a file (a folder, a pipe).

    Example:
        >>> _not_a_file(Path("/c/x.json")).strerror
        'not a file (a folder, a pipe or a device)'
    """
    return OSError(errno.EINVAL, "not a file (a folder, a pipe or a device)", str(path))


def _why(path: Path, exc: OSError | SessionError) -> str:
    """Why a saved chat's file cannot be read, without its path (the caller names it).

    Example:
        >>> from cursor_agent_api.errors import SessionFileError
        >>> _why(Path("/c/x.json"), SessionFileError("cannot load the session from '/c/x.json': not JSON"))
        'not JSON'
        >>> _why(Path("/c/x.json"), PermissionError(13, "Permission denied"))
        'Permission denied'
    """
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return exc.message.removeprefix(f"cannot load the session from {os.fspath(path)!r}: ")


def _damaged(path: Path, chat_id: str, exc: OSError | SessionError,
             more: str = "") -> DamagedChatError:
    """The error for a saved chat's file that cannot be read: which file, why, and that
    ``sessions rm`` removes it (``more``: another way out, for the command at hand).

    Example:
        >>> str(_damaged(Path("/c/x.json"), "x", PermissionError(13, "Permission denied")))
        '... Permission denied — repair or remove it (cursor-agent-api sessions rm x)'
    """
    return DamagedChatError(f"cannot read the saved chat {path}: {_why(path, exc)} — repair or "
                            f"remove it (cursor-agent-api sessions rm {chat_id}){more}")


def _recorded_transport(data: dict[str, Any]) -> str:
    """The transport a saved chat's file (as :func:`read_session_file` read it) records;
    ``"print"`` for a file that records none (saved before ACP mode existed: version 1, or
    version 2 before the field).

    Example:
        >>> _recorded_transport({"config": {"transport": "acp"}}), _recorded_transport({})
        ('acp', 'print')
    """
    transport = data.get("config", {}).get("transport")  # (a dict: read_session_file checked)
    return transport if isinstance(transport, str) else "print"
