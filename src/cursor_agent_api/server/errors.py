"""The API's error answers: one body for every error status, each with a stable ``code``.

Every HTTP error answer is an :class:`ErrorBody`, ``{"detail", "code", ...}``: ``detail``
says what happened and what to do (for people: its words may change), ``code`` names the
case (for programs: stable, snake_case, listed in :data:`CODES` and in the tables of
``docs/server.md`` and ``docs/websocket.md``). A 422 also has ``errors`` (the problems by
field); the data a case carries is in a field of its own (``run_id`` of
``submit_uncertain``). A WebSocket ``error`` message carries the same ``code``.

A route raises :class:`ApiError` for a case of its own; a plain ``HTTPException`` gets
its status's generic code (:func:`code_for`).

Example:
    >>> error_body(ApiError(409, "chat_busy", "this chat already has a run"))
    {'detail': 'this chat already has a run', 'code': 'chat_busy'}
    >>> error_body(ApiError(503, "submit_uncertain", "it may have been stored", run_id="r1"))["run_id"]
    'r1'
    >>> from starlette.exceptions import HTTPException
    >>> error_body(HTTPException(404, "Not Found"))
    {'detail': 'Not Found', 'code': 'not_found'}
    >>> error_body(ApiError(422, "nothing_to_change", "give a title"))["errors"]
    [{'loc': ['body'], 'msg': 'give a title', 'type': 'nothing_to_change'}]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException

CODES: dict[str, tuple[int, str]] = {
    # 400
    "invalid_json": (400, "the body is not valid JSON"),
    "invalid_content_length": (400, "the Content-Length header is not a number"),
    "invalid_workspace": (400, "the workspace is missing, not a directory or not a usable path"),
    "invalid_prompt": (400, "the prompt holds a NUL character"),
    "after_seq_beyond_last": (400, "GET …/events and …/tool-calls: after_seq is past the chat's last seq (in "
                                   "last_seq): the records you have are not this database's "
                                   "(say, from before a power loss): start again from 0"),
    # 401, 403
    "unauthorized": (401, "no token or session cookie, or a wrong one: send "
                          "'Authorization: token T' or sign in"),
    "invalid_token": (401, "POST /api/auth/login: the token is wrong"),
    "token_required": (403, "POST /api/auth/codes needs the token itself, not a session cookie"),
    "host_not_allowed": (403, "the Host header names a host the server does not answer for "
                              "(DNS rebinding); see --allow-host"),
    "origin_not_allowed": (403, "a foreign Origin (another site's page) on a state-changing "
                                "request or a WebSocket"),
    "cross_site_sign_in": (403, "a sign-in link (?token=, ?code=) opened by another site's page: "
                                "open it directly; not counted against the throttle"),
    "workspace_not_allowed": (403, "the workspace is outside the allowed roots (or none are "
                                   "configured)"),
    # 404, 405
    "not_found": (404, "no such path"),
    "chat_not_found": (404, "no chat with this id (or it was deleted)"),
    "run_not_found": (404, "no run with this id, or not a run of this chat"),
    "request_not_found": (404, "the run has no request with this id"),
    "record_not_found": (404, "the chat has no record with this seq, or it has no such field"),
    "tool_call_not_found": (404, "the run has no tool call with this index, or its records "
                                 "are not in the log"),
    "method_not_allowed": (405, "the path does not take this method"),
    # 408, 409
    "request_timeout": (408, "the request's headers did not arrive within 10 s (serve closes the "
                             "connection; a body that stops arriving for 60 s is cut without an answer)"),
    "conflict": (409, "the request conflicts with the state of what it names"),
    "chat_busy": (409, "the chat has a queued or running run: wait for it or cancel it"),
    "options_locked": (409, "a chat's options cannot change while it has a queued or running run"),
    "delete_refused": (409, "a chat cannot be deleted while a run of it is queued or running "
                            "(or its job is not over)"),
    "run_over": (409, "the run is already over (its status is in detail and in status)"),
    "run_elsewhere": (409, "the run is run by another server process of this database"),
    "already_answered": (409, "the request was answered already (by a person, the timeout, "
                              "a cancel or a restart)"),
    # 413
    "body_too_large": (413, "the body is over max_body_bytes"),
    "prompt_too_large": (413, "the prompt is over max_prompt_bytes, or its request's body (the "
                              "prompt and nothing else) over max_body_bytes"),
    # 422
    "invalid_request": (422, "the request does not fit the API (errors lists the problems)"),
    "body_not_json": (422, "the body was not sent as JSON: send it with "
                           "Content-Type: application/json"),
    "empty_prompt": (422, "the prompt is empty or only whitespace: type a prompt"),
    "nothing_to_change": (422, "PATCH without a title or options"),
    "invalid_cursor": (422, "GET /api/chats: before is not the next_before of a page"),
    "invalid_options": (422, "options that name no option, or a value that is not allowed"),
    "mode_needs_acp": (422, "a session mode other than 'agent' needs transport 'acp'"),
    "answer_mismatch": (422, "the answer does not fit the request it answers"),
    # 429
    "throttled": (429, "too many wrong tokens: wait Retry-After seconds"),
    # 500
    "database_error": (500, "the database refused the request (not a transient failure)"),
    # 503
    "database_unavailable": (503, "the database is unavailable; nothing was changed: retry "
                                  "after Retry-After seconds"),
    "submit_uncertain": (503, "the database failed while the prompt was stored: it may have "
                              "been stored as run run_id, which is then marked failed and not "
                              "run; post the prompt again"),
    "too_many_connections": (503, "serve holds as many connections as it accepts (1000, or half "
                                  "the open-file limit): closed at once; retry shortly"),
    "server_closing": (503, "the server is shutting down: nothing was changed"),
    "answer_not_taken": (503, "queue mode: the run's worker did not take the answer in time; "
                              "the request stays open: retry"),
}
"""Every ``code`` of an HTTP error answer: its status and what it means."""

STATUS_CODES: dict[int, str] = {
    400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
    405: "method_not_allowed", 409: "conflict", 413: "body_too_large", 422: "invalid_request",
    429: "throttled", 500: "internal_error", 503: "unavailable",
}
"""The code of an error raised without one of its own (by status)."""

CODES.update({code: (status, "an error of this status without a more specific code")
              for status, code in STATUS_CODES.items() if code not in CODES})


def code_for(status: int) -> str:
    """The generic code of ``status``.

    Example:
        >>> code_for(409), code_for(418)
        ('conflict', 'error')
    """
    return STATUS_CODES.get(status, "error")


class ApiError(HTTPException):
    """An HTTP error answer with its ``code`` and the data it carries (``fields``).

    A 422's ``loc`` names the field at fault (its ``errors`` entry).

    Example:
        >>> e = ApiError(404, "chat_not_found", "no chat with id 'x'")
        >>> e.status_code, e.code
        (404, 'chat_not_found')
    """

    def __init__(self, status: int, code: str, detail: str, *,
                 headers: Mapping[str, str] | None = None, loc: tuple[str | int, ...] = ("body",),
                 **fields: Any) -> None:
        super().__init__(status, detail, headers=dict(headers) if headers else None)
        self.code = code
        self.loc = loc
        self.fields = fields


def error_body(exc: HTTPException) -> dict[str, Any]:
    """The JSON body answering ``exc`` (see the module's examples)."""
    code = exc.code if isinstance(exc, ApiError) else code_for(exc.status_code)
    body: dict[str, Any] = {"detail": str(exc.detail), "code": code}
    if isinstance(exc, ApiError):
        body.update(exc.fields)
    if exc.status_code == 422 and "errors" not in body:
        loc = list(exc.loc) if isinstance(exc, ApiError) else ["body"]
        body["errors"] = [{"loc": loc, "msg": str(exc.detail), "type": code}]
    return body


class FieldError(BaseModel):
    """One problem of a 422: where (``loc``: ``body``/``query``/``path``, then the field's
    path), what (``msg``), and its kind (``type``, pydantic's)."""

    loc: list[str | int]
    msg: str
    type: str


class ErrorBody(BaseModel):
    """Every error answer of the API (any 4xx or 5xx status)."""

    model_config = ConfigDict(extra="allow")

    detail: str = Field(description="what happened and what to do, for people (wording may change)")
    code: str = Field(
        pattern=r"^[a-z][a-z0-9_]*$",
        description="the case, for programs (stable): see docs/server.md, 'Error codes'",
    )
    run_id: str = Field(default="", description="submit_uncertain only: the run it may be stored as")
    last_seq: int = Field(default=0, description="after_seq_beyond_last only: the chat's last seq")


class ValidationErrorBody(ErrorBody):
    """A 422: an :class:`ErrorBody` that lists the problems by field."""

    errors: list[FieldError] = Field(description="the problems by field (at most 5)")


def _description(status: int) -> str:
    codes = [f"`{c}`" for c, (s, _) in CODES.items() if s == status]
    return "codes: " + ", ".join(codes)


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for the error ``statuses`` of a route: an :class:`ErrorBody`
    each, described by the codes of that status.

    Example:
        >>> error_responses(404)[404]["description"].startswith("codes: `not_found`")
        True
    """
    return {s: {"model": ValidationErrorBody if s == 422 else ErrorBody, "description": _description(s)}
            for s in statuses}


__all__ = [
    "CODES", "ApiError", "ErrorBody", "FieldError", "ValidationErrorBody", "code_for", "error_body",
    "error_responses",
]
