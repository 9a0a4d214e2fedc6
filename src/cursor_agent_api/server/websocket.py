"""WebSocket ``/api/chats/{id}/stream?after_seq=N``: replay from the store, then live.

The hand-over has no gap and no duplicate: the socket subscribes to the hub
*first* (live records start queueing), then replays the stored records after
``after_seq`` page by page, then forwards the queue, dropping what it already
sent (``seq <= last sent``). Records are committed before they are published,
so anything published before the subscription is already in the store.

If the live queue overflows during the replay, the socket re-subscribes and
replays further from the store; if it overflows once live, the socket sends
what it holds, then ``resync`` with its last seq, and closes (code 4000): the
client reconnects with ``after_seq`` = that seq. The protocol (version 1) is
documented in ``docs/websocket.md``.

Each record goes out with what it changed in its run's folded turn (``changes``): live
ones as the writer folded them, replayed ones folded again from the store
(:class:`.turns.Refolder`), so a client applies changes and never folds.

A socket opened with a browser's session (not the token) holds a
:class:`~.session_watch.SessionWatch`: when the session ends (a logout, an expiry found by
the check every ``session_check_interval`` s) it sends nothing more but an ``error`` and
closes with 4401. What the client sends is answered by :func:`answer`; a frame it has no use
for (binary, not JSON, an unknown op, a nonce too deep to echo) gets an ``error``, and the
socket stays open.
A message over :data:`MAX_CLIENT_MESSAGE` bytes is refused unread by the WebSocket layer
(uvicorn's ``ws_max_size``): the socket closes with 1009 (message too big), no ``error``.
A read that fails (the database is unavailable) ends the socket with an ``error`` and close
code 1013: the client reconnects later from its last seq. When the chat is deleted
(``DELETE /api/chats/{id}``, on this server or another on the database) the socket sends an
``error`` saying so and closes with 4404, as for a chat that does not exist.

Example:
    >>> control("live", 7)
    '{"op":"live","seq":7}'
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import re
from typing import Any

import anyio
import orjson
from fastapi import APIRouter, WebSocket
from starlette.websockets import WebSocketDisconnect, WebSocketState

from .auth import Auth
from .checks.asgi import request_headers
from .checks.authentication import token_from_request
from .hub import Hub, Subscriber
from .log import record_message
from .session_watch import SessionWatch
from .settings import WS_PROTOCOL_VERSION
from .store import DatabaseError, Store, StoreUnavailableError, describe_error
from .turns import Refolder

router = APIRouter()

REPLAY_PAGE = 500
CLOSE_RESYNC = 4000
CLOSE_BAD_REQUEST = 4400
CLOSE_NOT_FOUND = 4404
CLOSE_SIGNED_OUT = 4401
"""The session the socket was opened with ended (:mod:`.session_watch`)."""
CLOSE_TRY_AGAIN = 1013
"""RFC 6455's 'Try Again Later': the database failed a read; reconnect with ``after_seq``."""
ERROR_CODES = (
    "invalid_after_seq", "after_seq_beyond_last", "chat_not_found", "chat_deleted", "signed_out",
    "database_unavailable", "invalid_json", "unknown_message", "binary_frame", "nonce_too_deep",
)
"""The ``code`` of an ``error`` message (docs/websocket.md, "Error codes")."""


def control(op: str, seq: int, **fields: Any) -> str:
    """A control message (``hello``, ``live``, ``pong``, ``resync``, ``error``).

    Example:
        >>> control("pong", 3, nonce=1)
        '{"op":"pong","seq":3,"nonce":1}'
    """
    return orjson.dumps({"op": op, "seq": seq, **fields}).decode()


class SessionEndedError(Exception):
    """The session the socket was opened with has ended (it is closed with 4401)."""


class ChatDeletedError(Exception):
    """The socket's chat was deleted (it is closed with 4404)."""


class _Stream:
    """One subscriber socket: its last sent seq, a lock that orders its sends, and the hold
    on the session it was opened with (``None``: the token opened it)."""

    def __init__(
        self,
        ws: WebSocket,
        store: Store,
        hub: Hub,
        chat_id: str,
        after: int,
        watch: SessionWatch | None = None,
    ) -> None:
        self.ws = ws
        self.store = store
        self.hub = hub
        self.chat_id = chat_id
        self.last = after
        self.lock = asyncio.Lock()
        self.sub: Subscriber = hub.subscribe(chat_id)
        self.refold = Refolder(store, chat_id, ws.app.state.settings.max_field_bytes)
        self.watch = watch
        self.signed_out = False

    async def send(self, text: str) -> None:
        """Send ``text``; once the session has ended, close instead (SessionEndedError)."""
        async with self.lock:
            if self.watch is not None and self.watch.ended.is_set():
                await self._sign_out()
            await self.ws.send_text(text)

    async def _sign_out(self) -> None:
        """The ``error`` and the close (4401), once; then SessionEndedError. Holds the lock."""
        if not self.signed_out:
            self.signed_out = True
            await self.ws.send_text(control("error", self.last, detail=SIGNED_OUT, code="signed_out"))
            await self.ws.close(CLOSE_SIGNED_OUT, "signed out")
        raise SessionEndedError

    async def guard(self, auth: Auth, interval: float) -> None:
        """Close the socket when its session ends: at once when ended here (a logout, a
        notification), else when a check (every ``interval`` s) finds it gone or expired."""
        assert self.watch is not None
        ended = self.watch.ended
        while not ended.is_set():
            # anyio's scope, not asyncio.wait_for: before Python 3.12 wait_for can lose the
            # cancel that stops this task (as in .notify)
            with anyio.move_on_after(interval):
                await ended.wait()
            if not ended.is_set() and not await _alive(auth, self.watch.key):
                ended.set()
        async with self.lock:
            await self._sign_out()

    async def until_deleted(self) -> None:
        """Close the socket once its chat is deleted: an ``error``, then 4404; then
        :class:`ChatDeletedError`."""
        await self.sub.deleted.wait()  # (shared by the subscribers that replace this one)
        detail = f"chat {self.chat_id!r} was deleted"
        async with self.lock:
            await self.ws.send_text(control("error", self.last, detail=detail, code="chat_deleted"))
            await self.ws.close(CLOSE_NOT_FOUND, close_reason(detail))
        raise ChatDeletedError

    async def unavailable(self, exc: BaseException) -> None:
        """A read failed (the database is unavailable): ``error``, then close with 1013; the
        client reconnects later with ``after_seq`` = the last seq it got."""
        detail = (f"the database is unavailable ({describe_error(exc)}): reconnect with "
                  f"after_seq={self.last}")
        async with self.lock:
            await self.ws.send_text(control("error", self.last, detail=detail,
                                            code="database_unavailable"))
            await self.ws.close(CLOSE_TRY_AGAIN, "the database is unavailable")

    async def replay(self) -> None:
        settings = self.ws.app.state.settings
        while True:
            # Pages bounded by count and bytes; long fields cut (see docs/server.md).
            recs, more = await self.store.read_page(
                self.chat_id,
                self.last,
                REPLAY_PAGE,
                max_bytes=settings.max_page_bytes,
                max_field_bytes=settings.max_field_bytes,
            )
            for rec in recs:
                await self.send(record_message(rec, await self.refold.changes(rec)))
                self.last = rec.seq
            del recs
            if more:
                continue
            if not self.sub.overflowed:
                return
            # The live queue overflowed while we replayed: everything it lost is
            # committed, so subscribe afresh and read on from the store.
            if self.sub.deleted.is_set():
                await asyncio.Event().wait()  # until_deleted closes the socket
            self.hub.unsubscribe(self.sub)
            self.sub = self.hub.subscribe(self.chat_id, self.sub.deleted)

    async def forward(self) -> None:
        while True:
            queue = self.sub.queue
            if self.sub.overflowed and queue.empty():
                await self.send(
                    control(
                        "resync",
                        self.last,
                        reason="this client fell behind; reconnect with after_seq=seq",
                    )
                )
                await self.ws.close(CLOSE_RESYNC, "resync")
                return
            seq, text = await self.sub.get()
            if seq <= self.last:
                continue  # already sent during the replay
            await self.send(text)
            self.last = seq

    async def receive(self) -> None:
        while True:
            message = await self.ws.receive()
            if message["type"] == "websocket.disconnect":
                raise WebSocketDisconnect(message.get("code", 1000), message.get("reason"))
            text = message.get("text")
            if text is None:  # a binary frame
                await self.send(control("error", self.last, detail=BINARY_FRAME, code="binary_frame"))
            else:
                await self.send(answer(text, self.last))


SIGNED_OUT = "the session this socket was opened with has ended (signed out or expired): sign in again"
MAX_CLIENT_MESSAGE = 65_536
"""Bytes a client's message may have (a ``ping``: the only message the protocol has)."""

BINARY_FRAME = 'binary frames are not part of the protocol: send {"op": "ping", "nonce": ...} as text'
UNKNOWN_MESSAGE = 'unknown message; the client may only send {"op": "ping", "nonce": ...}'
DEEP_NONCE = "the nonce is nested too deeply to be echoed: send a number or a string"


def answer(text: str, seq: int) -> str:
    """The answer to the client's message ``text``: a ``pong``, or an ``error`` (the socket
    stays open). ``seq`` is the last seq sent.

    Example:
        >>> answer('{"op": "ping", "nonce": [1]}', 4)
        '{"op":"pong","seq":4,"nonce":[1]}'
        >>> answer("{", 4)
        '{"op":"error","seq":4,"detail":"message is not valid JSON","code":"invalid_json"}'
        >>> "nested too deeply" in answer('{"op": "ping", "nonce": ' + "[" * 300 + "]" * 300 + "}", 4)
        True
    """
    try:
        msg = read_message(text)
    except RecursionError:  # deeper than the standard library reads (about 1000 levels)
        return control("error", seq, detail=DEEP_NONCE, code="nonce_too_deep")
    except ValueError:  # json.JSONDecodeError among them
        return control("error", seq, detail="message is not valid JSON", code="invalid_json")
    if isinstance(msg, dict) and msg.get("op") == "ping":
        fields = {"op": "pong", "seq": seq, "nonce": msg.get("nonce")}
        try:
            return orjson.dumps(fields).decode()
        except orjson.JSONEncodeError as e:
            if "64-bit" not in str(e) and "surrogates" not in str(e):
                # deeper than orjson writes (about 250 levels)
                return control("error", seq, detail=DEEP_NONCE, code="nonce_too_deep")
        # an integer past 64 bits or a lone surrogate: the standard library writes them
        # (a lone surrogate as its escape, "\\ud83d", as the client sent it)
        return json.dumps(fields, separators=(",", ":"), allow_nan=False)
    return control("error", seq, detail=UNKNOWN_MESSAGE, code="unknown_message")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number is infinity when parsed as double: {text[:40]}")
    return value


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def read_message(text: str) -> Any:
    """A client's message as JSON, read so that a ``ping``'s nonce is echoed unchanged: by
    the standard library, which keeps an integer past 64 bits an integer (orjson reads a
    float) and a lone surrogate escape (``"\\ud83d"``, valid JSON: an emoji cut in two) a
    string (orjson refuses it). What orjson refuses besides is refused (``ValueError``):
    ``NaN``, ``Infinity``, a number too big for a double.

    Example:
        >>> read_message('{"n": 123456789012345678901234567890, "s": "\\ud83d"}')
        {'n': 123456789012345678901234567890, 's': '\ud83d'}
        >>> read_message("[NaN]")
        Traceback (most recent call last):
        ...
        ValueError: NaN is not JSON
    """
    return json.loads(text, parse_float=_finite, parse_constant=_no_constant)


async def _alive(auth: Auth, key: str) -> bool:
    """Whether the session ``key`` is live; yes while the database cannot say (nobody can sign
    out then), and the next check asks again."""
    try:
        return await auth.session_alive(key)
    except (DatabaseError, StoreUnavailableError):
        return True


def _session_of(ws: WebSocket, auth: Auth) -> str | None:
    """The session id the socket was let in with, or ``None`` when the token let it in (the
    authentication check let it in with one or the other)."""
    query = ws.scope.get("query_string", b"").decode("latin-1")
    token = token_from_request(request_headers(ws.scope), query)
    if token is not None and auth.token_matches(token):
        return None
    return ws.cookies.get(auth.cookie_name_for(ws.headers.get("host", ""))) or None


_ENDINGS = (WebSocketDisconnect, RuntimeError, SessionEndedError, ChatDeletedError)
"""How a socket's tasks end without an error: the client left, its session ended, or its
chat was deleted."""

MAX_SEQ = 2**63 - 1
_DIGITS = re.compile(r"[0-9]{1,19}")


def parse_after_seq(raw: str) -> int | None:
    """``after_seq`` as an int, or ``None`` unless it is ASCII digits from 0 to 2^63-1.

    ``str.isdigit`` is not enough: it accepts ``"²"``, which ``int`` refuses.

    Example:
        >>> parse_after_seq("42"), parse_after_seq("\u00b2"), parse_after_seq("9" * 5000)
        (42, None, None)
        >>> parse_after_seq(str(2**63)), parse_after_seq(str(2**63 - 1)) == 2**63 - 1
        (None, True)
    """
    if not _DIGITS.fullmatch(raw):
        return None
    value = int(raw)
    return value if value <= MAX_SEQ else None


MAX_CLOSE_REASON = 123
"""Bytes a close frame's reason may hold (RFC 6455: 125 with the code)."""


def close_reason(detail: str) -> str:
    """``detail`` cut to fit a close frame (123 bytes of UTF-8, whole characters).

    Example:
        >>> len(close_reason("x" * 200)), len(close_reason("\u20ac" * 60).encode())
        (123, 123)
    """
    return detail.encode()[:MAX_CLOSE_REASON].decode(errors="ignore")


async def _refuse(ws: WebSocket, close: int, code: str, detail: str, **fields: Any) -> None:
    """Open, send the ``error`` (``detail``, its ``code`` and ``fields``), close with ``close``."""
    await ws.accept()
    await ws.send_text(control("error", 0, detail=detail, code=code, **fields))
    await ws.close(close, close_reason(detail))


@router.websocket("/api/chats/{chat_id}/stream")
async def chat_stream(ws: WebSocket, chat_id: str) -> None:
    """Stream a chat's records after ``after_seq`` (replay, then live)."""
    auth: Auth = ws.app.state.auth
    sid = _session_of(ws, auth)
    watch = auth.watch(sid) if sid is not None else None
    try:
        # the session may have ended between the authentication check and the watch
        if watch is not None and not await _alive(auth, watch.key):
            await _refuse(ws, CLOSE_SIGNED_OUT, "signed_out", SIGNED_OUT)
            return
        await _serve(ws, chat_id, watch)
    finally:
        if watch is not None:
            auth.watches.remove(watch)


async def _serve(ws: WebSocket, chat_id: str, watch: SessionWatch | None) -> None:
    """Check the request, then hello, replay, live; and close when ``watch`` ends."""
    store: Store = ws.app.state.store
    hub: Hub = ws.app.state.hub
    after = parse_after_seq(ws.query_params.get("after_seq", "0"))
    if after is None:
        await _refuse(
            ws, CLOSE_BAD_REQUEST, "invalid_after_seq",
            f"after_seq must be a decimal integer from 0 to {MAX_SEQ}"
        )
        return
    chat = await store.get_chat(chat_id)
    if chat is None:
        await _refuse(ws, CLOSE_NOT_FOUND, "chat_not_found", f"no chat with id {chat_id!r}")
        return
    if after > chat["last_seq"]:
        # Every published seq is committed first, so a larger one never came from here.
        await _refuse(
            ws,
            CLOSE_BAD_REQUEST,
            "after_seq_beyond_last",
            f"after_seq {after} is beyond the chat's last seq {chat['last_seq']}: reconnect with after_seq=0",
            last_seq=chat["last_seq"],
        )
        return
    await ws.accept()
    stream = _Stream(ws, store, hub, chat_id, after, watch)
    tasks: list[asyncio.Task[None]] = []
    try:
        await stream.send(
            control(
                "hello",
                after,
                protocol=WS_PROTOCOL_VERSION,
                chat_id=chat_id,
                last_seq=chat["last_seq"],
            )
        )
        receiver = asyncio.create_task(stream.receive())
        tasks.append(receiver)

        async def replay_then_forward() -> None:
            await stream.replay()
            await stream.send(control("live", stream.last))
            await stream.forward()

        sender = asyncio.create_task(replay_then_forward())
        tasks.append(sender)
        tasks.append(asyncio.create_task(stream.until_deleted()))
        if watch is not None:
            interval = ws.app.state.settings.session_check_interval
            tasks.append(asyncio.create_task(stream.guard(ws.app.state.auth, interval)))
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            exc = task.exception()
            if isinstance(exc, (DatabaseError, StoreUnavailableError)):
                await stream.unavailable(exc)
            elif exc is not None and not isinstance(exc, _ENDINGS):
                raise exc
    except _ENDINGS:
        pass
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        hub.unsubscribe(stream.sub)
        if ws.client_state is WebSocketState.CONNECTED:
            with contextlib.suppress(Exception):
                await ws.close()
