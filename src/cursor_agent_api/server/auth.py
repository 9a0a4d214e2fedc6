"""Browser sign-in: server-side sessions, one-time login codes, and a failed-login throttle.

The token (``--token``) is the server's one long-lived secret: program clients send it in
``Authorization: token T`` (or ``Bearer T``, or ``?token=T``: :mod:`.checks.authentication`
checks requests). A browser gets a **session** instead: a random id in an HttpOnly,
SameSite=Strict cookie whose name carries the port in the browser's address
(:func:`cookie_name`, :meth:`Auth.cookie_name_for`), so two servers in one browser do not
overwrite each other. The session lives in the database (table ``auth_sessions``), so it
survives a restart, and can be revoked:

* the database holds ``sha256(id)``, never the id, so a reader of the database file cannot
  sign in with what it finds there;
* each session stores a salted scrypt fingerprint of the token it was made with: when the
  server starts with another token, every older session stops working (nothing to delete);
* the expiry slides: a session unused for ``session_idle_seconds`` (default 7 days) ends, and
  none lasts more than ``session_max_seconds`` (default 30 days) after sign-in;
* logout deletes the row, and closes the WebSockets opened with the session (code 4401;
  on another server that shares the database: at once on PostgreSQL, which notifies it,
  else at the socket's next check; see :mod:`.session_watch`). An open WebSocket is not a
  use: it does not slide the expiry, and closes when the session expires.

``serve`` prints a link with a **one-time code** (:meth:`Auth.issue_code`), not the token: the
code becomes a session at the first visit and is dead afterwards, so the browser's history
does not keep a working password. Codes live in memory only (a restart prints a new one).

:class:`LoginThrottle` slows down guessing: every wrong token or code takes one unit of a
small bucket that refills slowly; while it is empty, token and code checks answer 429.

Example:
    >>> cookie_name(8765)
    'cursor_agent_api_session_8765'
    >>> t = LoginThrottle(burst=2, refill_seconds=10, clock=lambda: 0.0)
    >>> t.retry_after(), t.failed(), t.failed(), t.retry_after()
    (0.0, None, None, 10.0)
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import math
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..database_urls import is_postgres
from .checks.host import host_port
from .session_watch import SESSIONS_CHANNEL, SessionListener, SessionWatch, SessionWatches
from .settings import ServerSettings
from .store import describe_error

if TYPE_CHECKING:
    from .store import Store

logger = logging.getLogger("cursor_agent_api.server")

TOUCH_INTERVAL_MS = 60_000
"""A session's ``last_used_ms`` is written at most once a minute (sliding expiry)."""

_SCRYPT = {"n": 2**14, "r": 8, "p": 1, "dklen": 32}
_CODE_LIMIT = 64


def cookie_name(port: int) -> str:
    """The session cookie's name for the server a browser reaches on ``port``.

    Browsers send a 127.0.0.1 cookie to every port of 127.0.0.1: with one name per port,
    two servers in one browser each keep their own session. The port is the one in the
    browser's address (:meth:`Auth.cookie_name_for`): two servers bound to the same port on
    two machines, reached through two SSH port forwards, have two names.

    Example:
        >>> cookie_name(1) != cookie_name(2)
        True
    """
    return f"cursor_agent_api_session_{port}"


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def token_fingerprint(token: str, salt: str) -> str:
    """A salted, deliberately slow fingerprint of ``token`` (scrypt), stored with a session.

    Example:
        >>> a = token_fingerprint("t" * 16, "00")
        >>> a == token_fingerprint("t" * 16, "00") != token_fingerprint("t" * 16, "01")
        True
    """
    raw = hashlib.scrypt(token.encode(), salt=salt.encode(), **_SCRYPT)
    return raw.hex()


def elapsed_clock() -> float:
    """Seconds on a clock that no wall-clock step moves and that counts time asleep: Linux's
    ``CLOCK_BOOTTIME`` (a code minted before a laptop is suspended expires on time);
    ``time.monotonic`` elsewhere (which may stop while asleep).

    Example:
        >>> a = elapsed_clock(); elapsed_clock() >= a
        True
    """
    boottime = getattr(time, "CLOCK_BOOTTIME", None)
    return time.clock_gettime(boottime) if boottime is not None else time.monotonic()


class LoginThrottle:
    """A bucket of ``burst`` failed sign-ins that refills one unit every ``refill_seconds``.

    :meth:`retry_after` is 0 while a check may be made, else the seconds until the next one;
    :meth:`failed` takes a unit. The bucket is global (every client is local): a flood of wrong
    tokens also delays the right one, for at most ``refill_seconds``.

    Example:
        >>> now = [0.0]
        >>> t = LoginThrottle(burst=1, refill_seconds=5, clock=lambda: now[0])
        >>> t.failed(); t.retry_after()
        5.0
        >>> now[0] = 5.0; t.retry_after()
        0.0
    """

    def __init__(
        self, burst: int, refill_seconds: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.burst = burst
        self.refill_seconds = refill_seconds
        self.clock = clock
        self._units = float(burst)
        self._at = clock()

    def _refill(self) -> None:
        now = self.clock()
        if self.refill_seconds > 0:
            self._units = min(float(self.burst), self._units + (now - self._at) / self.refill_seconds)
        else:
            self._units = float(self.burst)
        self._at = now

    def retry_after(self) -> float:
        """Seconds to wait before a token or code may be checked (0: now)."""
        self._refill()
        if self._units >= 1:
            return 0.0
        return round((1 - self._units) * self.refill_seconds, 3)

    def failed(self) -> None:
        """Record one wrong token or code."""
        self._refill()
        self._units = max(0.0, self._units - 1)


class Throttled(Exception):
    """Too many wrong tokens or codes: no check until ``seconds`` have passed (a 429).

    Example:
        >>> str(Throttled(2.2)), Throttled(2.2).seconds
        ('too many failed sign-ins; retry in 3 s', 3)
    """

    def __init__(self, retry_after: float) -> None:
        self.seconds = max(1, math.ceil(retry_after))
        super().__init__(f"too many failed sign-ins; retry in {self.seconds} s")


class Auth:
    """Sessions in the store, one-time codes in memory, and the throttle, for one server.

    Used by the token and session check (:class:`.checks.authentication.Authentication`, in
    :class:`~.security.SecurityMiddleware`) and the ``/api/auth`` routes; its behaviour is tested
    end to end in ``tests/server/test_auth.py``.
    """

    def __init__(
        self,
        settings: ServerSettings,
        store: Store,
        clock: Callable[[], float] = time.time,
        code_clock: Callable[[], float] | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.clock = clock
        """The wall clock: the sessions' times are stored, and outlive the process."""
        self.code_clock = code_clock or elapsed_clock
        """The codes' clock: they live in this process only, so a step of the wall clock
        (NTP) neither kills nor stretches them, and time asleep counts (:func:`elapsed_clock`)."""
        self.throttle = LoginThrottle(settings.login_failure_burst, settings.login_failure_refill_seconds)
        self._codes: OrderedDict[str, float | None] = OrderedDict()
        # sha256(id) -> True when its fingerprint is this token's (rows never change).
        self._verified: OrderedDict[str, bool] = OrderedDict()
        # sha256(id) -> its last use seen here (ms): the expiry slides with it even while
        # the database cannot be written (the write of a use is best effort: _touch)
        self._used: OrderedDict[str, int] = OrderedDict()
        self._touches: dict[str, asyncio.Task[None]] = {}
        self._touch_failing = False
        self.watches = SessionWatches()
        """The WebSockets' holds on their sessions (:mod:`.session_watch`)."""
        self._listener: SessionListener | None = None

    async def start(self) -> None:
        """On PostgreSQL, listen for logouts on the other servers that share the database.

        Without that connection (it failed), sockets learn of those at their next check."""
        if not is_postgres(self.settings.database_url):
            return
        listener = SessionListener(self)
        try:
            await listener.open("session-listener")
        except Exception as e:
            logger.warning(
                "cannot listen for sign-outs on other servers (%s): their sockets close at "
                "the next check", describe_error(e))
            return
        self._listener = listener

    async def close(self) -> None:
        """Stop listening (:meth:`start`) and noting the sessions' uses (:meth:`check_session`)."""
        for task in list(self._touches.values()):
            task.cancel()
        await self.touches_written()
        if self._listener is not None:
            await self._listener.close()
            self._listener = None

    def cookie_name_for(self, host: str) -> str:
        """The session cookie's name for a request whose ``Host`` header is ``host``: named
        after the port the browser sees (a port forward's, a proxy's), else this server's.

        Example:
            >>> from cursor_agent_api.server.settings import ServerSettings
            >>> from cursor_agent_api.server.store import Store
            >>> auth = Auth(ServerSettings(token="a" * 16, port=8765), Store("sqlite+aiosqlite://"))
            >>> auth.cookie_name_for("127.0.0.1:19765"), auth.cookie_name_for("agent.example")
            ('cursor_agent_api_session_19765', 'cursor_agent_api_session_8765')
        """
        return cookie_name(host_port(host) or self.settings.port)

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)

    def check_secret(self, *, token: str | None = None, code: str | None = None) -> bool:
        """Whether the presented ``token`` (or one-time login ``code``) is good, under the
        throttle: a wrong try takes a unit; :class:`Throttled` while the throttle holds (the
        right token waits too: a guess made then learns nothing). Every check of a presented
        secret goes through here: the sign-in check, ``/api/auth/login`` and ``/api/auth/codes``.

        Example:
            >>> from cursor_agent_api.server.settings import ServerSettings
            >>> from cursor_agent_api.server.store import Store
            >>> auth = Auth(ServerSettings(token="a" * 16, login_failure_burst=1),
            ...             Store("sqlite+aiosqlite://"))
            >>> auth.check_secret(token="a" * 16), auth.check_secret(token="b" * 16)
            (True, False)
            >>> auth.check_secret(token="a" * 16)
            Traceback (most recent call last):
            ...
            cursor_agent_api.server.auth.Throttled: too many failed sign-ins; retry in 5 s
        """
        return self._presented(token, code)[0]

    def _presented(self, token: str | None, code: str | None) -> tuple[bool, tuple[str, float | None] | None]:
        """:meth:`check_secret`, and the code it spent (:meth:`_claim_code`), if any."""
        wait = self.throttle.retry_after()
        if wait:
            raise Throttled(wait)
        claimed = None if code is None else self._claim_code(code)
        if claimed is not None or (token is not None and self.token_matches(token)):
            return True, claimed
        self.throttle.failed()
        return False, None

    def token_matches(self, presented: str) -> bool:
        """Constant-time comparison with the server's token.

        Example:
            >>> from cursor_agent_api.server.settings import ServerSettings
            >>> from cursor_agent_api.server.store import Store
            >>> Auth(ServerSettings(token="a" * 16), Store("sqlite+aiosqlite://")).token_matches("a" * 16)
            True
        """
        return hmac.compare_digest(presented.encode(), self.settings.token.encode())

    # ---- one-time codes ------------------------------------------------------------------

    def issue_code(self, ttl_seconds: float | None = None) -> str:
        """A new one-time login code (kept in memory; ``ttl_seconds=None``: until used).

        Example:
            >>> from cursor_agent_api.server.settings import ServerSettings
            >>> from cursor_agent_api.server.store import Store
            >>> auth = Auth(ServerSettings(token="a" * 16), Store("sqlite+aiosqlite://"))
            >>> code = auth.issue_code()
            >>> auth.redeem_code(code), auth.redeem_code(code)
            (True, False)
        """
        code = secrets.token_urlsafe(24)
        self._codes[_digest(code)] = None if ttl_seconds is None else self.code_clock() + ttl_seconds
        while len(self._codes) > _CODE_LIMIT:
            self._codes.popitem(last=False)
        return code

    def redeem_code(self, code: str) -> bool:
        """True once for a code :meth:`issue_code` gave (and not expired); it is then spent."""
        return self._claim_code(code) is not None

    def _claim_code(self, code: str) -> tuple[str, float | None] | None:
        """Spend ``code`` if it is good: what :meth:`_give_back` needs to make it good again."""
        key = _digest(code)
        expires = self._codes.pop(key, False)
        if expires is False:
            return None
        if expires is not None and self.code_clock() >= expires:
            return None
        return key, expires

    def _give_back(self, claimed: tuple[str, float | None]) -> None:
        self._codes[claimed[0]] = claimed[1]

    async def sign_in(self, *, token: str | None = None, code: str | None = None) -> str | None:
        """A new session for a browser that presents the ``token`` or a one-time ``code``
        (checked as :meth:`check_secret` does, under the throttle: :class:`Throttled`): its
        id, or ``None`` when the secret is wrong.

        A code is spent when it is checked (a second request with it, meanwhile, is
        refused: one code, one session) and given back if the session cannot be stored
        (the database failed: the error is raised, and the retry it asks for works).

        Example:
            >>> import asyncio, tempfile
            >>> from cursor_agent_api.server.settings import ServerSettings
            >>> from cursor_agent_api.server.store import Store, StoreUnavailableError
            >>> async def demo() -> tuple[str, bool, bool]:
            ...     store = Store(f"sqlite+aiosqlite:///{tempfile.mkdtemp()}/db.sqlite3")
            ...     await store.start()
            ...     auth = Auth(ServerSettings(token="a" * 16), store)
            ...     code = auth.issue_code()
            ...     store.faults.fail_writes(1)
            ...     try:
            ...         await auth.sign_in(code=code)
            ...     except StoreUnavailableError as e:
            ...         failed = str(e)
            ...     first = await auth.sign_in(code=code) is not None  # the retry works
            ...     again = await auth.sign_in(code=code) is not None  # spent now
            ...     await store.close()
            ...     return failed, first, again
            >>> asyncio.run(demo())
            ('injected fault: write failed', True, False)
        """
        ok, claimed = self._presented(token, code)
        if not ok:
            return None
        try:
            return await self.create_session()
        except BaseException:  # a database error, or the request cancelled: not spent
            if claimed is not None:
                self._give_back(claimed)
            raise

    # ---- sessions ------------------------------------------------------------------------

    async def create_session(self) -> str:
        """Store a new session for the current token; returns its id (the cookie's value)."""
        sid = secrets.token_urlsafe(32)
        key = _digest(sid)
        fp = await asyncio.to_thread(token_fingerprint, self.settings.token, key)
        now = self._now_ms()
        await self.store.add_auth_session(
            key, fp, now, used_before_ms=now - self._idle_ms, created_before_ms=now - self._max_ms
        )
        self._remember(key, True)
        return sid

    @property
    def _idle_ms(self) -> int:
        return int(self.settings.session_idle_seconds * 1000)

    @property
    def _max_ms(self) -> int:
        return int(self.settings.session_max_seconds * 1000)

    def _remember(self, key: str, ok: bool) -> None:
        self._verified[key] = ok
        while len(self._verified) > 10_000:
            self._verified.popitem(last=False)

    async def check_session(self, sid: str) -> bool:
        """True if ``sid`` is a live session made with the current token (slides its expiry).

        The use is written (at most once a minute) in the background, best effort: a
        request does not wait for it, and while the database cannot be written the session
        still works (its expiry slides in this process; the write is tried at a later use)."""
        if not sid or len(sid) > 200:
            return False
        return await self._live(_digest(sid), touch=True)

    async def session_alive(self, key: str) -> bool:
        """True while the session stored as ``key`` is live; unlike :meth:`check_session` it is
        not a use (the expiry does not slide)."""
        return await self._live(key, touch=False)

    def watch(self, sid: str) -> SessionWatch:
        """A hold on the session ``sid`` for a WebSocket, ended when the session ends (give it
        back with ``auth.watches.remove``).

        Example:
            >>> from cursor_agent_api.server.settings import ServerSettings
            >>> from cursor_agent_api.server.store import Store
            >>> auth = Auth(ServerSettings(token="a" * 16), Store("sqlite+aiosqlite://"))
            >>> w = auth.watch("sid")
            >>> auth.watches.end(w.key), w.ended.is_set()
            (1, True)
        """
        return self.watches.add(_digest(sid))

    async def _live(self, key: str, *, touch: bool) -> bool:
        m = await self.store.auth_session(key)
        if m is None:
            self._verified.pop(key, None)
            return False
        now = self._now_ms()
        last = max(int(m["last_used_ms"]), self._used.get(key, 0))
        if now - last >= self._idle_ms or now - m["created_ms"] >= self._max_ms:
            return False
        ok = self._verified.get(key)
        if ok is None:
            fp = await asyncio.to_thread(token_fingerprint, self.settings.token, key)
            ok = hmac.compare_digest(fp, m["token_fp"])
            self._remember(key, ok)
        if ok and touch and now - last >= TOUCH_INTERVAL_MS:
            self._touch(key, now)
        return ok

    def _touch(self, key: str, now: int) -> None:
        """Note a use of the session ``key`` here, and write it in the background (one write
        at a time per session; a failure is logged once per outage)."""
        self._used[key] = now
        self._used.move_to_end(key)
        while len(self._used) > 10_000:
            self._used.popitem(last=False)
        if key in self._touches:
            return

        async def write() -> None:
            try:
                await self.store.touch_auth_session(key, now)
            except Exception as e:
                if not self._touch_failing:
                    self._touch_failing = True
                    logger.warning("cannot write a session's last use (%s): it stays signed in, "
                                   "and the write is tried again at a later use", describe_error(e))
                return
            if self._touch_failing:
                self._touch_failing = False
                logger.warning("the sessions' last uses are written again")

        task = asyncio.create_task(write(), name="session-touch")
        self._touches[key] = task
        task.add_done_callback(lambda _t: self._touches.pop(key, None))

    @property
    def touches_pending(self) -> int:
        """How many writes of the sessions' uses are under way."""
        return len(self._touches)

    async def touches_written(self) -> None:
        """Wait for the writes of the sessions' uses under way (they never raise)."""
        await asyncio.gather(*self._touches.values(), return_exceptions=True)

    async def revoke_session(self, sid: str) -> None:
        """Delete the session ``sid`` (logout) and close its WebSockets; unknown ids are ignored.

        The sockets of this server close at once; on PostgreSQL the other servers are notified
        (best effort: if that fails, theirs close at their next check)."""
        key = _digest(sid)
        self._verified.pop(key, None)
        self._used.pop(key, None)
        await self.store.delete_auth_session(key)
        self.watches.end(key)
        if is_postgres(self.settings.database_url):
            try:
                await self.store.notify(SESSIONS_CHANNEL, key)
            except Exception as e:
                logger.warning("cannot tell the other servers of a sign-out (%s): their sockets "
                               "close at the next check", describe_error(e))

    def set_cookie(self, sid: str, host: str) -> tuple[bytes, bytes]:
        """The ``Set-Cookie`` header that carries session ``sid``, for a request to ``host``
        (its ``Host`` header: :meth:`cookie_name_for`).

        Example:
            >>> from cursor_agent_api.server.settings import ServerSettings
            >>> from cursor_agent_api.server.store import Store
            >>> auth = Auth(ServerSettings(token="a" * 16, port=9), Store("sqlite+aiosqlite://"))
            >>> auth.set_cookie("abc", "127.0.0.1:9")[1].decode().split(";")[0]
            'cursor_agent_api_session_9=abc'
        """
        value = (
            f"{self.cookie_name_for(host)}={sid}; HttpOnly; SameSite=Strict; Path=/; "
            f"Max-Age={int(self.settings.session_max_seconds)}"
        )
        return (b"set-cookie", value.encode())

    def clear_cookie(self, host: str) -> tuple[bytes, bytes]:
        """The ``Set-Cookie`` header that removes the session cookie (of a request to ``host``)."""
        value = f"{self.cookie_name_for(host)}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0"
        return (b"set-cookie", value.encode())


__all__ = ["Auth", "LoginThrottle", "Throttled", "cookie_name", "token_fingerprint"]
