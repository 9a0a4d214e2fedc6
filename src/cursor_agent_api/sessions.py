"""Multi-turn chats: :class:`ConversationSession` and :class:`AsyncConversationSession`.

A session is a chat id plus a history. The first turn starts a chat (or
:meth:`ConversationSession.create_chat` pre-creates one with ``agent
create-chat``); every later turn resumes it with ``--resume``. The chat id is
the only state the agent needs (seed 003), so a session can be suspended with
:meth:`~ConversationSession.save` — chat id, every setting needed to resume the
same way (never the API key, only the names of ``env`` variables) and history, in a small
JSON file written atomically — and restored with :meth:`~ConversationSession.load` alone,
in another process, days later. A resume the
agent refuses comes back as a result whose ``exception`` is a
:class:`~cursor_agent_api.errors.SessionError` with the agent's reason.

What does not live here: running a turn (:mod:`cursor_agent_api.client`).

Example:
    >>> session = ConversationSession(AgentConfig(trust=True))           # doctest: +SKIP
    >>> session.send("Remember the number 42").success                   # doctest: +SKIP
    True
    >>> session.save("chat.json")                                        # doctest: +SKIP
    >>> later = ConversationSession.load("chat.json")                    # doctest: +SKIP
    >>> later.send("Which number did I ask you to remember?").result     # doctest: +SKIP
    '42'
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import threading
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import orjson

from .client import (
    AsyncCursorAgentClient,
    AsyncStreamingResponse,
    CursorAgentClient,
    StreamingResponse,
    prompt_text,
)
from .config import AgentConfig, is_chat_id
from .errors import SessionError, SessionFileError
from .files import replace_file
from .protocol import AgentResult
from .runtime.acp_steering import CALLBACK_OF, TURN_SESSIONS

__all__ = [
    "SESSION_FILE_VERSION",
    "AsyncConversationSession",
    "ConversationSession",
    "SessionTurn",
    "create_chat",
    "read_session_file",
]

SESSION_FILE_VERSION = 2
"""Version of the JSON written by ``save`` (2: with ``config``; files of version 1, which
kept only the chat id, workspace, model and history, are still read)."""

_READABLE_VERSIONS = (1, 2)

_SAVED_FIELDS = ("agent_binary", "trust", "force_approve", "approve_mcps", "headers",
                 "output_format", "stream_partial_output", "extra_args", "timeout",
                 "idle_timeout", "result_grace", "kill_grace", "max_line_bytes", "keep_events",
                 "keep_content", "stderr_tail_bytes", "transport", "session_mode",
                 "permission_mode", "allowed_tools", "denied_tools", "permission_timeout")
"""The settings ``save`` keeps besides the workspace and the model. Never the API key, and
of ``env`` only the names (``env_set``: variables given a value; ``env_unset``: removed).
Not the callbacks (``can_use_tool``, …), tools and ``mcp_servers`` (which may hold
credentials): ``load`` takes them as arguments."""


def _without_api_key(args: list[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg == "--api-key":
            skip = True
        elif not arg.startswith("--api-key="):
            out.append(arg)
    return out


def _saved_config(config: AgentConfig) -> dict[str, Any]:
    saved: dict[str, Any] = {name: getattr(config, name) for name in _SAVED_FIELDS}
    saved["output_format"] = config.output_format.value
    if not isinstance(config.transport, str):  # an object (tests' scripts) is not saved
        del saved["transport"]
    saved["extra_args"] = _without_api_key(config.extra_args)
    saved["env_set"] = sorted(k for k, v in config.env.items() if v is not None)
    saved["env_unset"] = sorted(k for k, v in config.env.items() if v is None)
    return saved


@dataclass(slots=True)
class SessionTurn:
    """One turn of a session's history: what was asked and what came back.

    Example:
        >>> t = SessionTurn("hi", "hello", True, "c1")
        >>> SessionTurn.from_dict(t.to_dict()) == t
        True
    """

    prompt: str
    result: str
    success: bool
    session_id: str | None
    error: str | None = None
    cancelled: bool = False
    duration_ms: int | None = None
    timestamp: float = 0.0

    @classmethod
    def from_result(cls, prompt: str, result: AgentResult) -> SessionTurn:
        """The history entry for ``result``.

        Example:
            >>> SessionTurn.from_result("q", AgentResult(True, "a", "c1")).result
            'a'
        """
        return cls(prompt, result.result, result.success, result.session_id, result.error,
                   result.cancelled, result.duration_ms, time.time())

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict.

        Example:
            >>> SessionTurn("q", "a", True, "c1").to_dict()["result"]
            'a'
        """
        return {
            "prompt": self.prompt,
            "result": self.result,
            "success": self.success,
            "session_id": self.session_id,
            "error": self.error,
            "cancelled": self.cancelled,
            "duration_ms": self.duration_ms,
            "timestamp": self.timestamp,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SessionTurn:
        """Rebuild from :meth:`to_dict` (``ValueError`` on a malformed entry).

        A ``timestamp`` that is not a time a clock can show (not a number, not finite,
        before 1970 or after the year 9999) is read as ``0.0``, unknown, as in files of
        version 1: it is cosmetic, and the turn itself is kept.
        """
        if not isinstance(d, dict) or not isinstance(d.get("prompt"), str) \
                or not isinstance(d.get("result"), str):
            raise ValueError(f"not a history entry: {d!r:.200}")
        for key, kinds in _TURN_TYPES.items():
            if key in d and not isinstance(d[key], kinds):
                raise ValueError(f"a history entry's {key} must be "
                                 f"{' or '.join(_TYPE_NAMES[k] for k in kinds)}, "
                                 f"got {d[key]!r:.60}")
        duration = d.get("duration_ms")
        stamp = d.get("timestamp")
        return cls(
            d["prompt"], d["result"], bool(d.get("success")),
            d.get("session_id"), d.get("error"), bool(d.get("cancelled")),
            duration if isinstance(duration, int) and not isinstance(duration, bool) else None,
            _stamp(stamp),
        )


_TURN_TYPES: dict[str, tuple[type, ...]] = {
    "success": (bool,), "cancelled": (bool,), "session_id": (str, type(None)),
    "error": (str, type(None))}
"""The types of a history entry's fields that say what happened (``duration_ms`` and
``timestamp`` are cosmetic: a value of another type is read as unknown)."""

_TYPE_NAMES = {bool: "true or false", str: "a string", type(None): "null"}

_LAST_STAMP = 253_402_300_799.0
"""The last second of the year 9999: the latest time ``datetime`` can show."""


def _stamp(value: object) -> float:
    """A saved turn's timestamp, or ``0.0`` (unknown) for one no clock can show.

    Example:
        >>> _stamp(1_700_000_000), _stamp(1e300), _stamp(float("nan")), _stamp("x")
        (1700000000.0, 0.0, 0.0, 0.0)
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    stamp = float(value)
    return stamp if 0.0 <= stamp <= _LAST_STAMP else 0.0  # NaN fails both comparisons




_FILE_KEYS = {1: ("version", "chat_id", "workspace", "model", "history"),
              2: ("version", "chat_id", "workspace", "model", "config", "history")}
"""The keys ``save`` wrote, per version (see the git history of this module). A file
without ``chat_id`` and ``history`` (``save`` always wrote both) is not a saved session;
other keys, at the top or in ``config``, are read past: a newer version of this library
adds settings without a new file version (``transport``, ``permission_mode``, … did), and
its files stay readable here."""

_REQUIRED_KEYS = ("chat_id", "history")


def read_session_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a file written by ``save``: ``version``, ``chat_id``, ``workspace``, ``model``,
    ``config`` (version 2: the other settings, see :meth:`ConversationSession.save`) and
    ``history`` (a list of :class:`SessionTurn`). ``SessionFileError`` (a ``SessionError``)
    naming the file and what is wrong if it is not a session file — not JSON, not an object,
    no ``version`` or one this library does not read (1 and 2), a key no version of ``save``
    wrote (one turn's result as ``run -o json`` prints it, a ``session_id`` for ``chat_id``),
    a field of the wrong type (``chat_id`` not a chat id, a turn's ``success`` not a
    boolean); ``OSError`` if it cannot be read.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "s.json"
        >>> _ = p.write_text('{"version": 1, "session_id": "x"}')
        >>> read_session_file(p)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        cursor_agent_api.errors.SessionFileError: ...: no chat_id and no history ... session_id is not ...
    """
    where = f"cannot load the session from {os.fspath(path)!r}"
    raw = Path(path).read_bytes()
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise SessionFileError(f"{where}: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise SessionFileError(f"{where}: not an object")
    if "version" not in data:
        if {"success", "result"} <= data.keys():
            raise SessionFileError(f"{where}: it is one turn's result (as `run -o json` prints "
                                   "it), not a saved session; its session_id is the chat "
                                   "id to resume")
        raise SessionFileError(f"{where}: no version (every saved session has one)")
    version = data["version"]
    if type(version) is not int or version not in _READABLE_VERSIONS:
        raise SessionFileError(f"{where}: file version {version!r:.40}, this library reads "
                               "versions 1 and 2")
    config = data.get("config", {})
    if not isinstance(config, dict):
        raise SessionFileError(f"{where}: config must be an object")
    for key in ("env_set", "env_unset"):  # names only (the values are never saved)
        names = config.get(key)
        if names is not None and (not isinstance(names, list)
                                  or not all(isinstance(n, str) for n in names)):
            raise SessionFileError(f"{where}: config.{key} must be a list of strings "
                                   "(variable names)")
    for key in ("chat_id", "workspace", "model"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise SessionFileError(f"{where}: {key} must be a string, got "
                                   f"{type(data[key]).__name__}")
    chat = data.get("chat_id")
    if chat is not None and not is_chat_id(chat):
        raise SessionFileError(f"{where}: chat_id must be a chat id (a UUID), got {chat!r:.60}")
    history = data.get("history", [])
    if not isinstance(history, list):
        raise SessionFileError(f"{where}: history must be a list")
    # (after the fields' own checks: a field of the wrong type is named, as a damage)
    missing = [key for key in _REQUIRED_KEYS if key not in data]
    if missing:
        unknown = sorted(data.keys() - set(_FILE_KEYS[version]))
        has = (f"; {', '.join(repr(k)[1:-1][:40] for k in unknown[:5])} "
               f"{'is not a field' if len(unknown) == 1 else 'are not fields'} of a saved "
               "session") if unknown else ""
        raise SessionFileError(f"{where}: no {' and no '.join(missing)} (every saved session "
                               f"of version {version} has {', '.join(_FILE_KEYS[version])}){has}")
    try:
        data["history"] = [SessionTurn.from_dict(h) for h in history]
    except ValueError as exc:
        raise SessionFileError(f"{where}: {exc}") from None
    return data


_C = TypeVar("_C", CursorAgentClient, AsyncCursorAgentClient)
_S = TypeVar("_S", bound="_SessionState[Any]")


class _SessionState(Generic[_C]):
    """What both session flavours share: the client, chat id, history, the turn config, the
    bookkeeping of streamed turns, save and load. Semantics, the same for both: a streamed
    turn is recorded once, by :meth:`finalize_stream` or, at the latest, before the next
    turn starts. The flavours add only the calls, blocking or awaited."""

    _client_type: type[_C]
    client: _C
    """The client the turns run on (shared, or made by the session and closed with it)."""

    def __init__(
        self,
        client: _C | AgentConfig | None = None,
        *,
        session_id: str | None = None,
        history: list[SessionTurn] | None = None,
        **fields: Any,
    ) -> None:
        kind = self._client_type
        if isinstance(client, kind):
            if fields:
                raise TypeError("pass AgentConfig fields to the client, not to a session "
                                "that shares it")
            self.client, self._owns = client, False
        elif client is None or isinstance(client, AgentConfig):
            self.client, self._owns = kind(client, **fields), True
        else:
            raise TypeError(f"{type(self).__name__} takes a {kind.__name__} or an AgentConfig, "
                            f"got {type(client).__name__}")
        config = self._config = self.client.config
        if session_id is not None and not is_chat_id(session_id):
            raise SessionError(f"cannot continue chat {session_id!r:.80}: a chat id must be a "
                               "UUID (such as 8b72ae6d-ab42-4854-991e-6ecf580e66c2)")
        self._session_id = session_id if session_id is not None else config.resume
        self.history: list[SessionTurn] = list(history or [])
        self._base: dict[str, Any] = {}  # the session's own settings over the client's
        self._pinned = False  # the chat's folder is in _base (see _pin)
        self._folders: weakref.WeakKeyDictionary[Any, str | None] = \
            weakref.WeakKeyDictionary()  # a streamed turn's folder, while the chat's is not fixed
        self._streams: list[Any] = []  # streamed turns not yet recorded, oldest first
        self._started: weakref.WeakSet[Any] = weakref.WeakSet()  # every send_stream's stream
        self._recorded: weakref.WeakKeyDictionary[Any, AgentResult] = \
            weakref.WeakKeyDictionary()
        self._unrecorded: weakref.WeakSet[Any] = weakref.WeakSet()  # a send's that raised
        self._mark = object()  # this session in its turns' TURN_SESSIONS (not the session)

    def _run_with(self, config: AgentConfig) -> None:
        """Run every turn with ``config`` on the shared client: what differs from the
        client's config becomes the session's per-turn overrides (``resume`` is per turn)."""
        client = self.client.config
        self._base = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)
                      if f.name != "resume" and getattr(config, f.name) != getattr(client, f.name)}
        self._config = client.with_overrides(**self._base)

    @staticmethod
    def _folder(workspace: str | None) -> str | None:
        """``workspace``, else the current directory, made absolute (``workspace`` as it is
        when the current directory was removed: the turn's start then says so, as a client's).

        Example:
            >>> import os
            >>> ConversationSession._folder("ws") == os.path.join(os.getcwd(), "ws")
            True
        """
        try:
            return os.path.abspath(workspace or os.getcwd())
        except FileNotFoundError:
            return workspace

    def _pin(self, workspace: str | None) -> None:
        """Fix the chat's folder, once: ``workspace`` (the turn's that made the chat), else
        the current directory, made absolute. The CLI keeps chats per workspace, so every
        later turn and :meth:`save` use this folder, whatever ``os.chdir`` the program does
        meanwhile (a relative workspace, or ``None``, would otherwise resolve elsewhere and
        lose the chat). Fixed once the session has a chat (its first turn that ran, or
        :meth:`create_chat`), or by :meth:`save`: not when the session is made, so a session
        made before the program moves to its project runs there, nor by a first turn that
        failed before it made a chat (a mistyped ``workspace=``)."""
        if self._pinned:
            return
        folder = self._folder(workspace)
        if folder is None:
            return
        self._base["workspace"] = folder
        self._config = self.client.config.with_overrides(**self._base)
        self._pinned = True

    @property
    def session_id(self) -> str | None:
        """The chat id (``None`` until the first turn or :meth:`create_chat`).

        A streamed turn that has ended is recorded first (without waiting for one that runs).
        """
        self._absorb()
        return self._session_id

    @property
    def config(self) -> AgentConfig:
        """The configuration the turns run with (``resume`` is set per turn): the client's,
        with what :meth:`load` gave the session on a shared client (the file's workspace and
        model, ``load``'s fields). From the first turn (or :meth:`create_chat`, :meth:`save`)
        on, ``workspace`` is the chat's folder, absolute (see :meth:`_pin`)."""
        return self._config

    def _checked(self, overrides: dict[str, Any]) -> str | None:
        """Check a turn's overrides now over the session's own (``TypeError`` / ``ValueError``
        as the config raises them), before anything of the turn happens; the folder the turn
        runs in while the chat's is not fixed (:meth:`_pin`): its workspace, or the current
        directory, now, made absolute (``None`` once fixed)."""
        if "resume" in overrides:
            raise TypeError("a session sets resume= itself; start another session to change chats")
        turn = {**self._base, **overrides}
        self.client.config.with_overrides(**turn, resume=self._session_id)
        self._refuse_elsewhere(overrides)
        return None if self._pinned else self._folder(turn.get("workspace", self._config.workspace))

    def _refuse_elsewhere(self, overrides: dict[str, Any]) -> None:
        """``ValueError`` for a turn whose ``workspace=`` is another folder than the chat's,
        once it is known (fixed by :meth:`_pin`; a loaded file's, or the workspace given with
        ``session_id=``): the CLI keeps
        chats per workspace, so the turn would resume nothing there and "succeed" without
        the conversation. The same folder, however written (relative, ``"."``), runs."""
        if "workspace" not in overrides:
            return
        if self._pinned:
            chat = self._config.workspace
        elif self._session_id is not None and self._config.workspace is not None:
            chat = self._folder(self._config.workspace)  # (a loaded file's, or given with it)
        else:
            return  # no chat yet, or a chat id given without its folder: the turn says it
        asked = self._folder(overrides["workspace"])
        if asked != chat:
            raise ValueError(
                f"this session's chat lives in {chat!r}, and the agent keeps chats per "
                f"folder: a turn in another folder ({asked!r}) would start without the "
                "conversation. Leave workspace= out, or start another session there")

    def _not_from_own_turn(self) -> None:
        """``SessionError`` for a ``send()``/``send_stream()`` from a callback of this
        session's own turn (``can_use_tool``, ``on_question``, ``on_plan``) while the turn
        waits on a callback: the turn waits for the callback, and the session's turns run one
        after the other, so it would wait for ever. (A task the callback leaves running may
        send once the turn waits on no callback: its turn queues behind this one.)"""
        steering = CALLBACK_OF.get()
        if steering is not None and steering.pending and self._mark in steering.sessions:
            raise SessionError(
                "a callback of this session's turn cannot send on its own session: the turn "
                "waits for the callback, and the session runs one turn at a time (it would "
                "wait for ever); send on another session or with the client instead")

    @contextlib.contextmanager
    def _in_turn(self) -> Iterator[None]:
        """Around the start of this session's turn: its callbacks run in this session
        (:data:`~cursor_agent_api.runtime.acp_steering.TURN_SESSIONS`)."""
        token = TURN_SESSIONS.set((*TURN_SESSIONS.get(), self._mark))
        try:
            yield
        finally:
            TURN_SESSIONS.reset(token)

    def _turn(self, overrides: dict[str, Any], folder: str | None) -> dict[str, Any]:
        """The overrides a turn runs with, as of now (the turns before it recorded, which may
        have fixed the chat's folder): the session's own, the turn's, the chat to resume; the
        turn's ``folder`` while the chat's is not fixed."""
        self._refuse_elsewhere(overrides)  # (the turns before it may have made the chat)
        turn = {**self._base, **overrides, "resume": self._session_id}
        turn["workspace"] = self._config.workspace if self._pinned else folder
        return turn

    @staticmethod
    def _never_ran(stream: Any) -> bool:
        """True for a stream that will never run: cancelled before it started, or whose
        start failed or was cut short (only an async stream starts after it is returned)."""
        return isinstance(stream, AsyncStreamingResponse) and stream._started \
            and stream._stopped and not stream._spawned \
            and (stream._starting is None or stream._starting.done())  # (none under way)

    def _drop(self, stream: Any) -> None:
        with contextlib.suppress(ValueError):
            self._streams.remove(stream)

    def _absorb(self) -> None:
        """Without waiting: record the oldest streamed turns that have ended, drop those that
        never ran, up to the first one still to come or running."""
        while self._streams:
            stream = self._streams[0]
            if self._never_ran(stream) or stream in self._unrecorded:
                self._drop(stream)
            elif stream.result is not None:
                self._finish(stream, stream.result)
            else:
                return

    def _record(self, prompt: str, result: AgentResult, folder: str | None) -> AgentResult:
        """Record a turn that ran in ``folder`` (the chat's, once it has one)."""
        # the id comes from the agent's output: only a well-formed chat id is ever resumed
        if result.session_id and is_chat_id(result.session_id):
            self._session_id = result.session_id
        if self._session_id is not None and not self._pinned:
            self._pin(folder)
        self.history.append(SessionTurn.from_result(prompt, result))
        return result

    def _finish(self, stream: Any, result: AgentResult) -> AgentResult:
        """Record a streamed turn once (``finalize_stream`` is idempotent per stream); not
        the turn of a ``send()`` that raised (cancelled: it did not end for its caller)."""
        self._drop(stream)
        if stream in self._unrecorded:
            return result
        if stream in self._recorded:
            return self._recorded[stream]
        self._recorded[stream] = result
        # (text: send_stream's, prompt_text)
        return self._record(stream.prompt, result, self._folders.get(stream))

    def _stream_of(self, args: tuple[Any, ...]) -> Any:
        """``finalize_stream(stream)``, or the older ``finalize_stream(prompt, stream)``:
        a stream this session's ``send_stream`` started (``TypeError`` for what is not a
        stream; ``ValueError`` for another's: another session's, the client's own
        ``query_stream``, whose turn is not this chat's). Nothing of the session changes."""
        if len(args) == 2 and isinstance(args[0], str):
            args = args[1:]
        kind = StreamingResponse if self._client_type is CursorAgentClient \
            else AsyncStreamingResponse
        if len(args) != 1 or not isinstance(args[0], kind):
            got = ", ".join(type(a).__name__ for a in args) or "nothing"
            raise TypeError(f"finalize_stream(stream) takes the {kind.__name__} that "
                            f"send_stream() returned, got {got}")
        if args[0] not in self._started:
            raise ValueError("finalize_stream: this stream was not started by this session "
                             "(another session's, or the client's own query_stream): only a "
                             "stream from this session's send_stream() is recorded in its "
                             "history and chat; finalize it with the session that started it, "
                             "or wait() for it")
        return args[0]

    @classmethod
    def load(cls: type[_S], path: str | os.PathLike[str],
             client: _C | AgentConfig | None = None, *, tools: Any = None,
             **overrides: Any) -> _S:
        """Restore a session written by :meth:`save`; the next turn resumes the saved chat.

        ``load(path)`` alone runs the agent as the saved session did: the same agent
        binary, workspace, model, trust, force, approve_mcps, headers, ... The values of
        its ``env`` variables are not in the file: each must be set in this process's
        environment or passed as ``load(path, env={...})`` (``SessionError`` naming the
        missing ones otherwise). The API key comes from ``CURSOR_API_KEY`` or
        ``api_key=``. With a config, its settings are used and only the file's workspace
        and model override them. With a client, the session runs its turns on that client
        (its tools, its ``agent acp`` process; closing the session leaves it open), with the
        file's workspace and model and ``**overrides`` applied to each turn.
        ``**overrides`` (AgentConfig fields) apply last. ``tools``: ``@tool`` functions for
        the session's own client (not with a client: give them to the client).
        ``SessionError`` if the file is not a session.

        Example:
            >>> session = ConversationSession.load("chat.json")  # doctest: +SKIP
            >>> session = ConversationSession.load("chat.json", timeout=600)  # doctest: +SKIP
            >>> session = ConversationSession.load("chat.json", client)  # doctest: +SKIP
        """
        shared = client if isinstance(client, cls._client_type) else None
        if shared is not None and tools is not None:
            raise TypeError("load(path, client) runs on the client's tools: give tools= to the "
                            "client, or load(path, tools=...) without a client")
        base = client.config if isinstance(client, (CursorAgentClient, AsyncCursorAgentClient)) \
            else client
        config, data = cls._restored(path, base, overrides)
        chat = data.get("chat_id")
        turns = {"session_id": chat if chat is not None else config.resume,
                 "history": data["history"]}
        if shared is None:
            return cls(config, **turns) if tools is None else cls(config, tools=tools, **turns)
        session = cls(shared, **turns)
        session._run_with(config)
        return session

    @staticmethod
    def _restored(path: str | os.PathLike[str], base: AgentConfig | None,
                  overrides: dict[str, Any]) -> tuple[AgentConfig, dict[str, Any]]:
        """The config and saved state of a session file.

        Without ``base``: every saved setting (the file is the whole configuration). With
        ``base``: ``base``'s settings, the file's workspace and model. ``overrides`` last.
        """
        data = read_session_file(path)
        where = f"cannot load the session from {os.fspath(path)!r}"
        fields: dict[str, Any] = {k: data[k] for k in ("workspace", "model")
                                  if data.get(k) is not None}
        saved = data.get("config") or {}
        if base is None:
            for name in _SAVED_FIELDS:
                if name in saved:
                    fields[name] = saved[name]
            env: dict[str, str | None] = {}
            given = overrides.get("env") or {}
            for name in saved.get("env_unset") or []:  # lists of str: read_session_file checked
                env[name] = None
            missing = []
            for name in saved.get("env_set") or []:
                if name in given:
                    continue
                if name in os.environ:
                    env[name] = os.environ[name]
                else:
                    missing.append(name)
            if missing:
                raise SessionError(
                    f"{where}: it was saved with the environment variable(s) "
                    f"{', '.join(missing)} set for the agent; values are never saved: set "
                    "them in the environment, or pass them to load(path, env={...})")
            if isinstance(given, dict):
                env.update(given)
            fields["env"] = env
            if (fields.get("permission_mode") == "ask"
                    and not {"can_use_tool", "permission_mode"} & overrides.keys()):
                raise SessionError(
                    f"{where}: it was saved with permission_mode='ask', whose callback is not "
                    "in the file: pass load(path, can_use_tool=...), or another permission_mode")
        later = {k: v for k, v in overrides.items() if k != "env"}
        if "env" in overrides and base is not None:
            later["env"] = overrides["env"]
        # checked with each other (and with the file's): an override may drop one of a pair
        # the config refuses together (a file saved with force_approve and a deny rule)
        for name in ("can_use_tool", "permission_mode", "force_approve", "denied_tools"):
            if name in later:
                fields[name] = later.pop(name)
        try:
            config = (base or AgentConfig()).with_overrides(**fields)
        except (TypeError, ValueError) as exc:
            raise SessionFileError(f"{where}: {exc}") from None
        # the caller's own arguments: a bad one is theirs (TypeError / ValueError), not the file's
        return (config.with_overrides(**later) if later else config), data

    def to_dict(self) -> dict[str, Any]:
        """The saved form: version, chat id, workspace, model, config, history.

        The workspace is the one the agent used: the chat's folder, fixed by the first
        turn (``config.workspace``, else the current directory then, made absolute; see
        :meth:`_pin`; with no turn yet, fixed now) — the CLI keeps chats per workspace, so
        a restore elsewhere must point at the same one, whatever the current directory is
        when the session is saved.
        ``config`` holds every other setting needed to resume the same way (agent
        binary, trust, force, approve_mcps, headers, output format, timeouts, ...), the
        names of ``env`` variables but never their values, and never the API key.
        A streamed turn that has ended is recorded first, even if it was not passed to
        ``finalize_stream`` (one still running is not waited for, and not saved).
        """
        self._absorb()
        running = next((self._folders[s] for s in self._streams if s in self._folders), None)
        self._pin(running if running is not None else self._config.workspace)
        return {
            "version": SESSION_FILE_VERSION,
            "chat_id": self._session_id,
            "workspace": self._config.workspace,
            "model": self._config.model,
            "config": _saved_config(self._config),
            "history": [t.to_dict() for t in self.history],
        }

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the session to ``path`` as JSON, atomically (temp file + ``os.replace``).

        The file is created readable by its owner only (it holds the prompts). A session that
        JSON cannot hold (a workspace whose path is not UTF-8 text) is a ``ValueError`` naming
        the path; nothing is written then. A path it cannot write (a missing folder, a
        directory) is the ``OSError`` of that, naming ``path`` as given.

        Example:
            >>> import tempfile, os
            >>> path = os.path.join(tempfile.mkdtemp(), "chat.json")
            >>> chat = "8b72ae6d-ab42-4854-991e-6ecf580e66c2"
            >>> ConversationSession(session_id=chat).save(path)
            >>> ConversationSession.load(path).session_id == chat
            True
        """
        data = self.to_dict()
        try:
            text = orjson.dumps(data, option=orjson.OPT_INDENT_2)
        except orjson.JSONEncodeError as exc:  # a lone surrogate: a byte that is not UTF-8
            workspace = data["workspace"]
            if _inert_path(workspace) == workspace:  # (not the path: nothing else should be)
                raise ValueError(f"{os.fspath(path)}: cannot save this session: {exc}") from None
            raise ValueError(
                f"{os.fspath(path)}: cannot save this session: the workspace's path is not "
                f"UTF-8 text, which a session file (JSON) cannot hold ({_inert_path(workspace)}):"
                " rename the folder, or work in another one") from None
        replace_file(Path(path), text, mode=0o600)


def _inert_path(path: str) -> str:
    r"""``path`` with the bytes that are not UTF-8 (decoded by Python as lone surrogates)
    written ``\xNN``.

    Example:
        >>> import os
        >>> _inert_path(os.fsdecode(b"/home/caf\xe9"))
        '/home/caf\\xe9'
    """
    try:
        return os.fsencode(path).decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate no byte decodes to (a caller's): its code point
        return path.encode("utf-8", "backslashreplace").decode()


class _InCallOrder:
    """A lock taken in call order (first come, first served), for the threads of a sync
    session: its turns start one after the other in the order they were asked for. A wait
    interrupted (``KeyboardInterrupt``) gives its place up.

    Example:
        >>> order, done = _InCallOrder(), []
        >>> with order():
        ...     done.append("one")
        >>> with order():
        ...     done.append("two")
        >>> done
        ['one', 'two']
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._next = 0  # the ticket the next caller takes
        self._serving = 0  # the ticket that holds the lock (or may take it)
        self._gone: set[int] = set()  # tickets whose wait was interrupted

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        ticket = -1
        try:
            with self._cond:
                ticket = self._next
                self._next = ticket + 1  # (an interrupt before this took no ticket)
                self._cond.wait_for(lambda: self._serving == ticket)
            yield
        finally:  # served or not (an interrupt anywhere from the ticket on): its place is given up
            with self._cond:
                if 0 <= ticket < self._next:
                    self._gone.add(ticket)
                    self._advance()

    def _advance(self) -> None:
        """Skip the tickets given up (the one served, once done); wake the waiters (under the
        condition)."""
        while self._serving in self._gone:
            self._gone.discard(self._serving)
            self._serving += 1
        self._cond.notify_all()


class ConversationSession(_SessionState[CursorAgentClient]):
    """A chat over several turns, synchronous (seed 004).

    ``ConversationSession(client_or_config=None, *, session_id=None, history=None,
    **fields)``: give a :class:`~cursor_agent_api.client.CursorAgentClient`
    (shared, not closed by the session), an
    :class:`~cursor_agent_api.config.AgentConfig`, or nothing; ``**fields``
    are AgentConfig fields (``ConversationSession(trust=True, model="gpt-5")``).
    ``session_id`` (or ``config.resume``) continues an existing chat.

    :meth:`send` runs a turn and returns its result; :meth:`send_stream` /
    :meth:`finalize_stream` do the same with streaming (a stream that was not
    finalized is finalized before the next turn starts). Every turn after the
    first resumes the chat. :attr:`history` lists the turns.

    Example:
        >>> session = ConversationSession(AgentConfig(trust=True))  # doctest: +SKIP
        >>> stream = session.send_stream("Write a poem")            # doctest: +SKIP
        >>> for event in stream:                                    # doctest: +SKIP
        ...     print(event.text or "", end="")
        >>> session.finalize_stream(stream).success  # doctest: +SKIP
        True
        >>> session.send("Now make it shorter").success              # doctest: +SKIP
        True
    """

    _client_type = CursorAgentClient

    def __init__(self, client: CursorAgentClient | AgentConfig | None = None, *,
                 session_id: str | None = None, history: list[SessionTurn] | None = None,
                 **fields: Any) -> None:
        super().__init__(client, session_id=session_id, history=history, **fields)
        self._order = _InCallOrder()  # turns asked from several threads start one by one

    def _settle(self) -> None:
        for stream in list(self._streams):
            self.finalize_stream(stream)

    def create_chat(self) -> str:
        """Pre-create the chat with ``agent create-chat`` (only before the first turn).

        Example:
            >>> ConversationSession().create_chat()  # doctest: +SKIP
            '8b72ae6d-ab42-4854-991e-6ecf580e66c2'
        """
        if self._session_id is not None:
            raise SessionError(f"this session already has a chat ({self._session_id})")
        folder = self._folder(self._config.workspace)
        self._session_id = self.client._create_chat(self._config.with_overrides(workspace=folder))
        self._pin(folder)
        return self._session_id

    def send(self, prompt: str | bytes, **overrides: Any) -> AgentResult:
        """Run one turn of the chat (resuming it after the first); its result.

        Failures come back in the result (``exception``); a resume the agent
        refuses has a :class:`~cursor_agent_api.errors.SessionError`. A bytes prompt
        is UTF-8 text (recorded as text; ``ValueError`` before the turn otherwise).

        Example:
            >>> session.send("And now in French?").result  # doctest: +SKIP
        """
        text = prompt_text(prompt)
        folder = self._checked(overrides)
        self._not_from_own_turn()
        with self._order():  # (another thread's turn first, if it asked first)
            self._settle()
            with self._in_turn():
                result = self.client.query(text, **self._turn(overrides, folder))
            return self._record(text, result, folder)

    def send_stream(self, prompt: str | bytes, **overrides: Any) -> StreamingResponse:
        """Start one turn as a stream; pass it to :meth:`finalize_stream` once consumed.

        Example:
            >>> stream = session.send_stream("Explain it")  # doctest: +SKIP
        """
        text = prompt_text(prompt)  # a bad prompt or override fails here, before the settle
        folder = self._checked(overrides)
        self._not_from_own_turn()
        with self._order():  # (another thread's turn first, if it asked first)
            self._settle()
            with self._in_turn():
                stream = self.client.query_stream(text, **self._turn(overrides, folder))
            if not self._pinned:
                self._folders[stream] = folder
            self._streams.append(stream)
            self._started.add(stream)
            return stream

    def finalize_stream(self, *stream: Any) -> AgentResult:
        """Wait for ``stream`` to end (consuming what is left), record the turn; its result.

        Idempotent for the same stream. (``finalize_stream(prompt, stream)``, the older
        form, is still accepted: the stream knows its prompt.) Only a stream of this
        session's :meth:`send_stream`: another's is a ``ValueError``, nothing changed.

        Example:
            >>> session.finalize_stream(stream).success  # doctest: +SKIP
        """
        s: StreamingResponse = self._stream_of(stream)
        return self._finish(s, s.wait())

    def close(self) -> None:
        """Stop a stream not yet recorded and close the client if the session made it.

        Example:
            >>> ConversationSession().close()
        """
        with contextlib.ExitStack() as stack:
            if self._owns:
                stack.callback(self.client.close)
            for stream in self._streams:  # stopped newest first
                stack.callback(stream.close)

    def __enter__(self) -> ConversationSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncConversationSession(_SessionState[AsyncCursorAgentClient]):
    """A chat over several turns, for asyncio: the same as :class:`ConversationSession`.

    Example:
        >>> session = AsyncConversationSession(AgentConfig(trust=True))  # doctest: +SKIP
        >>> (await session.send("Remember 42")).success                   # doctest: +SKIP
        True
        >>> stream = session.send_stream("What did I ask?")               # doctest: +SKIP
        >>> async for event in stream: ...                                # doctest: +SKIP
        >>> (await session.finalize_stream("What did I ask?", stream)).result  # doctest: +SKIP
    """

    _client_type = AsyncCursorAgentClient

    def __init__(self, client: AsyncCursorAgentClient | AgentConfig | None = None, *,
                 session_id: str | None = None, history: list[SessionTurn] | None = None,
                 **fields: Any) -> None:
        super().__init__(client, session_id=session_id, history=history, **fields)
        # a stream's one wait() while tasks finalize it (see _wait), with how many await it
        self._waits: weakref.WeakKeyDictionary[
            AsyncStreamingResponse, tuple[asyncio.Future[AgentResult], list[int]]] = \
            weakref.WeakKeyDictionary()

    async def _settle(self, until: AsyncStreamingResponse | None = None) -> None:
        """Record every streamed turn before ``until`` (all of them without it), oldest first:
        waiting for each to end, starting one still to start; one that never ran is dropped."""
        while self._streams and self._streams[0] is not until \
                and (until is None or until in self._streams):  # (dropped meanwhile: no wait)
            stream = self._streams[0]
            if self._never_ran(stream):
                self._drop(stream)
                continue
            elsewhere = stream._starting is not None and not stream._starting.done()
            try:
                await self.finalize_stream(stream)
            except Exception:
                if not (self._never_ran(stream) and (elsewhere or stream._start_error is None)):
                    raise  # (its start failed here: this turn has the error, as a send would)
                # its start failed under way in another task (that task has the error), or a
                # cancel cut it short: the stream was dropped, and this turn goes on

    async def create_chat(self) -> str:
        """Pre-create the chat with ``agent create-chat`` (only before the first turn).

        Example:
            >>> chat_id = await AsyncConversationSession().create_chat()  # doctest: +SKIP
        """
        if self._session_id is not None:
            raise SessionError(f"this session already has a chat ({self._session_id})")
        folder = self._folder(self._config.workspace)
        self._session_id = await self.client._create_chat(
            self._config.with_overrides(workspace=folder))
        self._pin(folder)
        return self._session_id

    async def send(self, prompt: str | bytes, **overrides: Any) -> AgentResult:
        """Run one turn of the chat (resuming it after the first); its result.

        Example:
            >>> (await session.send("And in French?")).result  # doctest: +SKIP
        """
        stream = self.send_stream(prompt, **overrides)  # after the turns asked before it
        try:
            return await self.finalize_stream(stream)
        except BaseException:
            # as client.query(): a cancel stops the turn (its end awaited) before it goes on;
            # a send that did not end records nothing (nor does a send queued behind it,
            # which finalizes this stream to start its own turn)
            self._unrecorded.add(stream)
            try:
                await stream.aclose()
            finally:
                self._drop(stream)
            raise

    def send_stream(self, prompt: str | bytes, **overrides: Any) -> AsyncStreamingResponse:
        """One turn as a stream (``async for``); then :meth:`finalize_stream`.

        As in :class:`ConversationSession`, a previous stream not yet finalized is
        finalized first: here when this stream starts (its first step, ``await`` or
        ``async with``), so that this turn resumes the chat the previous one reported.
        A bad prompt or override raises here, at once. A stream that never runs (cancelled
        before it started, its start failed or was cut short) is dropped: nothing recorded.

        Example:
            >>> stream = session.send_stream("Explain it")  # doctest: +SKIP
            >>> async for event in stream: ...              # doctest: +SKIP
        """
        text = prompt_text(prompt)
        folder = self._checked(overrides)
        self._not_from_own_turn()
        self._absorb()
        if not self._streams:
            with self._in_turn():
                stream = self.client.query_stream(text, **self._turn(overrides, folder))
        else:
            async def settled() -> dict[str, Any]:
                await self._settle(until=stream)
                if stream._stopped:  # cancelled while the previous turns were awaited
                    raise RuntimeError("the stream was cancelled before it started")
                # (the opener's own task: the turn it opens now runs in this session)
                TURN_SESSIONS.set((*TURN_SESSIONS.get(), self._mark))
                return self._turn(overrides, folder)

            stream = self.client._deferred_stream(text, settled)
        if not self._pinned:
            self._folders[stream] = folder
        self._streams.append(stream)
        self._started.add(stream)
        return stream

    async def finalize_stream(self, *stream: Any) -> AgentResult:
        """Wait for ``stream`` to end (consuming what is left), record the turn; its result.

        Only a stream of this session's :meth:`send_stream` (``ValueError`` otherwise).

        Example:
            >>> (await session.finalize_stream(stream)).success  # doctest: +SKIP
            True
        """
        s: AsyncStreamingResponse = self._stream_of(stream)
        try:
            result = await self._wait(s)
        except BaseException:
            if self._never_ran(s):  # settled: nothing to record, the session goes on
                self._drop(s)
            raise
        return self._finish(s, result)

    async def _wait(self, stream: AsyncStreamingResponse) -> AgentResult:
        """``stream.wait()``, one per stream for all the tasks that finalize it at once (the
        sends, the deferred starts settling the turns before theirs): a stream has one
        consumer, and a second ``wait()`` would miss the end the first took. Cancelled, the
        last waiter cancels the wait (a waiter: the turn goes on)."""
        shared = self._waits.get(stream)
        if shared is None or shared[0].get_loop() is not asyncio.get_running_loop():
            shared = self._waits[stream] = (asyncio.ensure_future(stream.wait()), [0])
        task, waiters = shared
        waiters[0] += 1
        try:
            return await asyncio.shield(task)
        finally:
            waiters[0] -= 1
            if not waiters[0]:  # (the task holds the stream: not kept past its waiters)
                task.cancel()
                self._waits.pop(stream, None)

    async def aclose(self) -> None:
        """Stop every stream not yet recorded (newest first; one still to start never
        starts) and wait for their ends; close the client if the session made it.

        Example:
            >>> await AsyncConversationSession().aclose()  # doctest: +SKIP
        """
        async with contextlib.AsyncExitStack() as stack:
            if self._owns:
                stack.push_async_callback(self.client.aclose)  # its `agent acp`, in ACP mode
            for stream in self._streams:
                stack.push_async_callback(stream.aclose)

    async def __aenter__(self) -> AsyncConversationSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def create_chat(config: AgentConfig | None = None, **fields: Any) -> str:
    """A new chat id from ``agent create-chat`` (its first line; the process is then stopped).

    Example:
        >>> from cursor_agent_api import create_chat, query
        >>> chat = create_chat(trust=True)                    # doctest: +SKIP
        >>> query("Remember 42", resume=chat, trust=True)     # doctest: +SKIP
    """
    with CursorAgentClient(config, **fields) as client:
        return client.create_chat()
