"""The REST API (JSON; OpenAPI at ``/openapi.json``). See ``docs/server.md``.

Every error answer is an :class:`.errors.ErrorBody`, ``{"detail": "<what happened and
what to do>", "code": "<the case>"}`` (raised as :class:`.errors.ApiError`); a refused
request writes nothing.

Example:
    >>> ChatCreate(workspace=".", options={"force": True}).options.force
    True
    >>> ChatCreate(workspace=".", options={"forse": True})
    Traceback (most recent call last):
    ...
    pydantic_core._pydantic_core.ValidationError: 1 validation error for ChatCreate
    ...
"""

from __future__ import annotations

import functools
import logging
from typing import Annotated, Any, Literal

import orjson
from fastapi import APIRouter, Depends, Path, Query, Request, Response, status
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, field_validator
from pydantic.json_schema import SkipJsonSchema

from .. import __version__
from ..config import MODEL_ID_MAX_LENGTH, MODEL_ID_PATTERN, MODEL_ID_RULE
from .auth import Auth, Throttled
from .dispatch import CancelNotAppliedError, Dispatcher
from .dispatch.answers import AnswerNotTakenError
from .dispatch.queue import QueueDispatcher
from .errors import ApiError, error_responses
from .hub import Hub
from .models import RunStatus
from .requests import AlreadyAnsweredError, AnswerIn, UnknownRequestError, pair_requests, request_records
from .runs import RunNotActiveError, ServerClosingError, SubmitUncertainError, answered_or_unknown, run_view
from .schemas import (
    CancelPending,
    ChatList,
    ChatView,
    EventsPage,
    LoginCode,
    RunsPage,
    RunView,
    ToolCallsPage,
    TurnsPage,
    ok,
)
from .security import WorkspaceError, resolve_workspace, token_from_request
from .settings import WS_PROTOCOL_VERSION, ServerSettings
from .store import (
    ActiveRunError,
    NotFoundError,
    Store,
    cut_value,
    describe_error,
    json_bytes,
    resolve_pointer,
)
from .turns import backfill_page, turn_view, whole_tool_output
from .webui import library_remedies, read_cut, stored_cuts, stored_output, text_item, tool_call_item

logger = logging.getLogger("cursor_agent_api.server")


async def _ids_without_nul(request: Request) -> None:
    """Every route's ids (its path parameters, a ``run_id`` query): one holding a NUL names
    nothing (no id has one; PostgreSQL text cannot hold it): 404, as an unknown id, before
    any query."""
    query = request.query_params.get("run_id")
    named = {**request.path_params, **({"run_id": query} if query is not None else {})}
    for name, value in named.items():
        code, what = _NOT_FOUND_BY_PARAMETER.get(name, ("not_found", name))
        if isinstance(value, str) and "\x00" in value:
            raise ApiError(404, code, f"no {what} {value!r}")
        if name in ("chat_id", "run_id") and isinstance(value, str) and len(value) > 64:  # UUIDs
            raise ApiError(404, code, f"no {what} {value[:64]!r}… ({len(value)} characters)")


_NOT_FOUND_BY_PARAMETER = {
    "chat_id": ("chat_not_found", "chat with id"),
    "run_id": ("run_not_found", "run with id"),
    "request_id": ("request_not_found", "request with id"),
    "seq": ("record_not_found", "record with seq"),
    "index": ("tool_call_not_found", "tool call with index"),
}
"""A path parameter's 404: its code (``errors.CODES``) and what it names."""


NOT_FOUND = error_responses(404)
NO_SECURITY: dict[str, Any] = {"security": []}
"""A route that needs neither the token nor a session (sign-in, sign-out)."""

router = APIRouter(
    prefix="/api",
    dependencies=[Depends(_ids_without_nul)],
    # what any route may answer (the security checks, the body limit, the database)
    responses=error_responses(400, 401, 403, 413, 422, 429, 500, 503),
)

_DEFAULT_TITLE = "New chat in "
_MODEL_PATTERN = f"^{MODEL_ID_PATTERN}$"  # the library's own rule (config.py)
LOGIN_CODE_TTL_SECONDS = 300
"""How long a code from ``POST /api/auth/codes`` stays valid (the one ``serve`` prints: until used)."""
MAX_SEQ = 2**63 - 1
"""The largest seq or offset a query may name (a signed 64-bit integer, as stored)."""


def _no_nul(value: str | None) -> str | None:
    r"""A title holds no NUL (as a prompt: PostgreSQL text cannot hold it).

    Example:
        >>> _no_nul("a\x00b")
        Traceback (most recent call last):
        ...
        ValueError: must not contain NUL characters
    """
    if value is not None and "\x00" in value:
        raise ValueError("must not contain NUL characters")
    return value


class ChatOptions(BaseModel):
    """How the agent runs in this chat (each maps to a CLI flag)."""

    model_config = ConfigDict(extra="forbid")

    force: StrictBool = Field(default=False, description="auto-approve tool calls (--force)")
    approve_mcps: StrictBool = Field(default=False, description="auto-approve MCP servers")
    trust: StrictBool = Field(default=False, description="trust the workspace (--trust)")
    stream_partial_output: StrictBool = Field(
        default=False, description="token-level assistant deltas (--stream-partial-output)"
    )
    transport: Literal["print", "acp"] = Field(
        default="print",
        description="'print' (agent --print, one process per turn) or 'acp' (agent acp: each "
        "tool call the agent asks about, its questions and plans are answered in the page)",
    )
    mode: Literal["agent", "plan", "ask"] = Field(
        default="agent",
        description="ACP chats: the session's mode (session/set_mode): 'agent' (full tool "
        "access), 'plan' (read-only planning: edits become a plan to accept or reject in the "
        "page) or 'ask' (questions only); print-mode chats take 'agent' only",
    )


class ChatCreate(BaseModel):
    """Body of ``POST /api/chats``."""

    model_config = ConfigDict(extra="forbid")

    workspace: str = Field(
        ".",
        max_length=4096,
        description="a directory under one of the allowed roots; "
        "relative paths are taken from the first root",
    )
    model: str | None = Field(
        None,
        max_length=MODEL_ID_MAX_LENGTH,
        pattern=_MODEL_PATTERN,
        description=f"a model id: {MODEL_ID_RULE}",
    )
    title: Annotated[str | None, AfterValidator(_no_nul)] = Field(None, max_length=500)
    options: ChatOptions = Field(default_factory=lambda: ChatOptions())


def _no_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


def _option(description: str) -> Any:
    """A field of :class:`ChatOptionsUpdate`: optional, not nullable (its schema has no default)."""
    return Field(default=None, description=description, json_schema_extra=_no_default)


class ChatOptionsUpdate(BaseModel):
    """The options a ``PATCH /api/chats/{id}`` changes; those left out keep their value
    (``null`` is not a value: an option is left out or given).

    Example:
        >>> ChatOptionsUpdate(force=None)
        Traceback (most recent call last):
        ...
        pydantic_core._pydantic_core.ValidationError: 1 validation error for ChatOptionsUpdate
        force
          Value error, must be given a value, not null (leave an option out to keep it) ...
    """

    model_config = ConfigDict(extra="forbid")

    # (None: left out. The schema says what is accepted: no null, no default.)
    force: StrictBool | SkipJsonSchema[None] = _option("auto-approve tool calls (--force)")
    approve_mcps: StrictBool | SkipJsonSchema[None] = _option("auto-approve MCP servers")
    trust: StrictBool | SkipJsonSchema[None] = _option("trust the workspace (--trust)")
    stream_partial_output: StrictBool | SkipJsonSchema[None] = _option(
        "token-level assistant deltas (--stream-partial-output)"
    )
    transport: Literal["print", "acp"] | SkipJsonSchema[None] = _option("'print' or 'acp'")
    mode: Literal["agent", "plan", "ask"] | SkipJsonSchema[None] = _option(
        "ACP chats: 'agent', 'plan' or 'ask'"
    )

    @field_validator("*", mode="before")
    @classmethod
    def _given(cls, value: Any) -> Any:
        if value is None:
            raise ValueError("must be given a value, not null (leave an option out to keep it)")
        return value

    def changes(self) -> dict[str, Any]:
        """The options given.

        Example:
            >>> ChatOptionsUpdate(force=True).changes()
            {'force': True}
        """
        return {k: v for k, v in self.model_dump(exclude_unset=True).items() if v is not None}


class ChatUpdate(BaseModel):
    """Body of ``PATCH /api/chats/{id}``: a new title, new options, or both.

    Example:
        >>> ChatUpdate(options={"force": True}).options.changes()
        {'force': True}
    """

    model_config = ConfigDict(extra="forbid")

    title: Annotated[str | None, AfterValidator(_no_nul)] = Field(None, min_length=1, max_length=500)
    options: ChatOptionsUpdate | None = Field(
        None, description="options to change; 409 while the chat has a queued or running run"
    )


class PromptIn(BaseModel):
    """Body of ``POST /api/chats/{id}/runs``."""

    model_config = ConfigDict(extra="forbid")

    # min_length 0, not 1: "" is refused by the route as a blank one is (422 empty_prompt);
    # a length constraint has pydantic check the text is Unicode (a lone surrogate is a 422)
    prompt: str = Field(min_length=0, description="the prompt (not empty or only whitespace); "
                                                  "at most max_prompt_bytes UTF-8")


class LoginIn(BaseModel):
    """Body of ``POST /api/auth/login``."""

    model_config = ConfigDict(extra="forbid")

    token: str = Field(min_length=1, max_length=1000)


def _settings(request: Request) -> ServerSettings:
    settings: ServerSettings = request.app.state.settings
    return settings


def _store(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


def _runs(request: Request) -> Dispatcher:
    runs: Dispatcher = request.app.state.runs  # RunManager, or QueueDispatcher (--dispatch queue)
    return runs


def chat_view(row: dict[str, Any], latest_run: dict[str, Any] | None = None) -> dict[str, Any]:
    """The public JSON form of a chat.

    Example:
        >>> chat_view({"id": "c", "title": "t", "status": None})["status"]
        'idle'
    """
    keys = (
        "id",
        "session_id",
        "workspace",
        "model",
        "options",
        "title",
        "created_ms",
        "updated_ms",
        "last_seq",
    )
    view = {k: row.get(k) for k in keys}
    status_ = row.get("status") if latest_run is None else latest_run.get("status")
    view["status"] = status_ or "idle"
    if latest_run is not None:
        view["latest_run"] = run_view(latest_run)
    return view


async def _chat_or_404(request: Request, chat_id: str) -> dict[str, Any]:
    chat = await _store(request).get_chat(chat_id)
    if chat is None:
        raise ApiError(404, "chat_not_found", f"no chat with id {chat_id!r}")
    return chat


async def _run_of_chat_or_404(request: Request, chat_id: str, run_id: str | None) -> None:
    """A ``run_id`` query names a run of the chat (404 otherwise: a typo is not an empty page)."""
    if run_id is None:
        return
    run = await _store(request).get_run(run_id)
    if run is None or run["chat_id"] != chat_id:
        raise ApiError(404, "run_not_found", f"chat {chat_id!r} has no run with id {run_id!r}")


async def _run_or_404(request: Request, run_id: str) -> dict[str, Any]:
    run = await _store(request).get_run(run_id)
    if run is None:
        raise ApiError(404, "run_not_found", f"no run with id {run_id!r}")
    return run


# ---- health and configuration --------------------------------------------------------


@router.get("/health", tags=["server"])
async def health(request: Request) -> dict[str, Any]:
    """Liveness and what the page must show (``simulate``: agents are simulated;
    :func:`_simulated`).

    ``status`` is ``degraded`` while the database fails (``store`` says since when, why,
    and how much of the agents' output waits in memory), and with ``--dispatch queue`` while
    the relay's LISTEN connection is down (``relay``; ``workers``: as of the last sweep); it
    needs no database itself.
    """
    s = _settings(request)
    store = _store(request)
    runs = _runs(request)
    cluster: dict[str, Any] = runs.health() if isinstance(runs, QueueDispatcher) else {}
    relay = cluster.get("relay")
    degraded = store.health.degraded or (relay is not None and not relay["connected"])
    return {
        "status": "degraded" if degraded else "ok",
        "version": __version__,
        "simulate": _simulated(s),
        "ws_protocol": WS_PROTOCOL_VERSION,
        "database": store.dialect,
        "store": {**store.health.view(), "buffered": runs.buffered()},
        "runs": runs.counts(),
        "relay": relay,
        "workers": cluster.get("workers"),
    }


def _simulated(s: ServerSettings) -> bool | None:
    """Whether this server's runs are simulated; ``None`` with ``--dispatch queue``: the
    workers run the agents, each simulated or not by its own ``--simulate`` (this server's
    flag said ``false`` beside simulating workers: the page's label was wrong).

    Example:
        >>> _simulated(ServerSettings(token="t", simulate=True)), _simulated(
        ...     ServerSettings(token="t", simulate=True, dispatch="queue"))
        (True, None)
    """
    return None if s.dispatch == "queue" else s.simulate


@router.get("/config", tags=["server"])
async def config(request: Request) -> dict[str, Any]:
    """The server's limits and allowed workspace roots (for a new-chat form)."""
    s = _settings(request)
    return {
        "version": __version__,
        "simulate": _simulated(s),
        "roots": [str(r) for r in s.roots],
        "default_workspace": str(s.roots[0]) if s.roots else None,
        "max_concurrent_runs": s.max_concurrent_runs,
        "max_prompt_bytes": s.max_prompt_bytes,
        "max_body_bytes": s.max_body_bytes,
        "ws_protocol": WS_PROTOCOL_VERSION,
        "subscriber_queue_size": s.subscriber_queue_size,
        "one_run_per_chat": "409",
        # the page shows its own remedy in place of the library's (webui.library_remedies)
        "library_remedies": library_remedies(),
    }


def _auth(request: Request) -> Auth:
    auth: Auth = request.app.state.auth
    return auth


def _check_secret(auth: Auth, token: str) -> bool:
    """:meth:`.Auth.check_secret`, a 429 with ``Retry-After`` while the throttle holds."""
    try:
        return auth.check_secret(token=token)
    except Throttled as throttled:
        raise ApiError(429, "throttled", str(throttled),
                       headers={"Retry-After": str(throttled.seconds)}) from None


@router.post("/auth/login", status_code=204, tags=["auth"], openapi_extra=NO_SECURITY)
async def login(body: LoginIn, request: Request) -> Response:
    """Exchange the token for a new session cookie (HttpOnly, SameSite=Strict, per port).

    429 with ``Retry-After`` while too many wrong tokens were sent (see docs/server.md).
    """
    auth = _auth(request)
    if not _check_secret(auth, body.token):
        raise ApiError(401, "invalid_token", "invalid token")
    name, value = auth.set_cookie(await auth.create_session(), request.headers.get("host", ""))
    return Response(status_code=204, headers={name.decode(): value.decode()})


@router.post("/auth/codes", status_code=201, tags=["auth"], responses=ok(LoginCode, 201))
async def new_login_code(request: Request) -> dict[str, Any]:
    """A new one-time login code and the link that uses it (valid once, for 5 minutes).

    For programs that hold the token and want to open the page in a browser without
    putting the token in its address bar (and history). Needs the token itself: a session
    cookie cannot mint new sessions (a replayed cookie must not outlive its logout).
    """
    presented = token_from_request({k.lower(): v for k, v in request.headers.items()}, request.url.query)
    if presented is None or not _check_secret(_auth(request), presented):
        raise ApiError(403, "token_required",
                       "a login link can only be made with the token ('Authorization: token …')")
    code = _auth(request).issue_code(ttl_seconds=LOGIN_CODE_TTL_SECONDS)
    # the link names the port the client used (the Host check let its Host in; with two Host
    # headers, which the check and this would read differently, the bound address)
    hosts = request.headers.getlist("host")
    url = _settings(request).login_url(code, hosts[0] if len(hosts) == 1 else None)
    return {"code": code, "url": url, "expires_in": LOGIN_CODE_TTL_SECONDS}


@router.post("/auth/logout", status_code=204, tags=["auth"], openapi_extra=NO_SECURITY)
async def logout(request: Request) -> Response:
    """End this browser's session (it cannot be used again) and clear its cookie."""
    auth = _auth(request)
    host = request.headers.get("host", "")
    sid = request.cookies.get(auth.cookie_name_for(host))
    if sid:
        await auth.revoke_session(sid)
    name, value = auth.clear_cookie(host)
    return Response(status_code=204, headers={name.decode(): value.decode()})


# ---- chats ---------------------------------------------------------------------------


def _check_mode(options: dict[str, Any]) -> None:
    """A session mode other than ``agent`` needs an ACP chat (422): print mode has none."""
    if options.get("mode", "agent") != "agent" and options.get("transport") != "acp":
        raise ApiError(
            422, "mode_needs_acp",
            f"mode {options.get('mode')!r} needs transport 'acp' (a session mode is ACP's); "
            "print-mode chats run in mode 'agent'"
        )


@router.post("/chats", status_code=201, tags=["chats"], responses=ok(ChatView, 201))
async def create_chat(body: ChatCreate, request: Request) -> dict[str, Any]:
    """Create a chat in a workspace under the allowed roots."""
    s = _settings(request)
    try:
        workspace = resolve_workspace(body.workspace, s.roots)
    except WorkspaceError as e:
        code = "invalid_workspace" if e.status == 400 else "workspace_not_allowed"
        raise ApiError(e.status, code, str(e)) from None
    title = body.title or f"{_DEFAULT_TITLE}{workspace.name or workspace}"
    _check_mode(body.options.model_dump())
    chat = await _store(request).create_chat(
        workspace=str(workspace), model=body.model, options=body.options.model_dump(), title=title
    )
    return chat_view(chat)


ChatsCursor = Annotated[
    str | None,
    Query(
        pattern=r"^-?[0-9]{1,19}:[A-Za-z0-9-]{1,36}$",  # (a clock before 1970: negative)
        description="the next_before of the previous page: this page starts after its last chat",
    ),
]
"""Where a page of ``GET /api/chats`` starts: ``<updated_ms>:<id>`` of the previous page's
last chat (its key in the order, not its place: see docs/server.md, "Pages of chats")."""


@router.get("/chats", tags=["chats"], responses=ok(ChatList))
async def list_chats(
    request: Request,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    offset: Annotated[int, Query(ge=0, le=MAX_SEQ)] = 0,
    before: ChatsCursor = None,
) -> dict[str, Any]:
    """Chats, most recently active first, with the status of each one's latest run: a page
    of ``limit``. Page on with ``before = next_before`` while ``has_more`` (no chat skipped
    or repeated while others become active); ``offset`` still skips that many."""
    key = None
    if before is not None:
        at, chat_id = before.split(":", 1)
        if not -MAX_SEQ - 1 <= int(at) <= MAX_SEQ:  # the column's range (BIGINT)
            raise ApiError(422, "invalid_cursor", "before must be the next_before of a page of "
                           "GET /api/chats", loc=("query", "before"))
        key = (int(at), chat_id)
    rows, has_more = await _store(request).list_chats(limit=limit, offset=offset, before=key)
    last = rows[-1] if rows else None
    return {
        "chats": [chat_view(r) for r in rows],
        "has_more": has_more,
        "next_before": f"{last['updated_ms']}:{last['id']}" if last is not None else None,
    }


@router.get("/chats/{chat_id}", tags=["chats"], responses={**ok(ChatView), **NOT_FOUND})
async def get_chat(chat_id: str, request: Request) -> dict[str, Any]:
    """One chat, with its latest run (``null`` before its first)."""
    chat = await _chat_or_404(request, chat_id)
    runs = await _store(request).list_runs(chat_id, limit=1)
    if not runs:
        return {**chat_view(chat), "latest_run": None}
    return chat_view(chat, runs[-1])


@router.patch("/chats/{chat_id}", tags=["chats"],
              responses={**ok(ChatView), **error_responses(404, 409)})
async def update_chat(chat_id: str, body: ChatUpdate, request: Request) -> dict[str, Any]:
    """Rename a chat and/or change its options (those given; the others keep their value).

    The options apply from the chat's next run; changing them while a run is queued or
    running is refused (409), so a run never starts with options other than those shown.
    """
    if body.title is None and body.options is None:
        raise ApiError(422, "nothing_to_change", "nothing to change: give a title, options, or both")
    changes = body.options.changes() if body.options is not None else {}
    if body.options is not None and (not changes or len(changes) != len(body.options.model_fields_set)):
        raise ApiError(
            422, "invalid_options",
            "options must name at least one option, each true or false (transport: 'print' or "
            "'acp'; mode: 'agent', 'plan' or 'ask')",
            loc=("body", "options"),
        )
    await _chat_or_404(request, chat_id)  # (deleted meanwhile: update_chat's 404)
    values: dict[str, Any] = {}
    if body.title is not None:
        values["title"] = body.title

    def merge(current: dict[str, Any]) -> dict[str, Any]:
        """The chat's options as stored now (read with its row locked), with the changes."""
        options = {**ChatOptions().model_dump(), **current, **changes}
        _check_mode(options)
        return options

    try:
        row = await _store(request).update_chat(
            chat_id, idle_only=bool(changes), merge_options=merge if changes else None, **values
        )
    except ActiveRunError:
        raise ApiError(
            409, "options_locked",
            "this chat has a queued or running run: its options can change once the run has "
            "ended (or cancel it: POST /api/runs/{id}/cancel)",
        ) from None
    except NotFoundError:  # deleted since it was read
        raise ApiError(404, "chat_not_found", f"no chat with id {chat_id!r}") from None
    return chat_view(row)


@router.delete("/chats/{chat_id}", status_code=204, tags=["chats"], responses=error_responses(404, 409))
async def delete_chat(chat_id: str, request: Request) -> Response:
    """Delete a chat and everything of it: its runs, records, tool calls and folded turns
    (and, with ``--dispatch queue``, its runs' finished jobs), in one transaction. 409 while
    a run of it is queued or running (cancel it first), or its job is not over; 404 unknown.
    The chat's WebSockets, on every server of the database, get an ``error`` and close (4404).
    The database file does not shrink by itself: see docs/server.md, "Deleting chats and
    reclaiming space"."""
    try:
        counts = await _store(request).delete_chat(chat_id)
    except NotFoundError:
        raise ApiError(404, "chat_not_found", f"no chat with id {chat_id!r}") from None
    except ActiveRunError:
        raise ApiError(
            409, "delete_refused",
            "this chat has a queued or running run: cancel it (POST /api/runs/{id}/cancel) "
            "or wait for it to end, then delete the chat",
        ) from None
    hub: Hub = request.app.state.hub
    hub.chat_deleted(chat_id)  # (another server's sockets: the delete's notification)
    logger.info("chat %s deleted (%s)", chat_id, ", ".join(f"{n} {k}" for k, n in counts.items()))
    return Response(status_code=204)


# ---- runs ----------------------------------------------------------------------------


@router.post("/chats/{chat_id}/runs", status_code=202, tags=["runs"],
             responses={**ok(RunView, 202, "the run, queued"), **error_responses(404, 409)})
async def start_run(chat_id: str, body: PromptIn, request: Request) -> dict[str, Any]:
    """Post a prompt: queues a run (202). 409 while the chat has a queued or running run."""
    s = _settings(request)
    size = len(body.prompt.encode("utf-8"))
    if size > s.max_prompt_bytes:
        raise ApiError(
            413, "prompt_too_large",
            f"prompt is {size} bytes; the limit is {s.max_prompt_bytes} (--max-prompt-bytes)"
        )
    if "\x00" in body.prompt:
        raise ApiError(400, "invalid_prompt", "prompt must not contain NUL characters")
    if not body.prompt.strip():
        raise ApiError(422, "empty_prompt", "the prompt is empty (only whitespace): type a prompt")
    chat = await _chat_or_404(request, chat_id)
    try:
        run = await _runs(request).submit(chat, body.prompt)
    except ActiveRunError:
        raise ApiError(
            409, "chat_busy",
            "this chat already has a queued or running run: wait for it to end or "
            "cancel it (POST /api/runs/{id}/cancel)",
        ) from None
    except NotFoundError:  # deleted since it was read: nothing was stored
        raise ApiError(404, "chat_not_found", f"no chat with id {chat_id!r}") from None
    except ServerClosingError:
        raise ApiError(503, "server_closing", "the server is shutting down") from None
    except SubmitUncertainError as e:  # not "nothing was changed": it may have been stored
        raise ApiError(503, "submit_uncertain", str(e), headers={"Retry-After": "5"},
                       run_id=e.run_id) from None
    if chat.get("last_seq") == 0 and str(chat["title"]).startswith(_DEFAULT_TITLE):
        # A chat created without a title is named after its first prompt.
        first_line = body.prompt.strip().splitlines()[0] if body.prompt.strip() else ""
        if first_line:
            title = first_line if len(first_line) <= 80 else first_line[:79] + "…"
            try:  # unless it was renamed meanwhile
                await _store(request).name_chat(chat_id, title, if_title=str(chat["title"]))
            except Exception as e:  # the run started: the answer says so; the title can wait
                logger.warning(
                    "could not name chat %s after its first prompt: %s", chat_id, describe_error(e)
                )
    return run


RUNS_PAGE = 100
"""How many runs a page of ``GET …/runs`` or ``GET …/turns`` has by default (at most 1000)."""

RunsLimit = Annotated[int, Query(ge=1, le=1000)]
"""The ``limit`` of a page of runs (``GET …/runs``, ``GET …/turns``)."""


@router.get("/chats/{chat_id}/runs", tags=["runs"], responses={**ok(RunsPage), **NOT_FOUND})
async def list_runs(
    chat_id: str,
    request: Request,
    before_run: str | None = None,
    limit: RunsLimit = RUNS_PAGE,
) -> Response:
    """A page of the chat's runs, oldest first: its newest ``limit`` runs older than run
    ``before_run`` (from the newest without it), fewer when they pass about
    ``max_page_bytes`` (always one at least). Page back with
    ``before_run = next_before_run`` while ``has_more``."""
    await _chat_or_404(request, chat_id)
    await _run_of_chat_or_404(request, chat_id, before_run)
    rows, has_more = await _store(request).page_runs(
        chat_id, before_run=before_run, limit=limit, max_bytes=_settings(request).max_page_bytes
    )
    body = {"chat_id": chat_id, "runs": [run_view(r) for r in rows], "has_more": has_more,
            "next_before_run": str(rows[0]["id"]) if rows else None}
    return Response(json_bytes(body), media_type="application/json")


@router.get("/runs/{run_id}", tags=["runs"], responses={**ok(RunView), **NOT_FOUND})
async def get_run(run_id: str, request: Request) -> dict[str, Any]:
    """One run."""
    return run_view(await _run_or_404(request, run_id))


@router.post("/runs/{run_id}/cancel", tags=["runs"], responses={
    **ok(RunView, 200, "the run, cancelled"), **ok(CancelPending, 202), **error_responses(404, 409)})
async def cancel_run(run_id: str, request: Request, response: Response) -> dict[str, Any]:
    """Stop a queued or running run; answers once it is marked (``cancelled``). 409 if over,
    also when it ended otherwise while the cancel was under way (its result was in), and
    when its server process (another on this database) is dead: the run is then ended
    ``interrupted``, as that server's restart would have ended it. 202
    when it is not marked yet after the wait: the cancel stays requested (``detail`` says so)."""
    run = await _run_or_404(request, run_id)
    if RunStatus(run["status"]).final:
        raise ApiError(409, "run_over", f"run {run_id} is already {run['status']}")
    try:
        await _runs(request).cancel(run_id)
    except CancelNotAppliedError as e:
        run = await _run_or_404(request, run_id)
        if not RunStatus(run["status"]).final:  # (it may have ended right then: answered below)
            response.status_code = 202
            return {**run_view(run), "detail": str(e)}
    except RunNotActiveError as e:  # where it is, in the message
        run = await _run_or_404(request, run_id)  # it may have ended meanwhile (or been ended)
        if RunStatus(run["status"]).final:
            raise ApiError(409, "run_over", f"run {run_id} is already {run['status']}") from None
        raise ApiError(409, "run_elsewhere", str(e)) from None
    run = await _run_or_404(request, run_id)
    if RunStatus(run["status"]).final and run["status"] != RunStatus.CANCELLED:
        raise ApiError(409, "run_over", f"run {run_id} is already {run['status']}")
    return run_view(run)


@router.post("/runs/{run_id}/requests/{request_id}", tags=["runs"], responses=error_responses(404, 409))
async def answer_request(run_id: str, request_id: str, body: AnswerIn, request: Request) -> dict[str, Any]:
    """Answer what an ACP run asks (a ``request`` record): a permission request
    (``{"decision": "allow-once" | "allow-always" | "reject"}``), a question
    (``{"answers": [{"question_id", "option_ids"}]}`` or ``{"skip": true}``) or a plan
    (``{"accept": true | false}``). Answers the ``answered`` record's payload once it is
    stored. 404: no such run or request; 409: already answered (by a person, the timeout,
    a cancel or a restart); 422: the body does not fit the request.
    """
    await _run_or_404(request, run_id)
    runs = _runs(request)
    try:
        answer = getattr(runs, "answer", None)
        if answer is not None:
            return dict(await answer(run_id, request_id, body))
        await answered_or_unknown(_store(request), run_id, request_id)
    except UnknownRequestError:
        raise ApiError(404, "request_not_found", f"run {run_id!r} has no request {request_id!r}") from None
    except AlreadyAnsweredError as e:
        raise ApiError(409, "already_answered", str(e)) from None
    except ValueError as e:
        raise ApiError(422, "answer_mismatch", str(e)) from None
    except AnswerNotTakenError as e:  # queue mode: the run's worker did not take it in time
        raise ApiError(503, "answer_not_taken", str(e), headers={"Retry-After": "2"}) from None
    raise ApiError(  # pragma: no cover
        404, "request_not_found", f"run {run_id!r} has no request {request_id!r}")


# ---- events and tool calls -----------------------------------------------------------


def _seq_in_chat(chat: dict[str, Any], after_seq: int) -> None:
    """Refuse a cursor (``after_seq``: a record's seq) past the chat's ``last_seq``, as the
    WebSocket does (4400): the client's records are not this database's (say, the last
    commits before a power loss); it must start again from 0. Events and tool calls."""
    if after_seq > chat["last_seq"]:
        raise ApiError(
            400,
            "after_seq_beyond_last",
            f"after_seq {after_seq} is beyond the chat's last seq {chat['last_seq']}: "
            "the records you have are not this database's; start again from after_seq=0",
            last_seq=chat["last_seq"],
        )


@router.get(
    "/chats/{chat_id}/events", tags=["events"],
    responses={**ok(EventsPage), **error_responses(400), **NOT_FOUND},
)
async def list_events(
    chat_id: str,
    request: Request,
    after_seq: Annotated[int, Query(ge=0, le=MAX_SEQ)] = 0,
    limit: Annotated[int, Query(ge=1, le=5000)] = 500,
    run_id: str | None = None,
    include_raw: bool = False,
) -> Response:
    """Stored records with ``seq > after_seq``, in order, at most ``limit``.

    A page also stops at about ``max_page_bytes``, and a field longer than
    ``max_field_bytes`` is cut: the record lists it in ``truncated``
    (``{"field": <JSON pointer>, "bytes": <whole size>}``) and
    ``GET /api/chats/{id}/events/{seq}/value?field=<pointer>`` gives the whole value.
    Page on with ``after_seq = next_after_seq`` while ``has_more``. An ``after_seq`` past
    the chat's ``last_seq`` is a 400, as on the WebSocket (4400): the client's records are
    not this database's (say, the last commits before a power loss): start again from 0.
    """
    s = _settings(request)
    chat = await _chat_or_404(request, chat_id)
    _seq_in_chat(chat, after_seq)
    await _run_of_chat_or_404(request, chat_id, run_id)
    recs, has_more = await _store(request).read_page(
        chat_id,
        after_seq,
        limit,
        max_bytes=s.max_page_bytes,
        max_field_bytes=s.max_field_bytes,
        include_raw=include_raw,
        run_id=run_id,
    )
    body = {
        "chat_id": chat_id,
        "events": [r.to_dict(include_raw) for r in recs],
        "next_after_seq": recs[-1].seq if recs else after_seq,
        "has_more": has_more,
        "last_seq": chat["last_seq"],
    }
    return Response(orjson.dumps(body), media_type="application/json")


@router.get(
    "/chats/{chat_id}/events/{seq}/value",
    tags=["events"],
    responses={200: {"description": "the value: a string as text, anything else as JSON",
                     "content": {"text/plain": {"schema": {"type": "string"}},
                                 "application/json": {"schema": {"description": "any JSON value"}}}},
               **NOT_FOUND},
)
async def event_value(
    chat_id: str,
    seq: Annotated[int, Path(ge=1, le=2**62)],
    request: Request,
    field: Annotated[str, Query(max_length=2000, description="a JSON pointer: /raw or /payload/…")],
) -> Response:
    """The whole value of one field of a record (what ``truncated`` points to).

    A string comes back as ``text/plain; charset=utf-8``, anything else as JSON.
    """
    await _chat_or_404(request, chat_id)
    rec = await _store(request).get_event(chat_id, seq)
    if rec is None:
        raise ApiError(404, "record_not_found", f"chat {chat_id!r} has no record {seq}")
    rec = rec.restored()
    try:
        value = resolve_pointer({"payload": rec.payload, "raw": rec.raw}, field)
    except KeyError:
        raise ApiError(
            404, "record_not_found",
            "no such field in this record: give a JSON pointer such as /raw or /payload/text"
        ) from None
    if isinstance(value, str):
        return Response(value.encode("utf-8", "replace"), media_type="text/plain; charset=utf-8")
    return Response(orjson.dumps(value), media_type="application/json")


def _tool_view(row: dict[str, Any], max_field_bytes: int) -> dict[str, Any]:
    # (str: a row's keys are SQLAlchemy's quoted names, which orjson does not take as keys)
    view = {str(k): v for k, v in row.items() if k not in ("id", "idx", "cuts")}
    view["index"] = row["idx"]
    view["output"] = stored_output(row)
    view["result"], stored = stored_cuts(row)  # cut when stored (store.writes._tool_row)
    cuts = list(stored)
    for key in ("args", "result", "output"):
        view[key] = cut_value(view.get(key), max_field_bytes, f"/{key}", cuts)
    if cuts:
        # The whole values are in the records of the call (started_seq, completed_seq); a
        # field cut when stored and again here (the output made of a cut result) is listed
        # once, with its whole size (the stored cut's).
        first: dict[str, dict[str, Any]] = {}
        for cut in cuts:  # (where and how big: not a read's range kept in its cut)
            first.setdefault(cut["field"], {"field": cut["field"], "bytes": cut["bytes"]})
        view["truncated"] = list(first.values())
    return view


TOOL_CALLS_PAGE = 500
"""How many tool calls a page of ``GET …/tool-calls`` has by default (at most 5000)."""


async def _tool_calls_page(
    request: Request, chat_id: str, run_id: str | None, after_seq: int, limit: int
) -> Response:
    """A page of tool calls (see ``docs/server.md``, "Pages of tool calls"): each call's view
    is made once, and measured as JSON for the page's ``max_page_bytes``."""
    s = _settings(request)
    views: dict[int, dict[str, Any]] = {}

    def measure(row: dict[str, Any]) -> int:
        views[int(row["id"])] = view = _tool_view(row, s.max_field_bytes)
        return len(json_bytes(view))

    rows, has_more, reached = await _store(request).page_tool_calls(
        chat_id, run_id=run_id, after_seq=after_seq, limit=limit, max_bytes=s.max_page_bytes,
        measure=measure,
    )
    calls = [views.get(int(r["id"])) or _tool_view(r, s.max_field_bytes) for r in rows]
    body = {"tool_calls": calls, "has_more": has_more, "next_after_seq": reached}
    return Response(json_bytes(body), media_type="application/json")


ToolCallsLimit = Annotated[int, Query(ge=1, le=5000)]
"""The ``limit`` of a page of tool calls."""
AfterSeq = Annotated[int, Query(ge=0, le=MAX_SEQ)]


@router.get(
    "/chats/{chat_id}/tool-calls", tags=["events"],
    responses={**ok(ToolCallsPage), **error_responses(400), **NOT_FOUND},
)
async def chat_tool_calls(
    chat_id: str,
    request: Request,
    run_id: str | None = None,
    after_seq: AfterSeq = 0,
    limit: ToolCallsLimit = TOOL_CALLS_PAGE,
) -> Response:
    """A page of the tool calls of the chat (or of one run), in the order they started:
    those started (or first seen) after record ``after_seq``, at most ``limit``, fewer when
    they pass about ``max_page_bytes``. Page on with ``after_seq = next_after_seq`` while
    ``has_more``. An ``after_seq`` past the chat's ``last_seq`` is a 400, as for the events."""
    _seq_in_chat(await _chat_or_404(request, chat_id), after_seq)
    await _run_of_chat_or_404(request, chat_id, run_id)
    return await _tool_calls_page(request, chat_id, run_id, after_seq, limit)


@router.get(
    "/runs/{run_id}/tool-calls", tags=["events"],
    responses={**ok(ToolCallsPage), **error_responses(400), **NOT_FOUND},
)
async def run_tool_calls(
    run_id: str, request: Request, after_seq: AfterSeq = 0, limit: ToolCallsLimit = TOOL_CALLS_PAGE
) -> Response:
    """A page of the tool calls of one run (as ``GET /api/chats/{id}/tool-calls``)."""
    run = await _run_or_404(request, run_id)
    if after_seq:  # (0 is always in the chat: no second read for a first page)
        _seq_in_chat(await _chat_or_404(request, str(run["chat_id"])), after_seq)
    return await _tool_calls_page(request, str(run["chat_id"]), run_id, after_seq, limit)


_ITEM_ORDER = {"text": 0, "thinking": 0, "tool_call": 1, "request": 2, "error": 3}


@router.get("/chats/{chat_id}/turns", tags=["chats"], responses={**ok(TurnsPage), **NOT_FOUND})
async def chat_turns(
    chat_id: str,
    request: Request,
    before_run: str | None = None,
    limit: RunsLimit = RUNS_PAGE,
) -> Response:
    """The chat's folded turns, one per run, and the ``last_seq`` they are the state at:
    a page of them, as ``GET …/runs`` pages (``before_run``, ``limit``, about
    ``max_page_bytes``; ``has_more``, ``next_before_run``).

    Open a chat from this, then follow ``WebSocket /api/chats/{id}/stream?after_seq=<last_seq>``
    and apply each record's ``changes``. Each run has its ``items`` in the order they
    appeared: the text's segments (``text``), thinking blocks (``thinking``), tool calls
    (``tool_call``, with the card fields in ``view``), error messages (``error``) and, in
    ACP chats, the agent's requests with their answers (``request``; a request's field longer
    than ``max_field_bytes`` is cut as in its record: ``truncated`` lists the cuts, and
    ``GET /api/chats/{id}/events/{seq}/value?field=/payload`` gives the whole request).
    """
    s = _settings(request)
    await _run_of_chat_or_404(request, chat_id, before_run)
    store = _store(request)
    read = functools.partial(
        store.read_chat_turns, chat_id, before_run=before_run, limit=limit, max_bytes=s.max_page_bytes
    )
    page = await read()
    if await backfill_page(store, chat_id, page.runs, s.max_field_bytes):
        page = await read()  # (runs written before the folded state: folded, now shown)
    if page.last_seq < 0:
        raise ApiError(404, "chat_not_found", f"no chat with id {chat_id!r}")
    last, run_rows, text_rows, call_rows = page.last_seq, page.runs, page.texts, page.calls
    items: dict[str, list[dict[str, Any]]] = {str(r["id"]): [] for r in run_rows}
    for row in text_rows:
        items.setdefault(str(row["run_id"]), []).append(text_item(row))
    for row in call_rows:
        # a cut read's range is counted on its whole content, as live: kept in its cut when
        # the row was written; a row stored before reads its records (its two, only those)
        whole = await whole_tool_output(store, row, "content") if read_cut(row) else None
        items.setdefault(str(row["run_id"]), []).append(tool_call_item(row, whole))
    asked = await request_records(_store(request), [str(r["id"]) for r in run_rows])
    limit = _settings(request).max_field_bytes
    for n, pair in enumerate(pair_requests(asked)):  # ACP chats: permissions, questions, plans
        item = {"type": "request", "index": n, **pair}
        cuts: list[dict[str, Any]] = []  # cut as the request's record is (its seq, truncated)
        item["request"] = cut_value(pair["request"], limit, "/payload", cuts)
        if cuts:
            item["truncated"] = cuts
        items.setdefault(str(pair["run_id"]), []).append(item)
    runs = []
    for r in run_rows:
        mine = items.get(str(r["id"]), [])
        mine.sort(key=lambda i: (i["seq"], _ITEM_ORDER.get(i["type"], 3), i["index"]))
        runs.append({"run": run_view(r), "turn": turn_view(r.get("turn")), "items": mine})
    body = {"chat_id": chat_id, "last_seq": last, "has_more": page.has_more,
            "next_before_run": str(run_rows[0]["id"]) if run_rows else None, "runs": runs}
    return Response(orjson.dumps(body), media_type="application/json")


@router.get(
    "/runs/{run_id}/tool-calls/{index}/output",
    tags=["events"],
    responses={200: {"description": "the whole field, as text",
                     "content": {"text/plain": {"schema": {"type": "string"}}}}, **NOT_FOUND},
)
async def tool_call_output(
    run_id: str,
    index: Annotated[int, Path(ge=0, le=2**31 - 1)],  # a 32-bit column (PostgreSQL integer)
    request: Request,
    field: Literal["output", "stdout", "stderr", "diff", "new_content"] = "output",
) -> Response:
    """The whole ``field`` of the run's ``index``-th tool call (the turn's state shows it cut;
    its card's ``cut`` lists which): ``output`` (default), ``stdout``, ``stderr``, ``diff`` or
    ``new_content`` (a write's content)."""
    row = await _store(request).get_tool_call(run_id, index)
    if row is None:
        raise ApiError(404, "tool_call_not_found", f"run {run_id!r} has no tool call {index}")
    output = await whole_tool_output(_store(request), row, field)
    if output is None:
        raise ApiError(404, "tool_call_not_found", "the records of this tool call are not in the log")
    return Response(output.encode("utf-8", "replace"), media_type="text/plain; charset=utf-8")


__all__ = [
    "ChatCreate",
    "ChatOptions",
    "ChatOptionsUpdate",
    "ChatUpdate",
    "PromptIn",
    "chat_view",
    "router",
    "status",
]
