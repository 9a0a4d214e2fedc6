"""The database schema (SQLAlchemy Core tables): chats, runs, events, tool calls.

Times are integer milliseconds since the epoch (``*_ms``): portable between
SQLite and PostgreSQL and ready for JavaScript's ``Date``. The schema is
created and changed only by the Alembic migrations in ``migrations/``;
these tables are what the code reads and writes through.

* ``chats.last_seq`` is the per-chat event counter. :mod:`.store` bumps it and
  inserts the events in one transaction, so ``events.seq`` is strictly
  increasing with no gaps; the key ``(chat_key, seq)`` guards it. ``events`` names its
  chat and run by their integer ``num`` (the public ids are 36-character strings: twice per
  row and in each index they were most of the log's size).
* ``auth_sessions`` holds the browser sessions (:mod:`.auth`): ``sha256(id)``, the scrypt
  fingerprint of the token they were made with, and the times of the sliding expiry.
* A run's **folded turn** (:mod:`.turns`) is written with its events, in the same
  transaction: ``turn_texts`` (the text's segments, the thinking blocks and the error
  messages, by kind and index), ``tool_calls`` (by index in the turn: an id may repeat)
  and ``runs.turn`` (what is known of the turn: session, model, the result event).
* ``runs`` has a partial unique index on ``chat_id`` where the status is
  ``queued`` or ``running``: at most one active run per chat, even with
  several server processes on one PostgreSQL database.

Example:
    >>> sorted(metadata.tables)
    ['auth_sessions', 'chats', 'events', 'runs', 'tool_calls', 'turn_texts']
"""

from __future__ import annotations

import enum

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    func,
    literal_column,
    text,
)

metadata = MetaData()

_BigId = BigInteger().with_variant(Integer, "sqlite")


class RunStatus(str, enum.Enum):
    """Where a run stands. ``queued`` and ``running`` are active; the rest are final.

    Example:
        >>> RunStatus.CANCELLED.final, RunStatus.QUEUED.final
        (True, False)
    """

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"

    @property
    def final(self) -> bool:
        """True once the run can no longer change."""
        return self not in (RunStatus.QUEUED, RunStatus.RUNNING)


ACTIVE_STATUSES = (RunStatus.QUEUED.value, RunStatus.RUNNING.value)
ACTIVE_RUN = text("status IN ('queued', 'running')")
"""A run is active (``ACTIVE_STATUSES``), as SQL: the predicate of the partial index
``uq_runs_one_active_per_chat``. A query of a chat's active run that says it so (not with
bound values) is answered from that index: one row at most, whatever the chat's length."""

chats = Table(
    "chats",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("session_id", String(200), nullable=True),
    Column("workspace", Text, nullable=False),
    Column("model", String(200), nullable=True),
    Column("options", JSON, nullable=False),
    Column("title", Text, nullable=False),
    Column("created_ms", BigInteger, nullable=False),
    Column("updated_ms", BigInteger, nullable=False),
    Column("last_seq", BigInteger, nullable=False, server_default=text("0")),
    # the chat's integer key in ``events`` (its id is a 36-character string; see ``events``)
    Column("num", BigInteger, nullable=True),
    Index("uq_chats_num", "num", unique=True),
    # the chats most recently active first, a page at a time (GET /api/chats; migration 0010)
    Index("ix_chats_recent", "updated_ms", "id"),
)

runs = Table(
    "runs",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("chat_id", String(36), ForeignKey("chats.id"), nullable=False),
    Column("prompt", Text, nullable=False),
    Column("status", String(16), nullable=False),
    Column("pid", Integer, nullable=True),
    Column("pgid", Integer, nullable=True),
    Column("proc_start", BigInteger, nullable=True),
    Column("server_id", String(300), nullable=True),
    Column("exit_code", Integer, nullable=True),
    Column("error", Text, nullable=True),
    Column("error_type", String(100), nullable=True),
    Column("result", Text, nullable=True),
    Column("usage", JSON, nullable=True),
    Column("session_id", String(200), nullable=True),
    Column("first_seq", BigInteger, nullable=True),
    Column("last_seq", BigInteger, nullable=True),
    Column("created_ms", BigInteger, nullable=False),
    Column("started_ms", BigInteger, nullable=True),
    Column("ended_ms", BigInteger, nullable=True),
    Column("turn", JSON, nullable=True),
    # distributed mode (server/dispatch): the run's job and queue, the worker that ran it
    Column("job_id", BigInteger, nullable=True),
    Column("queue", String(200), nullable=True),
    Column("worker", String(200), nullable=True),
    Column("worker_id", BigInteger, nullable=True),
    # the run's integer key in ``events``
    Column("num", BigInteger, nullable=True),
    Index("uq_runs_num", "num", unique=True),
    Index(
        "uq_runs_one_active_per_chat",
        "chat_id",
        unique=True,
        sqlite_where=ACTIVE_RUN,
        postgresql_where=ACTIVE_RUN,
    ),
    Index("ix_runs_status", "status"),
    # a chat's runs in their order (store/run_order.py: every page of runs; migration 0007)
    Index("ix_runs_chat_order", "chat_id", "created_ms", "id"),
)

events = Table(
    "events",
    metadata,
    Column("chat_key", BigInteger, ForeignKey("chats.num"), nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("run_key", BigInteger, ForeignKey("runs.num"), nullable=True),
    Column("ts_ms", BigInteger, nullable=False),
    Column("source", String(16), nullable=True),
    Column("type", String(64), nullable=True),
    Column("subtype", String(64), nullable=True),
    Column("payload", JSON(none_as_null=True), nullable=True),
    Column("raw", LargeBinary, nullable=True),
    PrimaryKeyConstraint("chat_key", "seq", name="pk_events"),
    Index(
        "ix_events_server_runs",
        "chat_key",
        "run_key",
        sqlite_where=text("source = 'server'"),
        postgresql_where=text("source = 'server'"),
    ),
    sqlite_with_rowid=False,
)
"""The per-chat log, keyed by ``(chat_key, seq)``: ``chats.num`` and ``runs.num``, not the
36-character ids (which :mod:`.store` maps to and from); on SQLite a ``WITHOUT ROWID``
table, the rows themselves in key order (migration 0006). An agent event is stored as its
line, as it came (``raw``, bytes), with ``payload`` NULL when the line is exactly its
data's JSON (what the CLI writes); its ``source``, ``type`` and ``subtype`` are then NULL
too, as no query needs them (the protocol classifies the line again when it is read).
Otherwise ``payload`` holds ``{"type", "data"}`` and ``raw`` the line. A server record has
its ``payload``. The one other index covers the server's records (a few per run:
requests, answers, life-cycle) by run."""

tool_calls = Table(
    "tool_calls",
    metadata,
    Column("id", _BigId, primary_key=True, autoincrement=True),
    Column("chat_id", String(36), ForeignKey("chats.id"), nullable=False),
    Column("run_id", String(36), ForeignKey("runs.id"), nullable=False),
    Column("call_id", Text, nullable=False),
    Column("kind", String(32), nullable=False),
    Column("name", String(200), nullable=False),
    Column("status", String(16), nullable=False),
    Column("args", JSON, nullable=False),
    Column("result", JSON, nullable=True),
    Column("output", Text, nullable=False),
    Column("description", Text, nullable=True),
    Column("exit_code", Integer, nullable=True),
    Column("started_ms", BigInteger, nullable=True),
    Column("completed_ms", BigInteger, nullable=True),
    Column("duration_ms", BigInteger, nullable=True),
    Column("started_seq", BigInteger, nullable=True),
    Column("completed_seq", BigInteger, nullable=True),
    Column("idx", Integer, nullable=False),
    # What the server cut of args/result/output ({"field", "bytes"} each; NULL: written
    # before migration 0009, which kept it under the result's "_cut": webui.stored_cuts)
    Column("cuts", JSON, nullable=True),
    UniqueConstraint("run_id", "idx", name="uq_tool_calls_run_idx"),
)

CALL_PLACE = func.coalesce(tool_calls.c.started_seq, tool_calls.c.completed_seq, literal_column("0"))
"""A tool call's place in its chat: the seq of the record that first stored it (the one that
opened it, or completed it when its start was not seen; both are kept once set), so a
call's place never changes and a new call's is past every stored one. A chat's calls are
listed in this order, then by their index in the turn (``GET …/tool-calls``), read from
``ix_tool_calls_chat_order`` (migration 0008). (0: a call stored with neither, which the
server does not write: listed first.)"""

Index("ix_tool_calls_chat_order", tool_calls.c.chat_id, CALL_PLACE, tool_calls.c.idx)

turn_texts = Table(
    "turn_texts",
    metadata,
    Column("id", _BigId, primary_key=True, autoincrement=True),
    Column("chat_id", String(36), ForeignKey("chats.id"), nullable=False, index=True),
    Column("run_id", String(36), ForeignKey("runs.id"), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("idx", Integer, nullable=False),
    Column("text", Text, nullable=False),
    Column("closed", Boolean, nullable=False),
    Column("opened_seq", BigInteger, nullable=False),
    Column("bytes", BigInteger, nullable=True),
    Column("whole_seq", BigInteger, nullable=True),
    UniqueConstraint("run_id", "kind", "idx", name="uq_turn_texts_run_kind_idx"),
)

auth_sessions = Table(
    "auth_sessions",
    metadata,
    Column("id_hash", String(64), primary_key=True),
    Column("token_fp", String(128), nullable=False),
    Column("created_ms", BigInteger, nullable=False),
    Column("last_used_ms", BigInteger, nullable=False),
)
