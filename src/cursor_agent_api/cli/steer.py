"""``--acp`` on a terminal: each permission request, question and plan is asked inline.

:class:`TerminalSteering` gives the three callbacks of an ACP turn (``can_use_tool``,
``on_question``, ``on_plan``). They run on a worker thread (the library runs sync callbacks
off its event loop); while one asks, the live view is paused (``with steering.lock`` around
the view) and the line is read from stdin with a poll, so that Ctrl-C — which cancels the
turn on the main thread — also ends a pending question (:meth:`TerminalSteering.interrupt`)
instead of leaving a reader behind that would eat the chat's next line.

What the agent sent is shown as data (escaped), never as markup.

Example:
    >>> import io
    >>> from rich.console import Console
    >>> steer = TerminalSteering(Console(file=io.StringIO()), reader=lambda: "a")
    >>> from cursor_agent_api.permissions import PermissionRequest
    >>> from cursor_agent_api.protocol.tools import ToolCall, ToolKind
    >>> steer.can_use_tool(PermissionRequest("s", ToolCall("c", ToolKind.SHELL, args={"command": "ls"})))
    Allow(remember=False)
"""

from __future__ import annotations

import os
import select
import sys
import threading
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.markdown import Markdown
from rich.syntax import Syntax
from rich.text import Text

from ..permissions import (
    Accept,
    Allow,
    Answer,
    Deny,
    PermissionDecision,
    PermissionRequest,
    Plan,
    PlanDecision,
    QuestionDecision,
    QuestionRequest,
    Reject,
    Skip,
)
from .render import printable

__all__ = ["TerminalSteering"]


def _safe(text: str | None) -> str:
    return printable(text or "")  # escapes shown (\x1b…), so the person sees what would run


class TerminalSteering:
    """The ``--acp`` callbacks of a terminal session (see the module's text)."""

    def __init__(self, console: Console, *, reader: Callable[[], str | None] | None = None
                 ) -> None:
        self.console = console
        self.lock = threading.RLock()
        """Held while a question is on screen; the command holds it around view updates."""
        self.view: Any = None
        """The turn's view: its live region is paused while asking."""
        self._reader = reader
        self._stop = threading.Event()

    def interrupt(self) -> None:
        """Ctrl-C: a pending question ends unanswered (the turn is being cancelled)."""
        self._stop.set()

    def reset(self) -> None:
        """A new turn: questions may be asked again."""
        self._stop.clear()

    def settle(self) -> None:
        """The turn is over: end a question still on screen and wait until it has gone (so
        that no reader is left to eat the chat's next line, no live region is restarted)."""
        self._stop.set()
        with self.lock:
            pass

    # ---- reading -----------------------------------------------------------------------

    def _read(self, prompt: str) -> str | None:
        """One line from the person (``None``: interrupted or end of input)."""
        self.console.print(Text(prompt, style="bold"), end="")
        if self._reader is not None:
            return self._reader()
        fd = sys.stdin.fileno()
        buf = b""
        while not self._stop.is_set():
            ready, _, _ = select.select([fd], [], [], 0.1)
            if not ready:
                continue
            chunk = os.read(fd, 1024)
            if not chunk:
                return None
            buf += chunk
            if b"\n" in buf or b"\r" in buf:
                return buf.decode("utf-8", "replace").strip()
        self.console.print()
        return None

    def _ask(self, show: Callable[[], None], prompt: str) -> str | None:
        with self.lock:
            live: Any = getattr(self.view, "live", None)
            paused = live is not None and live.is_started
            if paused:
                live.stop()
            try:
                show()
                return self._read(prompt)
            finally:
                if paused and live is not None and not self._stop.is_set():
                    live.start()

    # ---- the callbacks -----------------------------------------------------------------

    def can_use_tool(self, request: PermissionRequest) -> PermissionDecision:
        """Allow once / allow always / reject, after showing the command, path or diff."""

        def show() -> None:
            c = self.console
            c.print(Text(f"⚠ the agent asks to use {request.kind.value}", style="bold yellow"))
            if request.command:
                c.print(Text("  $ " + _safe(request.command)))
            elif request.path:
                c.print(Text("  " + _safe(request.path)))
            elif request.mcp_tool:
                c.print(Text(f"  MCP {_safe(request.mcp_server) or '?'}:{_safe(request.mcp_tool)}"))
            elif request.title:
                c.print(Text("  " + _safe(request.title)))
            if request.diff:
                c.print(Syntax(_safe(request.diff), "diff", theme="ansi_dark"))
            if request.reason:
                c.print(Text("  " + _safe(request.reason), style="dim"))

        answer = self._ask(show, "  [a] allow once  [w] allow always  [r] reject (default) › ")
        choice = (answer or "").strip().lower()
        if choice in ("a", "y", "yes", "allow"):
            return Allow()
        if choice in ("w", "always"):
            return Allow(remember=True)
        return Deny("rejected at the terminal" if answer is not None else "no answer")

    def on_question(self, request: QuestionRequest) -> QuestionDecision:
        """Each question with its numbered options; Enter skips."""
        choices: dict[str, list[str]] = {}
        for question in request.questions:
            def show(q: Any = question) -> None:
                self.console.print(Text(f"? {_safe(q.prompt or request.title)}", style="bold cyan"))
                for i, option in enumerate(q.options, 1):
                    self.console.print(Text(f"  {i}. {_safe(option.label)}"))

            answer = self._ask(show, "  number (Enter skips) › ")
            if answer is None:
                return Skip("interrupted")
            picked = [question.options[int(w) - 1].id for w in answer.replace(",", " ").split()
                      if w.isascii() and w.isdigit() and 0 < int(w) <= len(question.options)]
            if picked:
                choices[question.id] = picked if question.allow_multiple else picked[:1]
        return Answer(choices) if choices else Skip("skipped at the terminal")

    def on_plan(self, plan: Plan) -> PlanDecision:
        """The plan, then accept or reject."""

        def show() -> None:
            self.console.print(Text(f"📋 plan: {_safe(plan.name)}", style="bold cyan"))
            self.console.print(Markdown(_safe(plan.plan or plan.overview)))

        answer = self._ask(show, "  accept the plan? [y/N] › ")
        if (answer or "").strip().lower() in ("y", "yes"):
            return Accept()
        return Reject("rejected at the terminal")

    def fields(self) -> dict[str, Any]:
        """The :class:`~cursor_agent_api.config.AgentConfig` fields of these callbacks."""
        return {"can_use_tool": self.can_use_tool, "on_question": self.on_question,
                "on_plan": self.on_plan}
