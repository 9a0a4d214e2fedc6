"""How ``run`` and ``chat`` show a turn: live on a terminal, plain text, JSON or NDJSON.

Every view takes the events as they arrive (:meth:`TurnView.handle`) and the
result at the end (:meth:`TurnView.finish`):

* :class:`LiveView` — a terminal: a spinner with elapsed time, the latest thinking
  line dimmed and replaced as it goes, the text streaming in (its last rows, redrawn ten
  times a second by rich's thread, and at once for an event after a quiet tenth of a second:
  a long line shows its end, after ``…``), one line per tool call
  that turns from running to its outcome (✓ ✗ ⊘, duration, command/path/pattern, exit
  code), the final answer rendered as Markdown (a link shown as ``text (url)``, an image as
  ``🌆 alt (url)``: never a terminal hyperlink that hides its target), a footer with
  tokens, duration, the chat id and the command to continue;
* :class:`TextView` — a pipe: the same content as plain lines, no escape codes (the
  renderer ``replay`` uses);
* :class:`JsonView` — one final ``AgentResult`` object;
* :class:`NdjsonView` — the normalized events, one JSON object per line, as they arrive.

Example:
    >>> from io import StringIO
    >>> from rich.console import Console
    >>> from cursor_agent_api.protocol import parse_event, AgentResult, Transcript
    >>> out = StringIO()
    >>> view, fold = TextView(Console(file=out)), Transcript()
    >>> event = parse_event('{"type":"assistant","message":{"content":"4"}}')
    >>> view.handle(event, fold.add(event))
    >>> view.finish(AgentResult(success=True, result="4", session_id="c1"), continue_hint="")
    >>> "4" in out.getvalue()
    True
"""

from __future__ import annotations

import sys
import time
from typing import Any, Protocol

import orjson
from rich.console import Console, Group, RenderableType
from rich.text import Text

from ..config import is_chat_id
from ..errors import CursorAgentError
from ..protocol import (
    AgentEvent,
    AgentResult,
    Changes,
    EventType,
    ResultReceived,
    SegmentClosed,
    SegmentReplaced,
    TextAppended,
    ThinkingAppended,
    ToolCall,
    ToolCallChanged,
    ToolCallOpened,
)
from .console import error_text, error_text_named, is_terminal
from .render import (
    TurnRenderer,
    error_text_of,
    inert_json,
    json_line,
    printable,
    raw_line_text,
    tool_line,
    usage_line,
)


class TurnView(Protocol):
    """What ``run`` and ``chat`` feed: each event with what it changed in the turn's one
    fold (the stream's :class:`~cursor_agent_api.protocol.Transcript`), then the result."""

    def handle(self, event: AgentEvent, changes: Changes) -> None:
        """Show one event."""

    def finish(self, result: AgentResult, *, continue_hint: str) -> None:
        """Show the end of the turn."""


def is_turn_failure(event: AgentEvent) -> bool:
    """True for the ``ERROR`` event the client adds when a turn fails (the typed error's
    message): the footer prints that error, so the views do not print the event too.

    Example:
        >>> from cursor_agent_api.protocol import error_event
        >>> is_turn_failure(error_event("exit 1", code="exit", error_type="AgentProcessError"))
        True
        >>> is_turn_failure(error_event("a line was too long", size=9))
        False
    """
    return event.type is EventType.ERROR and event.line is None and "error_type" in event.data


def footer_lines(result: AgentResult, continue_hint: str, *, simulated: bool = False
                 ) -> list[Text]:
    """The footer: outcome with tokens and duration, chat id, how to continue.

    Example:
        >>> chat = "8b72ae6d-ab42-4854-991e-6ecf580e66c2"
        >>> [t.plain for t in footer_lines(AgentResult(True, "", chat, duration_ms=2000), "x")]
        ['✓ done · duration 2.0 s', 'chat 8b72ae6d-ab42-4854-991e-6ecf580e66c2 · continue: x']
    """
    return outcome_lines(result, simulated=simulated) + chat_lines(result, continue_hint)


def outcome_lines(result: AgentResult, *, simulated: bool = False) -> list[Text]:
    """The footer's outcome: ``✓ done``, ``⊘ cancelled`` or ``✗`` the error (and the agent's
    stderr when no typed error says it), with tokens and duration (``simulated``: the
    remedies name the simulator's commands, :func:`~.console.error_text`).

    Example:
        >>> [t.plain for t in outcome_lines(AgentResult(False, "", None, error="boom"))]
        ['✗ boom']
    """
    lines = []
    stats = usage_line(result)
    if result.success:
        lines.append(Text("✓ done" + (f" · {stats}" if stats else ""), style="green"))
    elif result.cancelled:
        lines.append(Text("⊘ cancelled" + (f" · {stats}" if stats else ""), style="yellow"))
    else:
        message = (error_text(result.exception, simulated=simulated) if result.exception
                   else (result.error or "failed"))
        lines.append(Text(f"✗ {printable(message)}", style="bold red"))  # the agent's words
        if result.stderr and not result.exception:
            lines.append(Text(printable(result.stderr.strip()[-2000:]), style="dim"))
    return lines


def chat_lines(result: AgentResult, continue_hint: str) -> list[Text]:
    """The footer's chat id and how to continue (nothing without a chat id)."""
    lines = []
    if result.session_id:
        # (it names the workspace the user typed, quoted by continue_command as one inert
        # line that pastes back as typed: one_line's \\ would change the path pasted)
        hint = f" · continue: {printable(continue_hint)}" if continue_hint else ""
        if not is_chat_id(result.session_id):  # never passed to --resume: not saved either
            hint = " · not a UUID: cannot be continued"
        lines.append(Text(f"chat {printable(result.session_id)}{hint}", style="dim"))
    return lines


class TextView:
    """Plain text for pipes and logs: :class:`~.render.TurnRenderer` plus the footer.

    With ``err`` (``run``), a turn that did not succeed says so there, not in the output:
    ``ans=$(cursor-agent-api run …)`` captures the turn, and the failure reaches the terminal.

    Example:
        >>> from io import StringIO
        >>> out, err = StringIO(), StringIO()
        >>> view = TextView(Console(file=out), err=Console(file=err))
        >>> view.finish(AgentResult(False, "", "c1", error="boom"), continue_hint="")
        >>> err.getvalue().splitlines(), out.getvalue().splitlines()
        (['✗ boom'], ['chat c1 · not a UUID: cannot be continued'])
    """

    def __init__(self, console: Console, *, err: Console | None = None,
                 simulated: bool = False) -> None:
        self.console = console
        self.err = err
        self.simulated = simulated
        self.renderer = TurnRenderer(console)

    def handle(self, event: AgentEvent, changes: Changes) -> None:
        """Print what the event adds."""
        if is_turn_failure(event):
            return  # the footer says it, once
        self.renderer.show(event, changes)

    def end_line(self) -> None:
        """End the line the agent's text left open (a prompt is about to be shown)."""
        self.renderer.end_line()

    def finish(self, result: AgentResult, *, continue_hint: str) -> None:
        """Print open calls and the footer (an outcome other than success on ``err``)."""
        self.renderer.flush(result)
        outcome = self.console if result.success or self.err is None else self.err
        for line in outcome_lines(result, simulated=self.simulated):
            outcome.print(line, soft_wrap=True)
        for line in chat_lines(result, continue_hint):
            self.console.print(line, soft_wrap=True)


class JsonView:
    """One JSON object, the final :class:`AgentResult`, on stdout; its ``error`` in the
    command line's words (:func:`~.console.error_text`: ``--trust``, not ``trust=True``).

    Example:
        >>> import io, contextlib
        >>> from cursor_agent_api.errors import WorkspaceTrustError
        >>> failed = WorkspaceTrustError("not trusted")
        >>> out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
        >>> with contextlib.redirect_stdout(out):
        ...     JsonView().finish(AgentResult(False, "", None, error=str(failed),
        ...                                   exception=failed), continue_hint="")
        >>> orjson.loads(out.buffer.getvalue())["error"]
        'not trusted — pass --trust, or --force'
    """

    def __init__(self, *, simulated: bool = False) -> None:
        self.simulated = simulated

    def handle(self, event: AgentEvent, changes: Changes) -> None:
        """Nothing until the end."""

    def finish(self, result: AgentResult, *, continue_hint: str) -> None:
        """Print the result object."""
        data = result.to_dict()
        if result.exception is not None:
            data["error"] = error_text(result.exception, simulated=self.simulated)
        sys.stdout.buffer.write(json_line(data))
        sys.stdout.flush()


class NdjsonView:
    """The normalized events (``AgentEvent.to_dict()``), one per line, as they arrive; the
    errors this library adds (:func:`event_in_cli_words`) in the command line's words."""

    def __init__(self, *, simulated: bool = False) -> None:
        self.simulated = simulated

    def handle(self, event: AgentEvent, changes: Changes) -> None:
        """Write the event's line and flush."""
        sys.stdout.buffer.write(json_line(event_in_cli_words(event, simulated=self.simulated)))
        sys.stdout.flush()

    def finish(self, result: AgentResult, *, continue_hint: str) -> None:
        """Nothing more: the last events said it all."""


def event_in_cli_words(event: AgentEvent, *, simulated: bool = False) -> dict[str, Any]:
    """``event.to_dict()``, with what this library wrote in it in the command line's words:
    the ``error`` of the result it added when the agent wrote none (and its ``text``), the
    ``message`` (and ``text``) of its ``ERROR`` events — a line over ``--max-line-bytes``, the
    runtime's failures. The shape is the same. An ``ERROR`` event naming an ``error_type``
    keeps its words but one: a message ending in this library's remedy for that error has the
    command line's remedy there instead (:func:`~.console.error_text_named`; under the
    simulator, an authentication error's `` `agent login` `` also becomes the simulator's
    login); any other text, the agent's included, is left as it came.

    Example:
        >>> from cursor_agent_api.protocol import EventReader
        >>> (event,) = EventReader(max_line_bytes=4).feed(b'{"type":"user"}\\n')
        >>> event.text  # doctest: +ELLIPSIS
        'a line of 15 bytes exceeded max_line_bytes=4; ...'
        >>> event_in_cli_words(event)["text"]  # doctest: +ELLIPSIS
        'a line of 15 bytes exceeded --max-line-bytes=4; ...'
    """
    out = event.to_dict()
    data = event.data
    exception = getattr(event, "exception", None)  # a result the client added: its error
    if isinstance(exception, CursorAgentError) and isinstance(data.get("error"), str):
        words = error_text(exception, simulated=simulated)
        out["data"] = {**data, "error": words}
        if out["text"] == data["error"]:
            out["text"] = words
    elif event.type is EventType.ERROR and isinstance(data.get("message"), str) and (
            data.get("code") == "line_too_long" or "error_type" in data):
        words = (error_text_of(event) if data.get("code") == "line_too_long"
                 else error_text_named(data["message"], data["error_type"], simulated=simulated))
        out["data"] = {**data, "message": words}
        if out["text"] == data["message"]:
            out["text"] = words
    return out


class AgentFormatView:
    """``run --output-format text|json|stream-json``: what ``agent --print`` prints.

    * ``stream-json``: the agent's own lines, byte for byte, as they arrive (lines this
      library made itself, which the agent never wrote, are left out); with ``--acp``, the
      events mapped from ACP, each its stream-json object (:func:`agent_line`);
    * ``json``: at the end, the agent's ``result`` object (seed 000 and the real CLI: ``type``,
      ``subtype``, ``duration_ms``, ``duration_api_ms``, ``is_error``, ``result``,
      ``session_id``, ``request_id``, then the rest, e.g. ``usage``) — its own line when it
      has every field, else completed; nothing when the agent wrote no result, as the CLI;
    * ``text``: the final answer and a newline, on success.

    A failed turn says why on stderr, once, in the command line's words. At a terminal
    (``out`` not given, stdout a terminal) what the agent wrote is shown as data, not as it
    came: the answer through :func:`~.render.printable`, a line that is not JSON as
    ``replay`` shows it, the JSON lines through :func:`~.render.inert_json` — a pipe or a
    file gets the agent's bytes.

    Example:
        >>> from io import StringIO
        >>> from cursor_agent_api.protocol import parse_event
        >>> out = StringIO()
        >>> view = AgentFormatView("json", Console(file=StringIO()), out=out)
        >>> view.handle(parse_event('{"type":"result","subtype":"success","result":"4"}'), ())
        >>> view.finish(AgentResult(success=True, result="4", session_id="c1",
        ...                         duration_ms=7), continue_hint="")
        >>> list(orjson.loads(out.getvalue()).items())  # doctest: +NORMALIZE_WHITESPACE
        [('type', 'result'), ('subtype', 'success'), ('duration_ms', 7),
         ('duration_api_ms', 7), ('is_error', False), ('result', '4'), ('session_id', 'c1')]
    """

    def __init__(self, output_format: str, err: Console, *, out: Any = None,
                 simulated: bool = False) -> None:
        self.output_format = output_format
        self.simulated = simulated
        self.err = err
        self._out = out
        self.terminal = out is None and is_terminal(sys.stdout)
        self.result_event: AgentEvent | None = None

    def _write(self, data: bytes) -> None:
        if self._out is not None:
            self._out.write(data.decode("utf-8", "surrogateescape"))
            return
        sys.stdout.buffer.write(data)
        sys.stdout.flush()

    def handle(self, event: AgentEvent, changes: Changes) -> None:
        """``stream-json``: write the agent's line now. Keep the agent's result event."""
        line = agent_line(event)
        if line is None:
            return  # made by this library: the agent never wrote it
        if self.result_event is None and event.type in (EventType.RESULT_SUCCESS,
                                                         EventType.RESULT_ERROR):
            self.result_event = event
        if self.output_format == "stream-json":
            if self.terminal:  # the agent's escapes shown, not obeyed
                line = (raw_line_text(event).encode() if event.type is EventType.RAW
                        else inert_json(line))
            self._write(line + b"\n")

    def finish(self, result: AgentResult, *, continue_hint: str) -> None:
        """``json``/``text``: write the result; on failure, say why on stderr."""
        if self.output_format == "json" and self.result_event is not None:
            line = cli_result_line(self.result_event, result)
            self._write((inert_json(line) if self.terminal else line) + b"\n")
        elif self.output_format == "text" and result.success:
            answer = (result.result if result.result is not None else result.text) or ""
            if self.terminal:
                answer = printable(answer)
            self._write(answer.encode("utf-8", "surrogateescape") + b"\n")
        if result.cancelled:
            self.err.print(Text("⊘ cancelled", style="yellow"))
        elif not result.success:
            message = error_text(result.exception, simulated=self.simulated) if result.exception else (
                result.error or "the turn failed")
            self.err.print(Text(f"✗ {printable(message)}", style="bold red"))


def agent_line(event: AgentEvent) -> bytes | None:
    """The stream-json line of something the agent did, or ``None`` for an event this library
    made itself (a turn's failure, the result added when the agent wrote none).

    Print mode: the agent's own line, byte for byte. ACP mode (``--acp``): the agent writes
    JSON-RPC, not stream-json; its updates are mapped to stream-json events (``data`` in the
    wire's shape, with ``"transport": "acp"``), and that object is the line — what ``replay``
    reads and ``--output-format stream-json`` prints.

    Example:
        >>> from cursor_agent_api.protocol import error_event, parse_event
        >>> agent_line(parse_event(b'{"type":"user"}'))
        b'{"type":"user"}'
        >>> from cursor_agent_api.protocol.acp_mapper import AcpMapper
        >>> agent_line(AcpMapper("s1").begin("hi")[-1])  # doctest: +ELLIPSIS
        b'{"type":"user",..."transport":"acp"}'
        >>> agent_line(error_event("exit 1", code="exit", error_type="AgentProcessError")) is None
        True
    """
    line = event.line
    if line is not None:
        return line if isinstance(line, bytes) else line.encode("utf-8", "surrogateescape")
    data = event.data
    if data.get("transport") == "acp" and data.get("added_by_client") is not True \
            and not is_turn_failure(event):
        return orjson.dumps(data)
    return None


RESULT_FIELDS = ("type", "subtype", "duration_ms", "duration_api_ms", "is_error", "result",
                 "session_id", "request_id")
"""The ``result`` object's fields, in the order the real CLI writes them."""


def cli_result_line(event: AgentEvent, result: AgentResult) -> bytes:
    """The ``--output-format json`` line for the agent's ``result`` event.

    The agent's own line when it has every field of :data:`RESULT_FIELDS`; otherwise the
    object completed from the turn (``request_id`` only if known, as the CLI may omit it),
    in the CLI's order, the agent's other fields after. A turn that failed on this side
    although the agent said success (a line over ``--max-line-bytes`` was dropped) says so, as
    its exit status does: ``subtype`` ``error``, ``is_error`` true, and ``error`` the reason.

    Example:
        >>> from cursor_agent_api.protocol import parse_event
        >>> ev = parse_event('{"type":"result","subtype":"error","is_error":true,"error":"x"}')
        >>> cli_result_line(ev, AgentResult(success=False, result="", session_id=None))
        b'{"type":"result","subtype":"error","is_error":true,"result":"","error":"x"}'
    """
    data = event.data
    line = event.line
    failed_here = event.type is EventType.RESULT_SUCCESS and not result.success \
        and not result.cancelled
    if line is not None and all(k in data for k in RESULT_FIELDS) and not failed_here:
        return line if isinstance(line, bytes) else line.encode()
    success = event.type is EventType.RESULT_SUCCESS and not failed_here
    overrides: dict[str, Any] = {"subtype": "error", "is_error": True} if failed_here else {}
    known: dict[str, Any] = {
        "type": "result",
        "subtype": "success" if success else "error",
        "duration_ms": result.duration_ms,
        "duration_api_ms": result.duration_ms,
        "is_error": not success,
        "result": result.result if result.result is not None else result.text,
        "session_id": result.session_id,
        "request_id": None,
    }
    out: dict[str, Any] = {}
    for key in RESULT_FIELDS:
        value = overrides[key] if key in overrides else data[key] if key in data else known[key]
        if value is not None or key in data:
            out[key] = value
    for key, value in data.items():
        if key not in out:
            out[key] = value
    if failed_here:
        out["error"] = (error_text(result.exception) if result.exception
                        else result.error or "the turn failed")
    return orjson.dumps(out)


class LiveView:
    """The live terminal view (see the module docstring).

    Driven by the changes of the turn's one fold: text appended to a segment streams in,
    a recap replaces its segment's deltas, a segment closed by a tool call is printed
    above the live region; text still shown when the turn ends (a final message, or deltas
    closed by the result) is the answer, printed as Markdown. Running calls are kept by
    their index in the turn: two calls with the same id are two lines.
    """

    TAIL_LINES = 12  # lines of the streaming segment kept in the live region
    REFRESH_PER_SECOND = 10  # rich's thread's; handle() adds one for an event after a quiet
    # tenth of a second (what just came shows at once), none for the rest however fast they come

    def __init__(self, console: Console, *, simulated: bool = False) -> None:
        # imported here, as the Markdown below: only a terminal's view needs them (a piped
        # run, the suite's, then skips rich's live display, Markdown and markdown-it)
        from rich.live import Live
        from rich.spinner import Spinner

        self.console = console
        self.simulated = simulated
        self.started = time.monotonic()
        self.segment: list[str] = []  # the text shown, not yet printed above the region
        self._open = -1  # the segment whose deltas end self.segment, from self._open_at
        self._open_at = 0
        self.thinking: list[str] = []
        self.running: dict[int, ToolCall] = {}  # by index in the turn: call ids may repeat
        self.spinner = Spinner("dots", style="cyan")  # one object, so that it turns
        self._refreshed = float("-inf")  # when handle() last refreshed the region
        self.live = Live(self, console=console, refresh_per_second=self.REFRESH_PER_SECOND,
                         transient=True, redirect_stdout=False, redirect_stderr=False)
        self.live.start()

    # what the live region shows ------------------------------------------------------------

    def __rich__(self) -> RenderableType:
        parts: list[RenderableType] = []
        if self.segment:
            parts.append(self._tail())
        for call in list(self.running.values()):  # list(): the refresh runs on its own thread
            parts.append(tool_line(call))
        elapsed = time.monotonic() - self.started
        status = Text(f"{elapsed:5.1f} s", style="cyan")
        thought = "".join(self.thinking).strip().splitlines()
        if thought:
            status.append("  " + _shorten(printable(thought[-1]), self.console.width - 16),
                          style="dim italic")
        else:
            status.append("  working…" if not self.segment else "", style="dim")
        self.spinner.update(text=status)
        parts.append(self.spinner)
        return Group(*parts)

    def _tail(self) -> Text:
        """The open segment's last rows as the terminal shows them: at most
        :attr:`TAIL_LINES`, fewer on a short terminal (the running calls and the spinner
        stay in view), counted in the console's cells after :func:`printable` (a CJK
        character or an emoji takes two, a tab up to eight, a control character four as
        ``\\xNN``). A line whose start is not shown begins with ``…``. Read from the last
        deltas only: the cost of a refresh does not grow with the segment (the whole segment
        is printed once, at the end)."""
        width = max(self.console.width, 20)
        rows_kept = max(1, min(self.TAIL_LINES, self.console.height - len(self.running) - 2))
        # characters: at least one cell each, so enough to fill the rows, and their newlines
        budget = rows_kept * width + rows_kept
        segment = self.segment
        pieces, size, newlines, count = [], 0, 0, len(segment)
        for piece in reversed(segment):  # (safe while handle() appends: bounds checked)
            pieces.append(piece)
            size += len(piece)
            newlines += piece.count("\n")
            if size > budget or newlines > rows_kept:  # the rows shown are all in
                break
        read = "".join(reversed(pieces))
        start = max(0, len(read) - budget)
        candidate = read[start:]
        if start:
            cut = read[start - 1] != "\n"  # whether its first line's start is not in
        else:
            before = count - len(pieces)  # the piece before those read, if any
            try:
                cut = before > 0 and not segment[before - 1].endswith("\n")
            except IndexError:  # (a recap replaced the deltas meanwhile: the next refresh)
                cut = True
        rows: list[tuple[Text, bool]] = []  # (row, whether it starts its line)
        lines = printable(candidate).split("\n")
        if len(lines) > 1 and not lines[-1]:  # (a line ended: no empty row after it)
            lines.pop()
        for i, line in enumerate(lines):
            text = Text(line)
            text.expand_tabs()
            wrapped = text.wrap(self.console, width, overflow="fold") if line else [Text()]
            starts = i > 0 or not cut
            rows += [(row, starts and j == 0) for j, row in enumerate(wrapped)]
        shown = rows[-rows_kept:]
        if shown and not shown[0][1]:  # (its first cell: "…" takes one, never more)
            first = shown[0][0]
            shown[0] = (Text("…") + first[1:], False)
        return Text("\n").join(row for row, _ in shown)

    # events ------------------------------------------------------------------------------

    def _flush_segment(self) -> None:
        text = "".join(self.segment)
        self.segment.clear()
        self._open = -1
        if text.strip():
            self.live.console.print(Text(printable(text.rstrip("\n"))))

    def handle(self, event: AgentEvent, changes: Changes) -> None:
        """Update the view for one event, given what it changed in the turn's fold."""
        if changes:
            self._apply(changes)
        etype = event.type
        if etype is EventType.SYSTEM_INIT:
            bits = [printable(str(b)) for b in (event.data.get("model"), event.data.get("cwd"))
                    if b]
            if bits:
                self.live.console.print(Text("▶ " + " · ".join(bits), style="dim"))
        elif etype is EventType.ERROR and not is_turn_failure(event):
            self.live.console.print(Text(f"error: {printable(error_text_of(event))}",
                                         style="bold red"))
        elif etype is EventType.RAW and event.text:
            self.live.console.print(Text(raw_line_text(event), style="dim italic"))
        # At the rate, not per event: a refresh renders the region, and deltas come by the
        # thousand (rich's thread refreshes meanwhile; what is printed above shows at once)
        now = time.monotonic()
        if now - self._refreshed >= 1 / self.REFRESH_PER_SECOND:
            self._refreshed = now
            self.live.refresh()

    def _apply(self, changes: Changes) -> None:
        # The result's changes close the turn: what is shown then stays for the Markdown.
        ends = changes[-1].__class__ is ResultReceived
        replaced = -1
        for change in changes:
            if isinstance(change, TextAppended):
                if change.segment != self._open:
                    self._open, self._open_at = change.segment, len(self.segment)
                self.segment.append(change.text)
                self.thinking.clear()
            elif isinstance(change, SegmentReplaced):
                if change.segment == self._open:
                    del self.segment[self._open_at:]  # the recap replaces its deltas
                self.segment.append(change.text)
                self._open = -1
                replaced = change.segment
                self.thinking.clear()
            elif isinstance(change, SegmentClosed):
                if not ends and change.segment != replaced:  # closed by a tool call
                    self._flush_segment()
            elif isinstance(change, ThinkingAppended):
                self.thinking.append(change.text)
            elif isinstance(change, (ToolCallOpened, ToolCallChanged)):
                self._show_call(change.index, change.call,
                                opened=isinstance(change, ToolCallOpened), ends=ends)

    def _show_call(self, index: int, call: ToolCall, *, opened: bool, ends: bool) -> None:
        finished = call.status.finished
        if not ends and (opened or finished):
            self._flush_segment()
            self.thinking.clear()
        if finished:
            self.running.pop(index, None)
            self.live.console.print(tool_line(call))
        else:
            self.running[index] = call

    def finish(self, result: AgentResult, *, continue_hint: str) -> None:
        """Stop the live region; print the final answer as Markdown, then the footer."""
        final = "".join(self.segment)
        self.segment.clear()
        self.live.stop()
        for index in sorted(self.running):  # left running: the result says how they ended
            if index < len(result.tool_calls):
                self.console.print(tool_line(result.tool_calls[index]))
        self.running.clear()
        if final.strip():  # each link and image with its target: nothing hides where it goes
            from .answer_markdown import AnswerMarkdown

            # laid out at the terminal's width, whatever the console's soft_wrap: a code
            # block's long line is wrapped, not cut off
            self.console.print(AnswerMarkdown(final), soft_wrap=False)
        for line in footer_lines(result, continue_hint, simulated=self.simulated):
            self.console.print(line, soft_wrap=True)  # the command to continue stays whole

    def stop(self) -> None:
        """Stop the live region without a result (used on an unexpected exit)."""
        if self.live.is_started:
            self.live.stop()


def _shorten(text: str, width: int) -> str:
    width = max(width, 10)
    return text if len(text) <= width else text[: width - 1] + "…"


def make_view(output: str, console: Console, *, err: Console | None = None,
              simulated: bool = False) -> TurnView:
    """The view for ``--output`` (``auto``: live on a terminal, else text; a text view says
    a turn that did not succeed on ``err`` when given).

    Example:
        >>> type(make_view("json", Console())).__name__
        'JsonView'
    """
    if output == "json":
        return JsonView(simulated=simulated)
    if output == "ndjson":
        return NdjsonView(simulated=simulated)
    if output == "live" or (output == "auto" and console.is_terminal):
        return LiveView(console, simulated=simulated)
    return TextView(console, err=err, simulated=simulated)
