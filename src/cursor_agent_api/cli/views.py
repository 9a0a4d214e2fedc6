"""How ``run`` and ``chat`` show a turn: live on a terminal, plain text, JSON or NDJSON.

Every view takes the events as they arrive (:meth:`TurnView.handle`) and the
result at the end (:meth:`TurnView.finish`):

* :class:`LiveView` — a terminal: a spinner with elapsed time, the latest thinking
  line dimmed and replaced as it goes, the text streaming in, one line per tool call
  that turns from running to its outcome (✓ ✗ ⊘, duration, command/path/pattern, exit
  code), the final answer rendered as Markdown, a footer with tokens, duration, the
  chat id and the command to continue;
* :class:`TextView` — a pipe: the same content as plain lines, no escape codes (the
  renderer ``replay`` uses);
* :class:`JsonView` — one final ``AgentResult`` object;
* :class:`NdjsonView` — the normalized events, one JSON object per line, as they arrive.

Example:
    >>> from io import StringIO
    >>> from rich.console import Console
    >>> from cursor_agent_api.protocol import parse_event, AgentResult
    >>> out = StringIO()
    >>> view = TextView(Console(file=out))
    >>> view.handle(parse_event('{"type":"assistant","message":{"content":"4"}}'))
    >>> view.finish(AgentResult(success=True, result="4", session_id="c1"), continue_hint="")
    >>> "4" in out.getvalue()
    True
"""

from __future__ import annotations

import sys
import time
from typing import Protocol

import orjson
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markdown import Markdown
from rich.spinner import Spinner
from rich.text import Text

from ..protocol import AgentEvent, AgentResult, EventType, ToolCall, Transcript
from .render import TurnRenderer, tool_line, usage_line


class TurnView(Protocol):
    """What ``run`` and ``chat`` feed."""

    def handle(self, event: AgentEvent) -> None:
        """Show one event."""

    def finish(self, result: AgentResult, *, continue_hint: str) -> None:
        """Show the end of the turn."""


def footer_lines(result: AgentResult, continue_hint: str) -> list[Text]:
    """The footer: outcome with tokens and duration, chat id, how to continue.

    Example:
        >>> [t.plain for t in footer_lines(AgentResult(True, "", "c1", duration_ms=2000), "x")]
        ['✓ done · duration 2.0 s', 'chat c1 · continue: x']
    """
    lines = []
    stats = usage_line(result)
    if result.success:
        lines.append(Text("✓ done" + (f" · {stats}" if stats else ""), style="green"))
    elif result.cancelled:
        lines.append(Text("⊘ cancelled" + (f" · {stats}" if stats else ""), style="yellow"))
    else:
        message = str(result.exception) if result.exception else (result.error or "failed")
        lines.append(Text(f"✗ {message}", style="bold red"))
        if result.stderr and not result.exception:
            lines.append(Text(result.stderr.strip()[-2000:], style="dim"))
    if result.session_id:
        hint = f" · continue: {continue_hint}" if continue_hint else ""
        lines.append(Text(f"chat {result.session_id}{hint}", style="dim"))
    return lines


class TextView:
    """Plain text for pipes and logs: :class:`~.render.TurnRenderer` plus the footer."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.renderer = TurnRenderer(console)

    def handle(self, event: AgentEvent) -> None:
        """Print what the event adds."""
        self.renderer.handle(event)

    def finish(self, result: AgentResult, *, continue_hint: str) -> None:
        """Print open calls and the footer."""
        self.renderer.flush()
        for line in footer_lines(result, continue_hint):
            self.console.print(line, soft_wrap=True)


class JsonView:
    """One JSON object, the final :class:`AgentResult`, on stdout."""

    def handle(self, event: AgentEvent) -> None:
        """Nothing until the end."""

    def finish(self, result: AgentResult, *, continue_hint: str) -> None:
        """Print the result object."""
        sys.stdout.buffer.write(orjson.dumps(result.to_dict(), option=orjson.OPT_APPEND_NEWLINE))
        sys.stdout.flush()


class NdjsonView:
    """The normalized events (``AgentEvent.to_dict()``), one per line, as they arrive."""

    def handle(self, event: AgentEvent) -> None:
        """Write the event's line and flush."""
        sys.stdout.buffer.write(orjson.dumps(event.to_dict(), option=orjson.OPT_APPEND_NEWLINE))
        sys.stdout.flush()

    def finish(self, result: AgentResult, *, continue_hint: str) -> None:
        """Nothing more: the last events said it all."""


class LiveView:
    """The live terminal view (see the module docstring)."""

    TAIL_LINES = 12  # lines of the streaming segment kept in the live region

    def __init__(self, console: Console) -> None:
        self.console = console
        self.transcript = Transcript(keep_events=False)
        self.started = time.monotonic()
        self.segment: list[str] = []  # text of the current segment, as it streams
        self.segment_from_deltas = False
        self.thinking: list[str] = []
        self.running: dict[str, ToolCall] = {}
        self.spinner = Spinner("dots", style="cyan")  # one object, so that it turns
        self.live = Live(self, console=console, refresh_per_second=10, transient=True,
                         redirect_stdout=False, redirect_stderr=False)
        self.live.start()

    # what the live region shows ------------------------------------------------------------

    def __rich__(self) -> RenderableType:
        parts: list[RenderableType] = []
        if self.segment:
            lines = "".join(self.segment).splitlines()[-self.TAIL_LINES:]
            parts.append(Text("\n".join(lines)))
        for call in self.running.values():
            parts.append(tool_line(self.transcript.tool_call(call.call_id) or call))
        elapsed = time.monotonic() - self.started
        status = Text(f"{elapsed:5.1f} s", style="cyan")
        thought = "".join(self.thinking).strip().splitlines()
        if thought:
            status.append("  " + _shorten(thought[-1], self.console.width - 16),
                          style="dim italic")
        else:
            status.append("  working…" if not self.segment else "", style="dim")
        self.spinner.update(text=status)
        parts.append(self.spinner)
        return Group(*parts)

    # events ------------------------------------------------------------------------------

    def _flush_segment(self) -> None:
        text = "".join(self.segment)
        self.segment.clear()
        self.segment_from_deltas = False
        if text.strip():
            self.live.console.print(Text(text.rstrip("\n")))

    def handle(self, event: AgentEvent) -> None:
        """Update the view for one event."""
        self.transcript.add(event)
        etype = event.type
        if etype is EventType.ASSISTANT_DELTA:
            self.segment.append(event.text or "")
            self.segment_from_deltas = True
            self.thinking.clear()
        elif etype is EventType.ASSISTANT:
            if self.segment_from_deltas:
                self.segment = [event.text or ""]  # the recap replaces its deltas
                self.segment_from_deltas = False
            else:
                self.segment.append(event.text or "")
            self.thinking.clear()
        elif etype is EventType.THINKING_DELTA:
            self.thinking.append(event.text or "")
        elif etype is EventType.THINKING_COMPLETED:
            pass  # the latest thinking line stays until something else happens
        elif etype is EventType.TOOL_CALL_STARTED or etype is EventType.TOOL_CALL_COMPLETED:
            self._flush_segment()
            self.thinking.clear()
            call = self.transcript.tool_call(event.call_id or "")
            if call is None:
                return
            if call.status.finished:
                self.running.pop(call.call_id, None)
                self.live.console.print(tool_line(call))
            else:
                self.running[call.call_id] = call
        elif etype is EventType.SYSTEM_INIT:
            bits = [str(b) for b in (event.data.get("model"), event.data.get("cwd")) if b]
            if bits:
                self.live.console.print(Text("▶ " + " · ".join(bits), style="dim"))
        elif etype is EventType.ERROR:
            self.live.console.print(Text(f"error: {event.text or ''}", style="bold red"))
        elif etype is EventType.RAW and event.text:
            self.live.console.print(Text(event.text, style="dim italic"))
        self.live.refresh()

    def finish(self, result: AgentResult, *, continue_hint: str) -> None:
        """Stop the live region; print the final answer as Markdown, then the footer."""
        final = "".join(self.segment)
        self.segment.clear()
        self.live.stop()
        for call in result.tool_calls:
            if call.call_id in self.running:
                self.console.print(tool_line(call))
        self.running.clear()
        if final.strip():
            self.console.print(Markdown(final))
        for line in footer_lines(result, continue_hint):
            self.console.print(line)

    def stop(self) -> None:
        """Stop the live region without a result (used on an unexpected exit)."""
        if self.live.is_started:
            self.live.stop()


def _shorten(text: str, width: int) -> str:
    width = max(width, 10)
    return text if len(text) <= width else text[: width - 1] + "…"


def make_view(output: str, console: Console) -> TurnView:
    """The view for ``--output`` (``auto``: live on a terminal, else text).

    Example:
        >>> type(make_view("json", Console())).__name__
        'JsonView'
    """
    if output == "json":
        return JsonView()
    if output == "ndjson":
        return NdjsonView()
    if output == "live" or (output == "auto" and console.is_terminal):
        return LiveView(console)
    return TextView(console)
