"""A run's fold: its agent events folded once by :class:`~cursor_agent_api.protocol.Transcript`,
stored with the folded turn state **in the same transaction** as the events.

One :class:`RunFold` per run. Live, the client's stream has folded each event already
(``AsyncStreamingResponse.with_changes()``): :meth:`RunFold.take` turns a batch of events
with those changes into a :class:`FoldedBatch` without folding anything again (a batch that
must be written again keeps them); :func:`append_folded` commits the batch's records and the
turn state they change (:func:`.store.write_turn`) in one transaction, then publishes
the records with their changes. Nothing here pairs tool calls or applies the segment rule:
the transcript does, and the store applies its changes.

This is the whole write path of agent events: the server's runs (:mod:`.runs`) and any
other process that writes a run's events into the same store (a worker) use it, and any
process can rebuild a run's fold from its stored records (:meth:`RunFold.from_records`,
the one place the server folds events itself), so the state is a function of the log.

Example:
    >>> from cursor_agent_api.protocol import parse_event
    >>> t = Transcript()
    >>> event = parse_event('{"type":"assistant","text":"Hi","timestamp_ms":1}')
    >>> batch = RunFold("chat", "run").take([(event, t.add(event))])
    >>> [c.kind for c in batch.changes[0]], batch.records[0].type
    (['text_appended'], 'assistant:delta')
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..protocol import AgentEvent, Transcript
from ..protocol.changes import (
    Change,
    ErrorReported,
    ResultReceived,
    TextAppended,
    ThinkingAppended,
    ThinkingClosed,
    ToolCallChanged,
    ToolCallOpened,
    TurnInfo,
)
from ..protocol.tools import ToolCall, ToolStatus
from .models import ACTIVE_STATUSES
from .store import AppendOnce, EventRecord, ExtraWrites, NewRecord, Store, agent_payload

if TYPE_CHECKING:
    from .log import EventLog

Changes = tuple[Change, ...]

FINAL_RUN_STATUSES = frozenset({"succeeded", "failed", "cancelled", "interrupted"})

_RUNNING = ToolStatus.RUNNING


def result_fields(result: dict[str, Any]) -> dict[str, Any]:
    """A turn's ``result``: the result event's fields, without the change's ``kind`` (a
    ``result_received`` change names itself; the turn's result is not a change). Runs
    stored before kept it: this reads them the same.

    Example:
        >>> result_fields({"kind": "result_received", "success": True, "duration_ms": 5})
        {'success': True, 'duration_ms': 5}
    """
    return {k: v for k, v in result.items() if k != "kind"}


def turn_view(turn: dict[str, Any] | None) -> dict[str, Any] | None:
    """A stored ``runs.turn`` as ``GET …/turns`` shows it (its ``result``: :func:`result_fields`).

    Example:
        >>> turn_view({"errors": 0, "result": {"kind": "result_received", "success": False}})
        {'errors': 0, 'result': {'success': False}}
    """
    if turn is None or not isinstance(turn.get("result"), dict):
        return turn
    return {**turn, "result": result_fields(turn["result"])}


@dataclass(slots=True)
class FoldedBatch:
    """A batch of one run's agent events, folded: the records to store and each one's changes.

    ``error_base`` is how many error messages the turn had before the batch (the index of
    the batch's first :class:`ErrorReported`); ``turn`` the turn's fields after it.
    """

    chat_id: str
    run_id: str
    records: list[NewRecord]
    changes: list[Changes]
    error_base: int
    turn: dict[str, Any]


@dataclass(eq=False)
class RunFold:
    """The fold of one run, as the server keeps it: what the changes of its stored events say.

    The changes come from the client's stream (:meth:`take`: each live event was folded
    once, by the stream) or, for a run's stored records, from a :class:`Transcript` of the
    fold's own (:meth:`add_record`, :meth:`from_records`). The fold applies them: the turn's
    fields (:meth:`turn`), and what is still open (the calls running, the thinking block),
    which :meth:`close` ends as :meth:`Transcript.close` does. It is a function of the
    stored events only: the client may have folded events that were never stored (a
    cancelled run's last ones).

    Example:
        >>> from cursor_agent_api.protocol import parse_event
        >>> f = RunFold("c", "r")
        >>> e = parse_event('{"type":"tool_call","subtype":"started","call_id":"x",'
        ...                 '"tool_call":{"lsToolCall":{"args":{"path":"."}}}}')
        >>> b = f.take([(e, Transcript().add(e))])
        >>> [(c.kind, c.call.status.value) for c in f.close()]
        [('tool_call_changed', 'abandoned')]
    """

    chat_id: str
    run_id: str
    session_id: str | None = None
    request_id: str | None = None
    model: str | None = None
    cwd: str | None = None
    errors: int = 0
    result: dict[str, Any] | None = None
    last_seq: int = 0
    """The seq of the last record folded, when known (records read back from the store)."""
    _running: dict[int, ToolCall] = field(default_factory=dict, repr=False)
    """The calls still running, by index: their latest snapshot."""
    _thinking: int | None = None
    """The thinking block still open, if any."""
    _transcript: Transcript | None = field(default=None, repr=False)
    """Only for stored records (:meth:`add_record`): what folds them."""

    def _note(self, changes: Changes) -> None:
        for c in changes:
            if c.__class__ is TextAppended:  # the most frequent: nothing to note
                continue
            if isinstance(c, ThinkingAppended):
                self._thinking = c.block
            elif isinstance(c, ThinkingClosed):
                self._thinking = None
            elif isinstance(c, (ToolCallOpened, ToolCallChanged)):
                if c.call.status is _RUNNING:
                    self._running[c.index] = c.call
                else:
                    self._running.pop(c.index, None)
            elif isinstance(c, TurnInfo):
                self.session_id, self.request_id, self.model, self.cwd = (
                    c.session_id, c.request_id, c.model, c.cwd)
            elif isinstance(c, ErrorReported):
                self.errors += 1
            elif isinstance(c, ResultReceived):
                self.result = result_fields(c.to_dict())

    def turn(self) -> dict[str, Any]:
        """What is known of the turn (``runs.turn``): the session, model, cwd, request, the
        result event's fields (:func:`result_fields`), how many error messages (``errors``:
        a count; the messages are the turn's ``error`` items).

        Example:
            >>> RunFold("c", "r").turn()["result"] is None
            True
        """
        return {
            "session_id": self.session_id,
            "request_id": self.request_id,
            "model": self.model,
            "cwd": self.cwd,
            "result": self.result,
            "errors": self.errors,
        }

    def take(self, folded: Iterable[tuple[AgentEvent, Changes]]) -> FoldedBatch:
        """The records to store of a batch of events and the changes the stream's fold
        returned with each (``with_changes()``): nothing is folded again."""
        records: list[NewRecord] = []
        changes: list[Changes] = []
        base = self.errors
        run_id = self.run_id
        note = self._note
        record = records.append
        change = changes.append
        for e, c in folded:
            # once per agent event: most are a delta's one TextAppended, which notes nothing
            if c and (len(c) > 1 or c[0].__class__ is not TextAppended):
                note(c)
            change(c)
            payload = agent_payload(e)
            line = e.line
            record(
                NewRecord("agent", payload["type"], e.subtype, payload,
                          line if line is not None else e.raw, run_id)
            )
        return FoldedBatch(self.chat_id, run_id, records, changes, base, self.turn())

    def close(self) -> Changes:
        """The run is over: the thinking block left open is closed and the calls still
        running are abandoned (as :meth:`Transcript.close` does); what that changed. Once:
        a second call changes nothing."""
        out: list[Change] = []
        if self._thinking is not None:
            out.append(ThinkingClosed(self._thinking))
            self._thinking = None
        for index in sorted(self._running):
            call = self._running[index].copy()
            call.status = ToolStatus.ABANDONED
            out.append(ToolCallChanged(index, call))
        self._running.clear()
        return tuple(out)

    def add_record(self, rec: EventRecord) -> Changes:
        """Fold one stored record (an agent event of this run; anything else changes nothing)."""
        self.last_seq = rec.seq
        if rec.source != "agent":
            return ()
        t = self._transcript
        if t is None:
            t = self._transcript = Transcript(keep_events=False, keep_content=False)
        c = t.add(AgentEvent.from_dict(rec.payload))
        if c:
            self._note(c)
        return c

    @classmethod
    def from_records(cls, chat_id: str, run_id: str, records: Iterable[EventRecord]) -> RunFold:
        """The fold of a run rebuilt from its stored records, in seq order.

        Example:
            >>> from cursor_agent_api.protocol import parse_event
            >>> init = parse_event('{"type":"system","subtype":"init","session_id":"s","model":"m"}')
            >>> rec = EventRecord(3, "c", "r", 0, "agent", "system", "init", agent_payload(init), None)
            >>> fold = RunFold.from_records("c", "r", [rec])
            >>> fold.turn()["model"], fold.last_seq
            ('m', 3)
        """
        fold = cls(chat_id, run_id)
        for rec in records:
            fold.add_record(rec)
        return fold


FOLD_PAGE_BYTES = 1024 * 1024
"""About how many bytes of a run's records :func:`load_run_fold` holds at a time."""

_WHOLE = 2**31 - 2
"""A field limit no stored value reaches (PostgreSQL's fields stop at 1 GB): read whole."""


async def load_run_fold(store: Store, chat_id: str, run_id: str, before_seq: int | None = None) -> RunFold:
    """The fold of a run rebuilt from its records in the store (those before ``before_seq``
    when given), read whole in pages of about :data:`FOLD_PAGE_BYTES` (at least one record),
    each record let go once folded: the memory it takes is a page's, whatever the run's size
    (a WebSocket that resumes at the end of a big run rebuilds it). What any process needs
    to write the run's next events or to know what a later record changed."""
    fold = RunFold(chat_id, run_id)
    after = 0
    while True:
        recs, more = await store.read_page(
            chat_id, after, 1000, max_bytes=FOLD_PAGE_BYTES, max_field_bytes=_WHOLE, run_id=run_id
        )
        recs.reverse()
        while recs:
            rec = recs.pop()  # not kept once folded
            if before_seq is not None and rec.seq >= before_seq:
                return fold
            fold.add_record(rec)
            after = rec.seq
            del rec
        if not more:
            return fold


def changes_json(changes: Changes, rec: EventRecord, max_field_bytes: int) -> list[dict[str, Any]]:
    """The JSON form of a record's changes, as the WebSocket sends them: each change's
    ``to_dict()``, a tool call's also with ``view`` (the card fields), strings over
    ``max_field_bytes`` cut (:func:`cut_change`).

    Example:
        >>> from cursor_agent_api.protocol.changes import TextAppended
        >>> rec = EventRecord(4, "c", "r", 0, "agent", "assistant", None, {}, None)
        >>> changes_json((TextAppended(0, "hi"),), rec, 100)
        [{'kind': 'text_appended', 'segment': 0, 'text': 'hi'}]
    """
    from .webui import view_of

    out: list[dict[str, Any]] = []
    for c in changes:
        d = c.to_dict()
        if d["kind"] in TOOL_CHANGES:
            d["view"] = view_of(c.call)  # type: ignore[union-attr]
        out.append(cut_change(d, max_field_bytes, rec.seq))
    return out


TOOL_CHANGES = ("tool_call_opened", "tool_call_changed")
"""The kinds of change that carry a tool call (``call``, ``view``)."""


def cut_change(d: dict[str, Any], limit: int, seq: int,
               taken: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """One change's JSON (:func:`changes_json`) with its strings over ``limit`` bytes cut
    (a copy; ``d`` when nothing was): a tool call's ``call`` and ``view`` (the view lists a
    cut text field in ``cut``, as the page reads it; a list's item cut, ``output``: the whole
    list), a text (with ``bytes``, its whole size, and ``seq``, the record whose
    ``/payload/text`` is the whole text), an error's message. Cut again with a smaller limit
    (a WebSocket message over its bound, :mod:`.log`), a change keeps the whole size its first
    cut noted. ``taken``, if given, gets each cut as ``cut_value`` notes it (the size of the
    string as it was in ``d``).

    Example:
        >>> cut_change({"kind": "segment_replaced", "segment": 0, "text": "abcdef"}, 4, 9)
        {'kind': 'segment_replaced', 'segment': 0, 'text': 'abcd', 'bytes': 6, 'seq': 9}
        >>> v = {"stdout": "x" * 8, "cut": []}
        >>> cut_change({"kind": "tool_call_changed", "call": {}, "view": v}, 4, 9)["view"]
        {'stdout': 'xxxx', 'cut': ['stdout']}
    """
    from .store import cut_value, utf8_prefix, utf8_size
    from .webui import WHOLE_FIELDS

    noted: list[dict[str, Any]] = [] if taken is None else taken
    kind = d["kind"]
    if kind in TOOL_CHANGES:
        cuts: list[dict[str, Any]] = []
        call = cut_value(d.get("call"), limit, "/call", noted)  # (a message over its bound: none)
        view = cut_value(d["view"], limit, "", cuts)
        noted.extend(cuts)
        if call is d.get("call") and view is d["view"]:
            return d
        if cuts:
            named = [c["field"].split("/")[1] for c in cuts]
            named = ["output" if f in ("matches", "files", "references", "todos") else f for f in named]
            view["cut"] = [*view["cut"], *dict.fromkeys(
                f for f in named if f in WHOLE_FIELDS and f not in view["cut"])]
        return {**d, "call": call, "view": view} if "call" in d else {**d, "view": view}
    if "text" in d and len(d["text"]) * 4 > limit:
        size = utf8_size(d["text"])
        if size > limit:
            noted.append({"field": "/text", "bytes": size})
            return {**d, "text": utf8_prefix(d["text"], limit), "bytes": d.get("bytes", size),
                    "seq": d.get("seq", seq)}
    elif kind == "error_reported":
        message = cut_value(d["message"], limit, "/message", noted)
        if message is not d["message"]:
            return {**d, "message": message}
    return d


async def append_folded(
    log: EventLog,
    batch: FoldedBatch,
    *,
    after: ExtraWrites | None = None,
    once: AppendOnce | None = None,
) -> Sequence[EventRecord]:
    """Commit a folded batch: its records, the turn state they change and ``after``'s writes,
    in one transaction; then publish the records with their changes. Safe to call again
    with the same batch when it failed, with the same ``once`` (:class:`.store.AppendOnce`:
    a batch whose commit went through although it failed is not written twice). Only while
    the batch's run is active: else nothing is written (:class:`.store.RunEndedError`)."""
    from .store import turn_writes

    store = log.store
    limit = log.max_field_bytes
    return await log.append(
        batch.chat_id,
        batch.records,
        after=after,
        writes=lambda recs: turn_writes(store, batch, recs, limit),
        changes=batch.changes,
        once=once,
        active_run=batch.run_id,
    )


async def backfill_page(
    store: Store, chat_id: str, run_rows: list[dict[str, Any]], max_field_bytes: int
) -> int:
    """Fold the runs of a page (``run_rows``, as read with their ``turn``) that finished
    without a stored turn state (written before the state existed: ``runs.turn`` NULL) from
    their records, and store it; the chat's other runs are not read (a page of a long chat
    costs what the page holds). Returns how many it folded: the page, read again, then shows
    them."""
    count = 0
    for row in run_rows:
        if row.get("turn") is None and row.get("status") not in ACTIVE_STATUSES:
            count += await refold_run(store, chat_id, str(row["id"]), max_field_bytes)
    return count


async def refold_run(store: Store, chat_id: str, run_id: str, max_field_bytes: int) -> bool:
    """Fold a run without stored turn state (``runs.turn`` NULL: written before the state
    existed) from all its records, and store the whole state (:func:`.store.replace_turn`).
    False when it had the state by then (another request or process stored it)."""
    from .store import replace_turn

    fold = RunFold(chat_id, run_id)
    recs: list[EventRecord] = []
    changes: list[Changes] = []
    after = 0
    while True:
        page = await store.events_after(chat_id, after, 1000, run_id=run_id)
        for rec in page:
            changes.append(fold.close() if is_final_run_record(rec) else fold.add_record(rec))
            rec.payload = {}  # the state needs the seqs and times only, not the events
            recs.append(rec)
        if len(page) < 1000:
            break
        after = page[-1].seq
    batch = FoldedBatch(chat_id, run_id, [], changes, 0, fold.turn())
    return await replace_turn(store, batch, recs, max_field_bytes)


class Refolder:
    """What each record of a chat replayed from the store changed in its run's turn: the
    fold of each run met, rebuilt from the store at the first record seen of it
    (:func:`load_run_fold`), then advanced record by record (the WebSocket's replay).
    """

    def __init__(self, store: Store, chat_id: str, max_field_bytes: int) -> None:
        self.store = store
        self.chat_id = chat_id
        self.limit = max_field_bytes
        self.folds: dict[str, RunFold] = {}

    async def changes(self, rec: EventRecord) -> list[dict[str, Any]] | None:
        """The JSON changes of ``rec`` (records come in seq order); ``None`` when none."""
        run_id = rec.run_id
        final = is_final_run_record(rec)
        if run_id is None or not (rec.source == "agent" or final):
            return None
        fold = self.folds.get(run_id)
        if fold is None:
            fold = await load_run_fold(self.store, self.chat_id, run_id, before_seq=rec.seq)
            self.folds[run_id] = fold
        if final:
            changes = fold.close()
            del self.folds[run_id]
        elif rec.truncated:
            # read cut for the page: folded whole, as live (only the changes are cut)
            whole = await self.store.get_event(self.chat_id, rec.seq)
            changes = fold.add_record(whole if whole is not None else rec)
            del whole
        else:
            changes = fold.add_record(rec)
        return changes_json(changes, rec, self.limit) if changes else None


async def whole_tool_output(store: Store, row: dict[str, Any], which: str = "output") -> str | None:
    """The whole field ``which`` of a stored tool call (the table keeps it cut): its records read
    whole and folded. ``which`` is one of :data:`.webui.WHOLE_FIELDS` (``output``, ``stdout``,
    ``stderr``, ``diff``, ``new_content``; one the call has not is ``""``), or a read's
    ``content`` (its range is counted on it: ``webui.read_cut``). ``None`` when its records
    are gone."""
    transcript = Transcript(keep_events=False)
    found = False
    for seq in (row.get("started_seq"), row.get("completed_seq")):
        if seq is None:
            continue
        rec = await store.get_event(str(row["chat_id"]), int(seq))
        if rec is None or rec.source != "agent":
            continue
        found = True
        transcript.add(AgentEvent.from_dict(rec.payload))
    if not found or not transcript.tool_calls:
        return None
    value = getattr(transcript.tool_calls[-1], which)
    return value if isinstance(value, str) else ""


def is_final_run_record(rec: EventRecord) -> bool:
    """Whether ``rec`` records the end of a run (after it, the run's fold is closed).

    Example:
        >>> is_final_run_record(EventRecord(1, "c", "r", 0, "server", "run", "failed", {}, None))
        True
    """
    return rec.source == "server" and rec.type == "run" and rec.subtype in FINAL_RUN_STATUSES


__all__ = [
    "TOOL_CHANGES",
    "FoldedBatch",
    "Refolder",
    "RunFold",
    "append_folded",
    "changes_json",
    "cut_change",
    "is_final_run_record",
    "load_run_fold",
    "result_fields",
    "turn_view",
    "whole_tool_output",
]
