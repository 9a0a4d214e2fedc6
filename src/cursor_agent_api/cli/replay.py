"""``cursor-agent-api replay FILE``: show a recording as a person would want to read it.

``FILE`` is NDJSON as written by ``agent --print --output-format stream-json``
(``-`` reads standard input). ``--summary`` prints one JSON object instead,
for scripts and checks.

Example:
    $ cursor-agent-api replay tests/data/cursor-real/08-hcn-0910-probe-13-composer-read-then-edit.ndjson
    $ agent -p --output-format stream-json "hi" | cursor-agent-api replay - --summary
"""

from __future__ import annotations

import errno
import signal
import sys
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO, NoReturn

import click

from ..protocol import DEFAULT_MAX_LINE_BYTES, AgentEvent, EventReader, EventType, Transcript
from ..protocol.reason import failure_reason
from ..signal_exit import SignalExit
from .console import make_console, output_failure
from .render import TurnRenderer, json_line, printable


def summarize(t: Transcript, raw_tail: Iterable[str] = (), *,
              dropped: EventReader | None = None) -> dict[str, Any]:
    """The ``--summary`` object of a closed transcript.

    ``events`` counts lines that were JSON objects, ``raw_lines`` non-blank lines
    that were not, ``dropped_lines`` lines over ``--max-line-bytes`` (counted by the reader
    ``dropped``; any makes the turn incomplete: ``success`` false, ``error`` says so, as
    :func:`dropped_lines_error`); ``text`` is the reassembled text (never copied from the
    result), ``result_text`` is ``result.result``. When the stream ended without a
    result, ``error`` is the agent's own reason if the last non-JSON lines
    (``raw_tail``: stderr, when the recording was captured with ``2>&1``) give one.

    Example:
        >>> t = Transcript.from_bytes(b'{"type":"result","subtype":"success","result":"x"}\\nhi\\n')
        >>> s = summarize(t)
        >>> s["success"], s["events"], s["raw_lines"], s["dropped_lines"], s["result_text"]
        (True, 1, 1, 0, 'x')
    """
    result = t.to_result()
    success = result.success
    error = None if success else result.error
    if t.result_event is None:
        error = failure_reason(raw_tail, strict=True) or error
    dropped_lines = dropped.oversize_lines if dropped is not None else 0
    if dropped is not None and dropped_lines:
        success, error = False, dropped_lines_error(dropped)
    return {
        "session_id": t.session_id,
        "success": success,
        "error": error,
        "text": t.text,
        "result_text": t.result_text,
        "usage": t.usage.to_dict() if t.usage else None,
        "events": t.object_lines,
        "raw_lines": t.raw_lines,
        "dropped_lines": dropped_lines,
        "tool_calls": [
            {
                "call_id": tc.call_id,
                "kind": tc.kind.value,
                "name": tc.name,
                "status": tc.status.value,
                "args": tc.args,
                "exit_code": tc.exit_code,
                "output": tc.output,
            }
            for tc in result.tool_calls
        ],
    }


def dropped_lines_error(reader: EventReader) -> str:
    """What a recording some of whose lines were over ``--max-line-bytes`` misses (as ``run``
    says of the agent's output).

    Example:
        >>> reader = EventReader(4)
        >>> _ = reader.feed(b'{"type":"user"}\\n')
        >>> dropped_lines_error(reader)  # doctest: +NORMALIZE_WHITESPACE
        '1 line(s) of the recording exceeded --max-line-bytes=4 and were dropped; the turn is
         incomplete'
    """
    return (f"{reader.oversize_lines} line(s) of the recording exceeded "
            f"--max-line-bytes={reader.max_line_bytes} and were dropped; the turn is incomplete")


class RecordedTurns:
    """Which turns of a recording failed. A recording may hold several turns (``chat
    --record``), each from its ``system``/``init`` (or its ``user`` line, after a result) to
    its ``result``; what ``replay`` shows and summarises is the first turn (:attr:`count`
    is 0 until it has ended), and its exit status says whether every turn succeeded. A
    turn with no result (cut off, or followed by the next turn's ``init``) failed; lines
    that are not JSON between turns (stderr) begin no turn.

    Example:
        >>> ok = b'{"type":"system","subtype":"init"}\\n{"type":"result","subtype":"success"}\\n'
        >>> bad = b'{"type":"system","subtype":"init"}\\n{"type":"result","subtype":"error"}\\n'
        >>> turns = RecordedTurns()
        >>> for event in EventReader().feed(ok + bad + ok):
        ...     turns.add(event)
        >>> turns.close()
        >>> turns.count, turns.failed
        (3, [2])
    """

    def __init__(self) -> None:
        self.count = 0
        self.failed: list[int] = []
        """The failed turns' numbers (the first is 1)."""
        self._turn: Transcript | None = None
        self._init_seen = False

    def add(self, event: AgentEvent) -> None:
        """Fold one event of the recording."""
        etype = event.type
        turn = self._turn
        if turn is not None and (
                (etype is EventType.SYSTEM_INIT and (turn.result_event is not None
                                                      or self._init_seen))
                or (etype is EventType.USER and turn.result_event is not None)):
            self._end(turn)
            turn = None
        if turn is None:
            if etype is EventType.RAW or etype is EventType.ERROR:
                return
            turn = self._turn = Transcript(keep_events=False, keep_content=False)
            self._init_seen = False
        self._init_seen = self._init_seen or etype is EventType.SYSTEM_INIT
        turn.add(event)

    def close(self) -> None:
        """End of the recording: its last turn ends."""
        if self._turn is not None:
            self._end(self._turn)

    def _end(self, turn: Transcript) -> None:
        turn.close()
        self.count += 1
        if not turn.to_result().success:
            self.failed.append(self.count)
        self._turn = None


def _later_failures(turns: RecordedTurns, shown_failed: bool) -> None:
    """Exit 1 when a turn failed: the one shown (the first) says so itself; another, in one
    line (the first too, should what is shown look a success)."""
    unsaid = [n for n in turns.failed if n > 1 or not shown_failed]
    if unsaid:
        which = ", ".join(map(str, unsaid))
        click.echo(f"cursor-agent-api replay: recorded turn{'s' if len(unsaid) > 1 else ''} "
                   f"{which} of {turns.count} failed (only the first turn is shown)", err=True)
    if shown_failed or turns.failed:
        sys.exit(1)


class _ReadError(Exception):
    """The input could not be read (an ``OSError`` of the output is the output's)."""

    def __init__(self, exc: OSError) -> None:
        super().__init__(exc.strerror or str(exc))
        self.directory = isinstance(exc, IsADirectoryError)


class _ClosedStdin(Exception):
    """``-`` was given and standard input is closed (``<&-``): Python has no ``sys.stdin``."""


def _open_input(file: str) -> BinaryIO:
    """The bytes of ``file`` (``-``: standard input, which the caller must not close)."""
    if file != "-":
        return open(file, "rb")  # closed by the caller
    if sys.stdin is None:  # closed (<&-)
        raise _ClosedStdin
    return sys.stdin.buffer


def _chunks(src: BinaryIO) -> Iterator[bytes]:
    read = getattr(src, "read1", src.read)  # read1: what a pipe has now, without waiting for more
    while True:
        try:
            chunk = read(1 << 16)
        except OSError as exc:
            raise _ReadError(exc) from exc
        if not chunk:
            return
        yield chunk


@click.command()
@click.argument("file", type=str)
@click.option("--summary", is_flag=True, help="Print one JSON object instead of the rendering.")
@click.option("--no-thinking", is_flag=True, help="Do not show thinking.")
@click.option(
    "--max-line-bytes",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_LINE_BYTES,
    show_default=True,
    help="Longest line accepted; a longer one is dropped (an error event), and the turn, "
         "incomplete, fails (exit 1).",
)
def replay(file: str, summary: bool, no_thinking: bool, max_line_bytes: int) -> None:
    """Render a recorded stream-json FILE ("-" for standard input).

    Exit status, as `run`'s for the same stream: 0 when the recorded turn succeeded, 1
    when it failed (an error result, no result at all: --summary's "success" is false; a
    line over --max-line-bytes was dropped, so the turn is incomplete). A recording of
    several turns (`chat --record`) shows its first; it exits 1 if any turn failed (a later
    one is named on stderr), as a piped `chat` exits 1 at its first failed turn. 1 also when the input
    holds no JSON event (not a stream-json recording) or the output cannot be written, 2
    when the input cannot be read. Ctrl-C: what was rendered is flushed, then the command
    dies from the SIGINT (a shell's $? 130), so that a shell loop running it stops too.
    """
    shown = printable(file, one_line=True)  # a name from a glob is data: its escapes shown, never obeyed
    try:
        src = _open_input(file)
    except OSError as exc:
        click.echo(f"cursor-agent-api replay: cannot read {shown}: {exc.strerror}", err=True)
        sys.exit(2)
    except _ClosedStdin:
        click.echo("cursor-agent-api replay: cannot read standard input: it is closed", err=True)
        sys.exit(2)
    name = "standard input" if file == "-" else shown
    try:
        turns = RecordedTurns()
        if summary:
            t = Transcript(keep_events=False)
            raw_tail: deque[str] = deque(maxlen=20)  # where the agent's reason would be

            def fold(events: list[AgentEvent]) -> None:
                for event in events:
                    turns.add(event)
                    if turns.count:  # past the first turn: only its outcome counts
                        continue
                    t.add(event)
                    # (an object nested too deep is kept as RAW: the reader counts it an object)
                    if event.type is EventType.RAW and event.data.get("code") != "too_deep":
                        t.raw_lines += 1
                        raw_tail.append(event.text or "")
                    elif not _dropped(event):
                        t.object_lines += 1

            summary_reader = EventReader(max_line_bytes)
            for chunk in _chunks(src):
                fold(summary_reader.feed(chunk))
            fold(summary_reader.close())
            t.close()
            turns.close()
            if summary_reader.object_lines == 0 and not summary_reader.oversize_lines:
                _not_a_recording(name, empty=summary_reader.raw_lines == 0)
            outcome = summarize(t, raw_tail, dropped=summary_reader)
            sys.stdout.buffer.write(json_line(outcome))
            sys.stdout.flush()
            _later_failures(turns, not outcome["success"])  # as `run` on this stream exits
            return
        console = make_console(soft_wrap=True)
        renderer = TurnRenderer(console, show_thinking=not no_thinking)
        reader = EventReader(max_line_bytes)
        # Lines before the first JSON event wait: a file that has none (a README, a binary)
        # is refused without being printed.
        held: list[AgentEvent] | None = []
        held_bytes = 0
        for events in _batches(src, reader):
            for event in events:
                turns.add(event)
                if turns.count:  # past the first turn: shown is the first (its outcome counts)
                    continue
                if held is None:
                    renderer.handle(event)
                    continue
                if event.type is EventType.RAW:
                    held.append(event)
                    held_bytes += len(event.line or b"")
                    if held_bytes > MAX_HEAD_BYTES:
                        _not_a_recording(name, empty=False, within=MAX_HEAD_BYTES)
                    continue
                for early in held:
                    renderer.handle(early)
                held = None
                renderer.handle(event)
        if held is not None:
            _not_a_recording(name, empty=not held)
        turn = renderer.close(
            failure=dropped_lines_error(reader) if reader.oversize_lines else None)
        turns.close()
        _later_failures(turns, not turn.success)  # the first turn's: as `run` on this stream
    except KeyboardInterrupt:
        sys.stdout.flush()
        raise SignalExit(signal.SIGINT) from None
    except _ReadError as exc:
        why = f"{shown} is a directory" if exc.directory else f"cannot read {shown}: {exc}"
        click.echo(f"cursor-agent-api replay: {why}", err=True)
        sys.exit(2)
    except OSError as exc:  # writing the rendering (a closed pipe is click's to end quietly)
        if exc.errno == errno.EPIPE:
            raise
        click.echo(f"cursor-agent-api replay: {output_failure(exc)}", err=True)
        sys.exit(1)
    finally:
        if file != "-":
            src.close()


def _dropped(event: AgentEvent) -> bool:
    """True for the error event that stands for a line over ``--max-line-bytes`` (no line of
    the recording was an event: ``dropped_lines`` counts it)."""
    return event.type is EventType.ERROR and event.data.get("code") == "line_too_long"


MAX_HEAD_BYTES = 1 << 20
"""Bytes of non-JSON lines accepted before the first JSON event (banners are a few lines)."""


def _batches(src: BinaryIO, reader: EventReader) -> Iterator[list[AgentEvent]]:
    for chunk in _chunks(src):
        yield reader.feed(chunk)
    yield reader.close()


def _not_a_recording(name: str, *, empty: bool, within: int | None = None) -> NoReturn:
    if empty:
        why = "it is empty"
    elif within is not None:
        why = f"no JSON event in its first {within >> 20} MiB"
    else:
        why = "no line of it is a JSON event"
    click.echo(f"cursor-agent-api replay: {name} is not a stream-json recording ({why})",
               err=True)
    sys.exit(1)

