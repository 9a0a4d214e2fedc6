"""The application factory: :func:`create_app` wires store, hub, runs, routes and security.

Start-up (the lifespan): open the store and run the migrations, mark runs
left active by a previous server ``interrupted`` (stopping their leftover
process groups; while the database cannot be written, in the background:
:mod:`.recovery`), then serve; meanwhile, the runs another server of this host left
when it was killed are ended too (:mod:`.dispatch.dead_owners`). Shutdown: stop every
run and mark it, close the store. A start-up that fails closes what it opened
(:class:`AppStart`); a step that the database failed (a connection refused or timed out, a
host gone silent) raises :class:`StartError` naming it (:func:`start_step`): ``serve`` runs
the start-up before uvicorn and says it in one line, exit 1. The web UI, when the package
ships one (``cursor_agent_api/web/``), is served at ``/``.

Example:
    >>> from cursor_agent_api.server.settings import ServerSettings
    >>> app = create_app(ServerSettings(token="t", database_url="sqlite+aiosqlite:///:memory:"))
    >>> app.title
    'cursor-agent-api server'
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import __version__
from . import routes, websocket
from .auth import Auth, cookie_name
from .dispatch import open_dispatcher
from .dispatch.dead_owners import DeadOwnerWatch
from .errors import ApiError, error_body
from .hub import Hub
from .log import EventLog
from .recovery import Recovery
from .runs import RunManager
from .security import BodyTooLargeError, SecurityMiddleware
from .settings import ServerSettings
from .store import DatabaseError, Store, StoreUnavailableError, describe_error, is_transient, tune_memory
from .store.errors import is_database_failure

logger = logging.getLogger("cursor_agent_api.server")

WEB_DIR = Path(__file__).resolve().parent.parent / "web"

_FALLBACK_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>cursor-agent-api</title></head>
<body><h1>cursor-agent-api server</h1>
<p>The web UI is not part of this installation. The API is described at
<a href="/openapi.json">/openapi.json</a>.</p>
</body></html>"""


MAX_ERRORS = 5
"""A 422 lists at most this many problems; it never echoes the request's values."""

_DESCRIPTION_SECTIONS = """

## WebSocket

`GET /api/chats/{chat_id}/stream?after_seq=N` upgrades to a WebSocket (protocol version 1,
described in `docs/websocket.md`; OpenAPI cannot describe it). Authentication as for the REST
API (`Authorization: token T`, `?token=T`, or the session cookie); a browser's `Origin` must be
this server's. The server sends `{"op": "hello"}`, every stored record after `after_seq` as
`{"op": "event", "seq", "event"}`, then `{"op": "live"}` and the new records as they come. The
client may send `{"op": "ping", "nonce"}` (answered by `pong`). Close codes: 4000 resync
(reconnect with `after_seq` = the last seq), 4401 the session the socket was opened with ended
(signed out or expired: sign in again), 4400 bad request (such as an `after_seq` that is not
a decimal integer from 0 to 2^63-1), 4404 no such chat (or it was deleted), 1013 the database
failed a read (reconnect later with `after_seq` = the last seq). Each close is preceded by
`{"op": "error", "detail", "code"}` (the codes: `docs/websocket.md`, "Error codes").

## Errors

Every error answer, whatever its status, is an `ErrorBody`: `{"detail", "code"}` (`detail`
for people, `code` stable for programs: `docs/server.md`, "Error codes"); a 422 also has
`errors`, a `submit_uncertain` 503 `run_id`."""


def _short(value: Any, limit: int = 80) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _describe(errors: list[Any]) -> str:
    parts = []
    for err in errors[:MAX_ERRORS]:
        loc = ".".join(_short(p) for p in err.get("loc", ()) if p != "body") or "body"
        parts.append(f"{loc}: {_short(err.get('msg', 'invalid'), 200)}")
    if len(errors) > MAX_ERRORS:
        parts.append(f"and {len(errors) - MAX_ERRORS} more")
    return "; ".join(parts)


OPENING_THE_DATABASE = "opening the database"
"""The start-up's first step: the store opened, its migrations run (``serve`` says its
failure as "cannot open the database …")."""


class StartError(Exception):
    """The start-up step ``step`` failed because of the database (``cause``, also the
    exception's ``__cause__``)."""

    def __init__(self, step: str, cause: BaseException) -> None:
        super().__init__(f"{step} failed: {describe_error(cause)}")
        self.step = step
        self.cause = cause


@contextlib.contextmanager
def start_step(step: str) -> Iterator[None]:
    """Run a step of the start-up: a failure of the database's
    (:func:`~.store.errors.is_database_failure`) raised
    as :class:`StartError` naming ``step``, the database's error as its cause (one already
    named goes through); any other failure, a bug, as it is.

    Example:
        >>> try:
        ...     with start_step("the relay's LISTEN connection"):
        ...         raise TimeoutError()
        ... except StartError as e:
        ...     print(e)
        the relay's LISTEN connection failed: TimeoutError
        >>> with start_step("x"):
        ...     raise KeyError("a bug")
        Traceback (most recent call last):
        KeyError: 'a bug'
    """
    try:
        yield
    except StartError:
        raise
    except Exception as e:
        if not is_database_failure(e):
            raise
        raise StartError(step, e) from e


class AppStart:
    """The app's start-up (:meth:`start`: once until :meth:`close`), and the closing of what
    it opened, in reverse order (:meth:`close`): the steps are the app's (:func:`create_app`), given as
    ``steps(stack)``, which pushes each close on ``stack`` before it opens what it closes.

    ``serve`` starts it before uvicorn does (a failure: its one line); the app's lifespan
    then finds it started, and closes it at shutdown.

    Example:
        >>> import asyncio
        >>> said = []
        >>> async def steps(stack):
        ...     stack.push_async_callback(lambda: asyncio.sleep(0, said.append("closed")))
        ...     with start_step("the relay's LISTEN connection"):
        ...         raise ConnectionRefusedError(111, "Connect call failed")
        >>> async def demo():
        ...     start = AppStart(steps)
        ...     try:
        ...         await start.start()
        ...     except StartError as e:
        ...         print(e); print(said)
        >>> asyncio.run(demo())
        the relay's LISTEN connection failed: [Errno 111] Connect call failed (ConnectionRefusedError)
        ['closed']
    """

    def __init__(self, steps: Callable[[contextlib.AsyncExitStack], Awaitable[Any]]) -> None:
        self._steps = steps
        self._opened: contextlib.AsyncExitStack | None = None

    async def start(self) -> None:
        """Run the steps (nothing when started already); a failure closes what they opened,
        then is raised (:class:`StartError` when it is the database's)."""
        if self._opened is not None:
            return
        stack = contextlib.AsyncExitStack()
        try:
            await self._steps(stack)
        except BaseException:
            # a cancel as it closes (serve's Ctrl-C, SIGTERM, SIGHUP as its start fails) does
            # not cut the closing short; what made the start fail is then raised (a second
            # cancel does cut it short)
            closing = asyncio.ensure_future(stack.aclose())
            try:
                await asyncio.shield(closing)
            except asyncio.CancelledError:
                await closing
            raise
        self._opened = stack

    async def close(self) -> None:
        """Close what the start opened, in reverse order (nothing when not started)."""
        opened, self._opened = self._opened, None
        if opened is not None:
            await opened.aclose()


def create_app(settings: ServerSettings) -> FastAPI:
    """Build the ASGI app for ``settings`` (nothing starts until the server runs it).

    ``app.state`` holds ``settings``, ``store``, ``hub``, ``log``, ``auth``, ``start`` (the
    start-up: :class:`AppStart`), and once started ``runs`` and ``recovery``.
    """
    store = Store(settings.database_url, busy_timeout=settings.store_busy_timeout,
                  connect_timeout=settings.store_connect_timeout,
                  statement_timeout=settings.store_statement_timeout)
    auth = Auth(settings, store)
    hub = Hub(settings.subscriber_queue_size, settings.subscriber_queue_bytes)
    log = EventLog(store, hub, settings.max_field_bytes)

    async def start_steps(opened: contextlib.AsyncExitStack) -> None:
        # What is opened is closed in reverse order at shutdown, and also when a later step
        # of the start-up fails (AppStart): the store's driver thread would keep the process
        # alive after the start's error. A step failed by the database says which one.
        tune_memory()  # big values (agent lines of MBs) go back to the OS once freed
        opened.push_async_callback(store.close)
        with start_step(OPENING_THE_DATABASE):
            await store.start()
        opened.push_async_callback(auth.close)
        await auth.start()  # on PostgreSQL: sign-outs on the other servers close our sockets
        # RunManager, or the queue (--dispatch queue: it names its own steps, and closes
        # what it opened when one fails)
        runs = await open_dispatcher(settings, log)
        opened.push_async_callback(runs.shutdown)
        app.state.runs = runs
        # a database that cannot be written for now: retried in the background
        recovery = Recovery(runs, max_delay=settings.store_retry_max_delay)
        app.state.recovery = recovery
        opened.push_async_callback(recovery.stop)
        with start_step("marking the runs a previous server left active interrupted"):
            await recovery.start()
        if isinstance(runs, RunManager):  # in queue mode, the sweep ends the lost workers' runs
            # another server of this host killed: its runs ended in time, not left running
            watch = DeadOwnerWatch(runs.end_dead_owners_runs,
                                   interval=settings.dead_owner_check_interval)
            watch.start()
            opened.push_async_callback(watch.stop)

    start = AppStart(start_steps)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            await start.start()  # (serve started it before uvicorn: nothing then)
            yield
        finally:
            await start.close()

    app = FastAPI(
        title="cursor-agent-api server",
        version=__version__,
        description="Run Cursor's coding agent over HTTP and WebSocket, with a durable, "
        "replayable event log. Every /api call needs the token or a session cookie."
        + _DESCRIPTION_SECTIONS,
        lifespan=lifespan,
        # No Swagger UI / ReDoc: they load their scripts from a CDN and need inline script,
        # on the origin that holds the token cookie. /openapi.json is the description.
        docs_url=None,
        redoc_url=None,
        openapi_url=None,  # served below: its session cookie named as each browser's is
    )
    app.openapi = functools.partial(_openapi, app)  # type: ignore[method-assign]
    app.state.settings = settings
    app.state.store = store
    app.state.hub = hub
    app.state.log = log
    app.state.auth = auth
    app.state.start = start

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = list(exc.errors())
        if any(e.get("type") == "json_invalid" for e in errors):
            return _error(ApiError(400, "invalid_json", "request body is not valid JSON"))
        if _not_json(request, errors):
            kind = request.headers.get("content-type") or "none"
            return _error(ApiError(
                422, "body_not_json",
                f"the body must be JSON sent with 'Content-Type: application/json' (it came as "
                f"{_short(kind)!r}; curl -d sends application/x-www-form-urlencoded: add "
                "-H 'Content-Type: application/json')",
                errors=_plain(errors),
            ))
        return _error(ApiError(422, "invalid_request", f"invalid request: {_describe(errors)}",
                               errors=_plain(errors)))

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc)

    @app.exception_handler(DatabaseError)
    @app.exception_handler(StoreUnavailableError)
    async def _store_error(_request: Request, exc: Exception) -> JSONResponse:
        # Never SQLAlchemy's message: it holds the SQL statement and its parameters.
        reason = describe_error(exc)
        if is_transient(exc):
            store.health.failed(reason, exc)
            return _error(ApiError(
                503, "database_unavailable",
                f"the database is unavailable ({reason}); nothing was changed: try again shortly",
                headers={"Retry-After": "5"},
            ))
        logger.error("database error: %s", reason)
        return _error(ApiError(500, "database_error", f"database error: {reason}"))

    @app.exception_handler(BodyTooLargeError)
    async def _too_large(_request: Request, exc: BodyTooLargeError) -> JSONResponse:
        return _error(ApiError(413, exc.code, str(exc)))  # (body_too_large, prompt_too_large)

    @app.api_route("/openapi.json", methods=["GET", "HEAD"], include_in_schema=False)
    async def _openapi_json(request: Request) -> JSONResponse:
        return JSONResponse(openapi_for(app, request.headers.get("host", "")))

    app.include_router(routes.router)
    app.include_router(websocket.router)

    if (WEB_DIR / "index.html").is_file():
        from .webui import WebUIFiles  # the UI's files (no-cache; the security headers are every answer's)

        app.mount("/", WebUIFiles(directory=WEB_DIR, html=True), name="web")
    else:

        @app.get("/", include_in_schema=False)
        async def _index() -> HTMLResponse:
            return HTMLResponse(_FALLBACK_PAGE)

    app.add_middleware(SecurityMiddleware, settings=settings, auth=auth)
    return app


def security_schemes(port: int) -> dict[str, Any]:
    """How a request authenticates (docs/server.md, "Security"): any one of these. The
    session cookie's name is that of a browser that reaches the server on ``port``
    (:func:`openapi_for` names it for each request).

    Example:
        >>> security_schemes(8765)["session"]["name"]
        'cursor_agent_api_session_8765'
    """
    return {
        "token": {"type": "apiKey", "in": "header", "name": "Authorization",
                  "description": "the server's token, as 'Authorization: token <token>'"},
        "token_query": {"type": "apiKey", "in": "query", "name": "token",
                        "description": "the token in the query (?token=…): for WebSockets and links"},
        "session": {"type": "apiKey", "in": "cookie", "name": cookie_name(port),
                    "description": "the session cookie POST /api/auth/login sets (HttpOnly), "
                                   "named cursor_agent_api_session_<PORT>: PORT is the port in "
                                   "the Host header the browser sends (the one in its address: "
                                   "a port forward's, a proxy's), or the server's own when the "
                                   "Host names none. The name here is the one for the Host "
                                   "this document was asked with"},
    }


def _openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI's document, with the security schemes every ``/api`` route needs (but those
    that say ``security: []``, sign-in and sign-out), made once.

    Example:
        >>> from cursor_agent_api.server.settings import ServerSettings
        >>> doc = create_app(ServerSettings(token="t", database_url="sqlite+aiosqlite://")).openapi()
        >>> doc["security"], doc["paths"]["/api/auth/login"]["post"]["security"]
        ([{'token': []}, {'token_query': []}, {'session': []}], [])
    """
    if app.openapi_schema is None:
        doc = get_openapi(title=app.title, version=app.version, description=app.description,
                          routes=app.routes)
        schemes = security_schemes(app.state.settings.port)
        doc.setdefault("components", {})["securitySchemes"] = schemes
        doc["security"] = [{name: []} for name in schemes]
        app.openapi_schema = doc
    return app.openapi_schema


def openapi_for(app: FastAPI, host: str) -> dict[str, Any]:
    """``/openapi.json`` for a request whose ``Host`` header is ``host``: the document
    (:func:`_openapi`), its session scheme naming the cookie a browser at that address gets
    (:meth:`~.auth.Auth.cookie_name_for`, the rule the sign-in follows; the bound port can
    differ: a port forward, a proxy, ``--port 0``).

    Example:
        >>> from cursor_agent_api.server.settings import ServerSettings
        >>> app = create_app(ServerSettings(token="t", port=8765, database_url="sqlite+aiosqlite://"))
        >>> scheme = lambda host: openapi_for(app, host)["components"]["securitySchemes"]["session"]
        >>> scheme("127.0.0.1:19765")["name"], scheme("agent.example")["name"]
        ('cursor_agent_api_session_19765', 'cursor_agent_api_session_8765')
    """
    doc = app.openapi()
    components = doc["components"]
    schemes = components["securitySchemes"]
    session = {**schemes["session"], "name": app.state.auth.cookie_name_for(host)}
    return {**doc, "components": {**components, "securitySchemes": {**schemes, "session": session}}}


def _error(exc: StarletteHTTPException) -> JSONResponse:
    """The JSON answer of ``exc``: its :func:`.errors.error_body`, status and headers."""
    return JSONResponse(error_body(exc), status_code=exc.status_code, headers=exc.headers)


def _not_json(request: Request, errors: list[Any]) -> bool:
    """The body is not an object because it was not sent as JSON (``curl -d``'s form type).

    Example:
        >>> from starlette.requests import Request
        >>> form = Request({"type": "http", "headers": [(b"content-type", b"text/plain")]})
        >>> _not_json(form, [{"loc": ("body",), "type": "model_attributes_type"}])
        True
    """
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind == "application/json" or kind.endswith("+json"):
        return False
    return any(tuple(e.get("loc", ())) == ("body",) for e in errors)


def _plain(errors: list[Any]) -> list[dict[str, Any]]:
    """The first errors, without the ``input`` pydantic keeps and with long names cut."""
    return [
        {
            "loc": [p if isinstance(p, int) else _short(p) for p in e.get("loc", ())],
            "msg": _short(e.get("msg", ""), 200),
            "type": _short(e.get("type", ""), 80),
        }
        for e in errors[:MAX_ERRORS]
    ]
