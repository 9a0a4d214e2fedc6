"""Rendering a turn for a person: the one renderer shared by ``replay`` and ``run``.

:class:`TurnRenderer` takes events one at a time and prints, in order: thinking
(dimmed, once a block completes), assistant text (deltas as they come; a recap
that repeats them is not printed twice), one line per tool call once it
finishes (kind, a short form of its args, status, duration, exit code), then
the result with usage. Colours only when the console is a terminal; on a pipe,
plain text with no escape codes (rich decides).

Example:
    >>> from io import StringIO
    >>> from rich.console import Console
    >>> from cursor_agent_api.protocol import parse_event
    >>> out = StringIO()
    >>> r = TurnRenderer(Console(file=out, width=80))
    >>> r.handle(parse_event('{"type":"assistant","message":{"content":[{"type":"text","text":"Hi"}]}}'))
    >>> _ = r.close()
    >>> "Hi" in out.getvalue()
    True
"""

from __future__ import annotations

import dataclasses
import re

import orjson
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from ..protocol import (
    AgentEvent,
    AgentResult,
    Change,
    Changes,
    EventType,
    SegmentReplaced,
    TextAppended,
    ThinkingAppended,
    ThinkingClosed,
    ToolCall,
    ToolCallChanged,
    ToolCallOpened,
    ToolStatus,
    Transcript,
)
from ..protocol.reader import line_too_long_text

STATUS_MARKS: dict[ToolStatus, tuple[str, str]] = {
    ToolStatus.RUNNING: ("…", "cyan"),
    ToolStatus.SUCCEEDED: ("✓", "green"),
    ToolStatus.FAILED: ("✗", "red"),
    ToolStatus.ERROR: ("✗", "red"),
    ToolStatus.TIMEOUT: ("✗", "red"),
    ToolStatus.REJECTED: ("⊘", "yellow"),
    ToolStatus.DENIED: ("⊘", "yellow"),
    ToolStatus.ABANDONED: ("⊘", "magenta"),
}


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
r"""Bidirectional-text controls (marks, embeddings, overrides, isolates): applied by the
terminal, they make ``cat notes\u202e; rm -rf ~ #\u202c.txt`` read differently from what runs."""


_SURROGATE = re.compile("[\ud800-\udfff]")
"""A lone surrogate: with ``surrogateescape`` (argv, file names), ``U+DC80``-``U+DCFF`` is a
byte that was not text (``\\xe9`` of a Latin-1 name); written as that byte, it is no
character on a UTF-8 terminal, and on an 8-bit one ``\\x9b`` is CSI."""


def _surrogate_shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape's: the byte it stands for
        return f"\\x{code - 0xDC00:02x}"
    return f"⟨U+{code:04X}⟩"


def printable(text: str, *, one_line: bool = False) -> str:
    r"""``text`` with every control character but newline and tab shown as ``\xNN``, every
    byte that was not text (a lone surrogate of ``surrogateescape``: a Latin-1 file name) as
    ``\xNN`` too, and every bidi control as ``⟨U+202E⟩`` (as the web page shows them).

    With ``one_line`` (a name inside a one-line message: a path the user typed) newline and
    tab too, as ``\n`` and ``\t``, and a backslash as ``\\``: what is shown then reads back
    one way only (a name holding the two characters ``\`` ``n`` shows as ``\\n``, one
    holding a newline as ``\n``).

    What the agent wrote is data: an escape sequence in it must not move the cursor,
    retitle the window or change colours on the reader's terminal, nor a bidi control
    reorder what the reader sees.

    Example:
        >>> printable("a\x1b[31mred\r\nb\x07")
        'a\\x1b[31mred\nb\\x07'
        >>> printable("notes\u202etxt.sh")
        'notes⟨U+202E⟩txt.sh'
        >>> print(printable("a\nb\tc\x1b", one_line=True))
        a\nb\tc\x1b
        >>> print(printable("a\\nb", one_line=True), printable("caf\udce9\udc9b", one_line=True))
        a\\nb caf\xe9\x9b
    """
    if one_line:
        text = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")
    text = text.replace("\r\n", "\n")
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    text = _SURROGATE.sub(_surrogate_shown, text)
    return _BIDI.sub(lambda m: f"⟨U+{ord(m.group()):04X}⟩", text)


_JSON_UNSAFE = re.compile(
    rb"\x7f|\xc2[\x80-\x9f]|\xd8\x9c|\xe2\x80[\x8e\x8f\xaa-\xae]|\xe2\x81[\xa6-\xa9]")
"""In UTF-8 JSON: DEL, the C1 controls and the bidi controls, which JSON may leave as they
are (only C0 must be escaped) — and in JSON text they can only stand inside a string."""


def inert_json(data: bytes) -> bytes:
    r"""UTF-8 JSON ``data`` with DEL, every C1 control (``U+009B`` is CSI: xterm obeys it) and
    every bidi control written as its ``\u`` escape: the same JSON value, which a terminal
    that shows it (``-o json``, ``cat run.json``) shows and never obeys.

    Example:
        >>> import orjson
        >>> orjson.dumps("red\u009b31m notes\u202etxt.sh é")
        b'"red\xc2\x9b31m notes\xe2\x80\xaetxt.sh \xc3\xa9"'
        >>> inert_json(orjson.dumps("red\u009b31m notes\u202etxt.sh é"))
        b'"red\\u009b31m notes\\u202etxt.sh \xc3\xa9"'
        >>> orjson.loads(_) == "red\u009b31m notes\u202etxt.sh é"
        True
    """
    return _JSON_UNSAFE.sub(lambda m: b"\\u%04x" % ord(m.group().decode()), data)


def json_line(value: object) -> bytes:
    r"""``value`` as one line of JSON for the command's output (``-o json``, ``-o ndjson``,
    ``--json``), through :func:`inert_json`.

    Example:
        >>> json_line({"text": "red" + chr(0x1b) + "[2J" + chr(0x9b) + "31m"})
        b'{"text":"red\\u001b[2J\\u009b31m"}\n'
    """
    return inert_json(orjson.dumps(value, option=orjson.OPT_APPEND_NEWLINE))


def error_text_of(event: AgentEvent) -> str:
    """What an ``ERROR`` event says, in the command line's words: a line over the limit
    names the flag, ``--max-line-bytes`` (the event, the library's, names its parameter).

    Example:
        >>> from cursor_agent_api.protocol import EventReader
        >>> (event,) = EventReader(max_line_bytes=4).feed(b'{"type":"user"}\\n')
        >>> print(error_text_of(event))  # doctest: +NORMALIZE_WHITESPACE
        a line of 15 bytes exceeded --max-line-bytes=4; it was dropped
        (raise --max-line-bytes to keep such lines)
    """
    data = event.data
    size, limit = data.get("size"), data.get("limit")
    if data.get("code") == "line_too_long" and type(size) is int and type(limit) is int:
        return line_too_long_text(size, limit, setting="--max-line-bytes")
    return event.text or ""


def raw_line_text(event: AgentEvent) -> str:
    r"""How a line that is not JSON is shown: its text, or a note if it is binary.

    Example:
        >>> from cursor_agent_api.protocol import raw_event
        >>> raw_line_text(raw_event(b"Cursor Agent"))
        'Cursor Agent'
        >>> raw_line_text(raw_event(b"\x7fELF\x02\x00\xff"))
        '(binary data, 7 bytes, not shown)'
    """
    line = event.line
    data = line if isinstance(line, bytes) else (line or "").encode("utf-8", "surrogateescape")
    try:
        if b"\x00" in data:
            raise UnicodeDecodeError("utf-8", data, 0, 1, "NUL byte")
        data.decode("utf-8")
    except UnicodeDecodeError:
        return f"(binary data, {len(data):,} bytes, not shown)"
    return printable(event.text or "")


def _shorten(text: str, width: int = 70) -> str:
    text = " ".join(printable(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def tool_line(call: ToolCall) -> Text:
    """One line for a tool call: mark, kind, short args, status, duration, exit code.

    A call of one of the host's own ``@tool`` functions shows as ``your tool``, with its
    arguments and, once done, its output or error message.

    Example:
        >>> from cursor_agent_api.protocol import ToolKind
        >>> tool_line(ToolCall("c", ToolKind.SHELL, "shellToolCall", {"command": "ls"})).plain
        '… shell ls  running'
        >>> own = ToolCall("c", ToolKind.MCP, "mcpToolCall", {"providerIdentifier": "python-tools-0a1b2c3d",
        ...                "toolName": "lookup_order", "args": {"order_id": "A1"}}, ToolStatus.FAILED,
        ...                {"success": {"content": [{"text": {"text": "KeyError: 'A1'"}}], "isError": True}})
        >>> tool_line(own).plain
        "✗ your tool lookup_order(order_id='A1') → KeyError: 'A1'  failed"
    """
    mark, style = STATUS_MARKS[call.status]
    line = Text()
    line.append(f"{mark} ", style=f"bold {style}")
    if call.is_own_tool:  # one of the host's @tool functions: its arguments and its outcome
        line.append("your tool", "bold")
        line.append(" " + _shorten(f"{call.mcp_tool}({_own_tool_args(call)})"))
        outcome = call.mcp_output if call.status is not ToolStatus.RUNNING else None
        if outcome:
            line.append(" → " + _shorten(outcome, 60), style=style)
    else:
        line.append(call.kind.value if call.kind.value != "unknown"
                    else printable(call.name) or "tool", "bold")  # the agent's key: data
        summary = call.summary()
        if summary:
            line.append(" " + _shorten(summary))
    line.append(f"  {call.status.value}", style=style)
    extras = []
    if call.exit_code is not None:
        extras.append(f"exit {call.exit_code}")
    if call.duration_ms is not None:
        extras.append(_duration(call.duration_ms))
    if extras:
        line.append(" (" + ", ".join(extras) + ")", style="dim")
    return line


def _own_tool_args(call: ToolCall) -> str:
    """``order_id='A1', items=True``: the arguments the agent passed to a ``@tool`` function.

    Example:
        >>> from cursor_agent_api.protocol import ToolKind
        >>> _own_tool_args(ToolCall("c", ToolKind.MCP, "mcpToolCall", {"args": {"a": "x", "n": 2}}))
        "a='x', n=2"
    """
    args = call.args.get("args")
    if not isinstance(args, dict):
        return ""
    return ", ".join(f"{k}={v!r}" for k, v in args.items())


def _duration(ms: int) -> str:
    if ms < 1000:
        return f"{ms} ms"
    return f"{ms / 1000:.1f} s"


def usage_line(result: AgentResult) -> str:
    """The footer: tokens and duration.

    Example:
        >>> usage_line(AgentResult(success=True, result="", session_id="s", duration_ms=1500))
        'duration 1.5 s'
    """
    parts = []
    if result.usage is not None:
        u = result.usage
        parts.append(
            f"tokens in {u.input_tokens:,} / out {u.output_tokens:,}"
            f" / cache read {u.cache_read_tokens:,} / cache write {u.cache_write_tokens:,}"
        )
    if result.duration_ms is not None:
        parts.append(f"duration {_duration(result.duration_ms)}")
    return " · ".join(parts)


class TurnRenderer:
    """Print a turn as its events arrive (see the module docstring).

    ``show_thinking`` prints completed thinking blocks dimmed. What to print comes from
    the changes of the turn's one fold (:mod:`~cursor_agent_api.protocol.changes`): the
    renderer applies neither the segment rule nor the pairing of tool calls itself.
    :meth:`handle` folds the event in :attr:`transcript` (``replay``); :meth:`show` takes
    the changes of a fold made elsewhere (``run``: the stream's own, with ``transcript``
    the stream's transcript).
    """

    def __init__(self, console: Console, *, show_thinking: bool = True,
                 transcript: Transcript | None = None) -> None:
        self.console = console
        self.show_thinking = show_thinking
        self.transcript = transcript if transcript is not None else Transcript(keep_events=False)
        self._text_segment = -1  # the latest segment some of whose text was printed
        self._at_line_start = True
        self._thinking: list[str] = []
        self._printed_calls: set[int] = set()  # indexes of the calls printed: ids may repeat

    def _write_text(self, text: str) -> None:
        if not text:
            return
        self.console.print(Text(printable(text)), end="", soft_wrap=True)
        self._at_line_start = text.endswith("\n")

    def end_line(self) -> None:
        """End the line the agent's text left open (a prompt is about to be shown)."""
        self._newline()

    def _newline(self) -> None:
        if not self._at_line_start:
            self.console.print()
            self._at_line_start = True

    def handle(self, event: AgentEvent) -> None:
        """Fold one event in :attr:`transcript` and render it."""
        self.show(event, self.transcript.add(event))

    def show(self, event: AgentEvent, changes: Changes) -> None:
        """Render one event, given what it changed in the turn's fold."""
        for change in changes:
            self._apply(change)
        etype = event.type
        if etype is EventType.ERROR:
            self._newline()
            self.console.print(f"[bold red]error:[/] {escape(printable(error_text_of(event)))}")
        elif etype is EventType.RAW:
            self._newline()
            self.console.print(Text(raw_line_text(event), style="dim italic"))
        elif etype is EventType.SYSTEM_INIT:
            model = event.data.get("model")
            cwd = event.data.get("cwd")
            bits = [printable(str(b)) for b in (model, cwd) if b]
            if bits:
                self.console.print(Text("▶ " + " · ".join(bits), style="dim"))

    def _apply(self, change: Change) -> None:
        if isinstance(change, TextAppended):
            self._text_segment = change.segment
            self._write_text(change.text)
        elif isinstance(change, SegmentReplaced):
            if change.segment != self._text_segment:  # none of its deltas printed: print it
                self._text_segment = change.segment
                self._write_text(change.text)
        elif isinstance(change, ThinkingAppended):
            self._thinking.append(change.text)
        elif isinstance(change, ThinkingClosed):
            self._flush_thinking()
        elif isinstance(change, (ToolCallOpened, ToolCallChanged)) and change.call.status.finished:
            self._print_call(change.index, change.call)

    def _print_call(self, index: int, call: ToolCall) -> None:
        if index not in self._printed_calls:
            self._printed_calls.add(index)
            self._newline()
            self.console.print(tool_line(call))

    def _flush_thinking(self) -> None:
        text = printable("".join(self._thinking).strip())
        self._thinking.clear()
        if text and self.show_thinking:
            self._newline()
            quoted = "\n".join("│ " + line for line in text.splitlines())
            self.console.print(Text(quoted, style="dim italic"))

    def flush(self, result: AgentResult | None = None) -> AgentResult:
        """End of the stream: print thinking and the calls left open; return the result.

        ``result``: the turn's, when the fold was made elsewhere (and closed there);
        otherwise :attr:`transcript`'s.
        """
        for change in self.transcript.close():
            self._apply(change)
        self._flush_thinking()
        if result is None:
            result = self.transcript.to_result()
        for index, call in enumerate(result.tool_calls):  # abandoned by a close made elsewhere
            self._print_call(index, call)
        self._newline()
        return result

    def close(self, *, failure: str | None = None) -> AgentResult:
        """End of a recording: :meth:`flush`, then the result with usage; return it.

        ``failure``: why the turn is shown failed whatever its result said (lines of the
        recording were dropped: the turn is incomplete); the result returned says so.
        """
        result = self.flush()
        if failure is not None:
            result = dataclasses.replace(result, success=False, error=failure)
        if result.success:
            footer = usage_line(result)
            self.console.print(Text("✓ done" + (f" · {footer}" if footer else ""), style="green"))
        else:
            self.console.print(
                Text(f"✗ {printable(result.error or 'the turn failed')}", style="bold red"),
            )
        if result.session_id:
            self.console.print(Text(f"chat {printable(result.session_id)}", style="dim"))
        return result
