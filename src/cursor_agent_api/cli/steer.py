"""``--acp`` on a terminal: each permission request, question and plan is asked inline.

:class:`TerminalSteering` gives the three callbacks of an ACP turn (``can_use_tool``,
``on_question``, ``on_plan``). Each question runs on a worker thread; while it is on screen,
the live view is paused and the turn's view updates are kept (:meth:`TerminalSteering.show`
never waits for the person: the event path goes on, so a ``--timeout``, a crash or a cancel
ends the turn as it would without a question). The line is read from stdin with a poll, and
a question ends unanswered when the library stops waiting for it (the turn ends or is
cancelled, ``permission_timeout``), on Ctrl-C (:meth:`TerminalSteering.interrupt`) and when
the turn is over (:meth:`TerminalSteering.settle`): no reader is left behind to eat the
chat's next line. A line typed before a question is shown is discarded, not taken as its
answer.

What the agent sent is shown as data: escaped (:func:`~.render.printable`), a command, a
reason or a plan line by line, each line marked, with its number of lines when more than
one, so that text of the agent's can neither hide what runs nor pass for the prompt.
"allow always" says which rule it saves, and where (:mod:`.always`).

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

import asyncio
import contextlib
import os
import select
import shlex
import sys
import termios
import threading
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from rich.console import Console
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
    Question,
    QuestionDecision,
    QuestionRequest,
    Reject,
    Skip,
    decide_by_rules,
)
from .always import allowlist_file, remembered_rule
from .render import printable

__all__ = ["TerminalSteering", "unattended_calls", "unattended_plans"]

T = TypeVar("T")
R = TypeVar("R")

MARK = "  │ "
"""Before each line of a multi-line command, reason or plan: the agent's text, not ours."""


def _safe(text: str | None) -> str:
    return printable(text or "")  # escapes shown (\x1b…), so the person sees what would run


def _one_line(text: str | None) -> str:
    """A name, a path, a label: escaped, on one line (:func:`~.render.printable`'s
    ``one_line``: a newline in it shown as ``\\n``, a backslash as ``\\\\``)."""
    return printable(text or "", one_line=True)


def _framed(text: str, style: str = "") -> list[Text]:
    """The lines of ``text``, each marked (a run of three or more empty lines said in one)."""
    out: list[Text] = []
    empty = 0

    def flush_empty() -> None:
        nonlocal empty
        if empty >= 3:
            out.append(Text(f"{MARK}⋮ ({empty} empty lines)", style="dim"))
        else:
            out.extend(Text(MARK.rstrip(), style=style) for _ in range(empty))
        empty = 0

    for line in _safe(text).split("\n"):
        if not line.strip():
            empty += 1
            continue
        flush_empty()
        out.append(Text(MARK + line, style=style))
    flush_empty()
    return out


CATCH_UP = 2.0
"""Seconds a question waits, at most, for the view to show what came before it."""

REASON_LINES = 6
"""A reason's lines shown at most (the rest counted): it explains, the command is what runs,
and a long reason must not push the command off the screen."""


def _reason_lines(reason: str) -> list[str]:
    """The lines of a permission request's reason to show, empty ones left out.

    Example:
        >>> _reason_lines("Not in allowlist: rm\\n\\n" + "x\\n" * 20)[-1]
        '… (15 more lines)'
    """
    lines = [line for line in _safe(reason).split("\n") if line.strip()]
    if len(lines) <= REASON_LINES:
        return lines
    return [*lines[:REASON_LINES], f"… ({len(lines) - REASON_LINES} more lines)"]


def _line_count(text: str | None) -> int:
    return len(_safe(text).split("\n"))


def _typed_choice(question: Question, typed: str) -> tuple[list[str], str | None]:
    """The option ids a line typed at a question's prompt picks, or what is wrong with it.

    An option is picked by its number (``1``, ``1.``) or its label (any case, as the library
    takes a label); several are separated by commas (``1, Stop``) or, for numbers, spaces
    (``1 3``). Empty: none (the question skipped).

    Example:
        >>> from cursor_agent_api.permissions import QuestionOption
        >>> q = Question("q1", "Go on?", (QuestionOption("go", "Go ahead"), QuestionOption("no", "Stop")))
        >>> _typed_choice(q, "1."), _typed_choice(q, "go ahead"), _typed_choice(q, "")
        ((['go'], None), (['go'], None), ([], None))
        >>> _typed_choice(q, "#1")
        ([], "'#1' is not an option: type its number (1 to 2) or its label; Enter skips")
    """
    options = question.options

    def one(part: str) -> str | None:
        word = part.strip().removesuffix(".").strip()
        if word.isascii() and word.isdigit() and 0 < int(word) <= len(options):
            return options[int(word) - 1].id
        by_label = [o.id for o in options if o.label.strip().casefold() == part.strip().casefold()]
        return by_label[0] if len(by_label) == 1 else None

    whole = one(typed) if typed.strip() else None  # (a label may hold a comma)
    picked: list[str] = []
    for part in [] if whole is not None else typed.split(","):
        if not part.strip():
            continue
        got = one(part)
        numbers = [one(word) for word in part.split()]
        if got is not None:
            picked.append(got)
        elif len(numbers) > 1 and all(numbers):
            picked.extend(n for n in numbers if n is not None)
        else:
            which = f"type its number (1 to {len(options)}) or its label" if options else \
                "it has no options"
            return [], f"{_one_line(part.strip())!r} is not an option: {which}; Enter skips"
    picked = [whole] if whole is not None else list(dict.fromkeys(picked))
    if len(picked) > 1 and not question.allow_multiple:
        return [], "this question takes one option: type one number or label; Enter skips"
    return picked, None


class TerminalSteering:
    """The ``--acp`` callbacks of a terminal session (see the module's text).

    ``console`` is where the questions go (stderr: stdout may be a pipe, JSON, a file);
    ``env`` the agent's environment (where "allow always" saves its rule).
    """

    def __init__(self, console: Console, *, reader: Callable[[], str | None] | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        self.console = console
        self.lock = threading.RLock()
        """Held while a question is on screen (and while view updates are applied)."""
        self.view: Any = None
        """The turn's view: its live region is paused while asking."""
        self._reader = reader
        self._env = os.environ if env is None else env
        self._stop = threading.Event()
        self._local = threading.local()  # the question's own stop (the library gave up on it)
        self._updates: deque[tuple[Callable[[], None], bool]] = deque()
        self._updates_lock = threading.Lock()
        self._caught_up = threading.Condition()
        self._requests_shown = 0  # this turn: the agent's requests the view has shown
        self._requests_asked = 0  # this turn: the questions the callbacks were called for

    def interrupt(self) -> None:
        """Ctrl-C: a pending question ends unanswered (the turn is being cancelled)."""
        self._stop.set()
        self._wake()

    def reset(self) -> None:
        """A new turn: questions may be asked again."""
        self._stop.clear()
        with self._caught_up:
            self._requests_shown = self._requests_asked = 0

    def settle(self) -> None:
        """The turn is over: end a question still on screen, wait until it has gone (so
        that no reader is left to eat the chat's next line, no live region is restarted),
        then apply the view updates kept meanwhile."""
        self._stop.set()
        self._wake()
        with self.lock:
            self._apply_updates()

    def _wake(self) -> None:
        """A question waiting for the view to catch up looks again (it may have been stopped)."""
        with self._caught_up:
            self._caught_up.notify_all()

    # ---- the view ----------------------------------------------------------------------

    def show(self, update: Callable[[], None], *, request: bool = False) -> None:
        """Apply a view update now, or, while a question is on screen, once it has gone.
        ``request``: the update shows one of the agent's requests (its question follows, and
        waits for what the agent said before it to be shown first).

        Never waits for the person: whoever holds :attr:`lock` applies what is kept.

        Example:
            >>> import io
            >>> steer, seen = TerminalSteering(Console(file=io.StringIO())), []
            >>> steer.show(lambda: seen.append(1))
            >>> seen
            [1]
        """
        with self._updates_lock:
            self._updates.append((update, request))
        while self.lock.acquire(blocking=False):
            try:
                self._apply_updates()
            finally:
                self.lock.release()
            with self._updates_lock:
                if not self._updates:
                    return
        # a question is on screen: its asker applies the updates once it has gone

    def _apply_updates(self) -> None:
        """Apply the kept updates, in order (with :attr:`lock` held)."""
        while True:
            with self._updates_lock:
                if not self._updates:
                    return
                update, request = self._updates.popleft()
            update()
            if request:
                with self._caught_up:
                    self._requests_shown += 1
                    self._caught_up.notify_all()

    # ---- reading -----------------------------------------------------------------------

    def _stopped(self) -> bool:
        own: threading.Event | None = getattr(self._local, "stop", None)
        return self._stop.is_set() or (own is not None and own.is_set())

    def _read(self, prompt: str) -> str | None:
        """One line from the person (``None``: interrupted or end of input)."""
        if self._reader is not None:
            self.console.print(Text(prompt, style="bold"), end="")
            return self._reader()
        if sys.stdin is None:
            return None
        fd = sys.stdin.fileno()
        with contextlib.suppress(termios.error, OSError):  # type-ahead is not an answer: only
            termios.tcflush(fd, termios.TCIFLUSH)  # what is typed once the prompt shows counts
        self.console.print(Text(prompt, style="bold"), end="")
        buf = b""
        while not self._stopped():
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
        self.console.print(Text("  (closed unanswered)", style="dim"))
        return None

    def _ask(self, show: Callable[[], None], prompt: str,
             problem: Callable[[str], str | None] | None = None) -> str | None:
        """``show()``, then the person's line (``None``: interrupted or end of input). While
        ``problem(line)`` says what is wrong with it, that is said in one line and the prompt
        shown again."""
        number = getattr(self._local, "number", 0)
        if number:  # the agent's text before its request is shown first (if it comes soon)
            with self._caught_up:
                self._caught_up.wait_for(
                    lambda: self._requests_shown >= number or self._stopped(), CATCH_UP)
        try:
            with self.lock:
                if self._stopped():  # given up on while another question was on screen
                    return None
                live: Any = getattr(self.view, "live", None)
                paused = live is not None and live.is_started
                if paused:
                    live.stop()
                try:
                    end_line = getattr(self.view, "end_line", None)
                    if end_line is not None:
                        end_line()  # the question starts on a line of its own
                    show()
                    answer = self._read(prompt)
                    while answer is not None and problem is not None:
                        said = problem(answer)
                        if said is None:
                            break
                        self.console.print(Text("  " + said, style="yellow"))
                        answer = self._read(prompt)
                    return answer
                finally:
                    if paused and live is not None and not self._stop.is_set():
                        live.start()
                    self._apply_updates()
        finally:
            self.show(lambda: None)  # what came in while the lock was being released

    async def _off_loop(self, fn: Callable[[T], R], arg: T) -> R:
        """``fn(arg)`` in a thread; if the library stops waiting (the turn ends or is
        cancelled, a ``permission_timeout``), the question on screen ends unanswered."""
        stop = threading.Event()

        def call() -> R:
            with self._caught_up:
                self._requests_asked += 1
                self._local.number = self._requests_asked
            self._local.stop = stop
            try:
                return fn(arg)
            finally:
                self._local.stop = None
                self._local.number = 0

        try:
            return await asyncio.to_thread(call)
        except asyncio.CancelledError:
            stop.set()
            self._wake()
            raise

    # ---- the callbacks -----------------------------------------------------------------

    def can_use_tool(self, request: PermissionRequest) -> PermissionDecision:
        """Allow once / allow always / reject, after showing the command, path or diff."""
        lines = _line_count(request.command) if request.command else 1
        rule = remembered_rule(request)
        offered = not request.options or any(o.kind == "allow_always" for o in request.options)

        def show() -> None:
            c = self.console
            c.print(Text(f"⚠ the agent asks to use {request.kind.value}", style="bold yellow"))
            if request.command and lines > 1:
                c.print(Text(f"  $ ({lines} lines)", style="bold"))
                for line in _framed(request.command):
                    c.print(line)
            elif request.command:
                c.print(Text("  $ " + _safe(request.command)))
            elif request.path:
                c.print(Text("  " + _one_line(request.path)))
            elif request.mcp_tool:
                c.print(Text(f"  MCP {_one_line(request.mcp_server) or '?'}:"
                             f"{_one_line(request.mcp_tool)}"))
            elif request.tool_call.url:  # what is fetched, not the title the agent gave it
                c.print(Text("  " + _one_line(request.tool_call.url)))
            elif request.title:
                c.print(Text("  " + _one_line(request.title)))
            if request.diff:
                from rich.syntax import Syntax  # pygments: only for a diff to show

                c.print(Syntax(_safe(request.diff), "diff", theme="ansi_dark"))
            if request.reason:
                for said in _reason_lines(request.reason):
                    c.print(Text("  # " + said, style="dim"))
            if rule and offered:
                c.print(Text(f"  [w] saves {_one_line(rule)} in {allowlist_file(self._env)}: "
                             "every such call then runs without asking, in every folder",
                             style="dim"))
            if lines > 1:
                c.print(Text(f"  (the command above has {lines} lines: read them all)",
                             style="bold yellow"))

        answer = self._ask(show, "  [a] allow once  [w] allow always  [r] reject (default) › ")
        choice = (answer or "").strip().lower()
        if choice in ("a", "y", "yes", "allow"):
            return Allow()
        if choice in ("w", "always"):
            return Allow(remember=True)
        return Deny("rejected at the terminal" if answer is not None else "no answer")

    def on_question(self, request: QuestionRequest) -> QuestionDecision:
        """Each question with its numbered options (and the request's title first); a number
        or a label picks an option, what is not one is said and asked again; Enter skips."""
        choices: dict[str, list[str]] = {}
        for n, question in enumerate(request.questions):
            def show(q: Any = question, first_question: bool = n == 0) -> None:
                if first_question and request.title and q.prompt and request.title != q.prompt:
                    self.console.print(Text(_one_line(request.title), style="bold cyan"))
                first, *rest = _safe(q.prompt or request.title).split("\n")
                self.console.print(Text(f"? {first}", style="bold cyan"))
                for line in rest:
                    self.console.print(Text(MARK + line, style="cyan"))
                for i, option in enumerate(q.options, 1):
                    self.console.print(Text(f"  {i}. {_one_line(option.label)}"))

            def problem(typed: str, q: Question = question) -> str | None:
                return _typed_choice(q, typed)[1]

            answer = self._ask(show, "  number (Enter skips) › ", problem)
            if answer is None:
                return Skip("interrupted")
            picked, _ = _typed_choice(question, answer)
            if picked:
                choices[question.id] = picked
        return Answer(choices) if choices else Skip("skipped at the terminal")

    def on_plan(self, plan: Plan) -> PlanDecision:
        """The plan as plain text (every character of it: a Markdown rendering would hide
        comments, HTML and link targets), then accept or reject."""
        text = plan.plan or plan.overview
        lines = _line_count(text)

        def show() -> None:
            c = self.console
            c.print(Text(f"📋 plan: {_one_line(plan.name)} ({lines} "
                         f"line{'s' if lines != 1 else ''}, as the agent wrote it)",
                         style="bold cyan"))
            if plan.plan and plan.overview:
                c.print(Text("  overview: " + _one_line(plan.overview), style="cyan"))
            for line in _framed(text):
                c.print(line)

        answer = self._ask(show, "  accept the plan? [y/N] › ")
        if (answer or "").strip().lower() in ("y", "yes"):
            return Accept()
        return Reject("rejected at the terminal")

    # ---- the library's callbacks ---------------------------------------------------------

    async def _can_use_tool(self, request: PermissionRequest) -> PermissionDecision:
        return await self._off_loop(self.can_use_tool, request)

    async def _on_question(self, request: QuestionRequest) -> QuestionDecision:
        return await self._off_loop(self.on_question, request)

    async def _on_plan(self, plan: Plan) -> PlanDecision:
        return await self._off_loop(self.on_plan, plan)

    def fields(self, *, force: bool = False) -> dict[str, Any]:
        """The :class:`~cursor_agent_api.config.AgentConfig` fields of these callbacks (async:
        the library cancels one it stops waiting for, and its question ends). With ``force``
        (``--force``: the agent asks no permission) only the questions and plans are asked.

        Example:
            >>> import io
            >>> steer = TerminalSteering(Console(file=io.StringIO()))
            >>> sorted(steer.fields()), sorted(steer.fields(force=True))
            (['can_use_tool', 'on_plan', 'on_question'], ['on_plan', 'on_question'])
        """
        fields = {"can_use_tool": self._can_use_tool, "on_question": self._on_question,
                  "on_plan": self._on_plan}
        if force:
            del fields["can_use_tool"]
        return fields


def unattended_calls(console: Console) -> Callable[[PermissionRequest], PermissionDecision]:
    """``--acp`` with no one to ask, and no rule that allows a call: the ``can_use_tool`` that
    rejects it, as the rules would, and says why once, in one line on ``console`` (as
    :func:`unattended_plans` does for a plan), with the ``--allow`` rule that would allow it.

    Example:
        >>> import io
        >>> from cursor_agent_api.protocol.tools import ToolCall, ToolKind
        >>> out = io.StringIO()
        >>> reject = unattended_calls(Console(file=out, width=200))
        >>> def shell(command: str) -> PermissionRequest:
        ...     return PermissionRequest("s", ToolCall("c", ToolKind.SHELL, args={"command": command}))
        >>> reject(shell("touch a"))
        Deny(reason='no terminal to ask: a call is allowed only by --allow RULE')
        >>> reject(shell("make"))
        Deny(reason='no terminal to ask: a call is allowed only by --allow RULE')
        >>> print(out.getvalue().strip())
        ⊘ the agent's shell call touch a was rejected: no terminal to ask (allow it: --allow 'Shell(touch)')
    """
    said = threading.Event()

    def can_use_tool(request: PermissionRequest) -> PermissionDecision:
        if not said.is_set():
            said.set()
            what = request.command or request.path or request.tool_call.url or request.title
            console.print(Text(f"⊘ the agent's {request.kind.value} call {_one_line(what)} was "
                               f"rejected: no terminal to ask (allow it: {_allow_flag(request)})",
                               style="yellow"), soft_wrap=True)
        return Deny("no terminal to ask: a call is allowed only by --allow RULE")

    return can_use_tool


def _allow_flag(request: PermissionRequest) -> str:
    """The ``--allow`` flag that would let ``request`` through, safe to paste into a shell (the
    rule, the agent's text, quoted for it), or ``--allow RULE`` when no one rule would (a
    compound command: each of its commands needs its own), when the rule holds a wildcard (the
    agent's text: a command named ``*`` would suggest ``Shell(*)``, every command) or it cannot
    be shown on one line.

    Example:
        >>> from cursor_agent_api.protocol.tools import ToolCall, ToolKind
        >>> def edit(path: str) -> PermissionRequest:
        ...     return PermissionRequest("s", ToolCall("c", ToolKind.EDIT, args={"path": path}))
        >>> print(_allow_flag(edit("/w/x'$(touch PWNED)'.txt")))
        --allow 'Write(/w/x'"'"'$(touch PWNED)'"'"'.txt)'
    """
    rule = remembered_rule(request)
    if not rule or any(c in "*?[]" for c in rule) or not isinstance(
            decide_by_rules(request, mode="deny", allowed=[rule], denied=[]), Allow):
        return "--allow RULE"  # (a glob from the agent's text allows more than this call)
    quoted = shlex.quote(rule)
    return f"--allow {quoted}" if _one_line(quoted) == quoted else "--allow RULE"


def unattended_plans(console: Console, *, force: bool) -> Callable[[Plan], PlanDecision]:
    """``--acp`` with no one to ask: the ``on_plan`` that decides each plan and says so, in
    one line on ``console``. A plan is rejected, unless ``force`` (``--force``: approve
    everything) accepts it.

    Example:
        >>> import io
        >>> out = io.StringIO()
        >>> unattended_plans(Console(file=out, width=200), force=False)(
        ...     Plan("s", "Wipe", "1. rm -rf ."))
        Reject(reason='no terminal to ask: a plan is accepted only at a terminal or with --force')
        >>> unattended_plans(Console(file=out, width=200), force=True)(Plan("s", "Tidy", "1. …"))
        Accept()
        >>> print(out.getvalue().strip())
        ⊘ the agent's plan "Wipe" was rejected: no terminal to ask (run at a terminal to review it)
        ✓ the agent's plan "Tidy" was accepted (--force)
    """

    def on_plan(plan: Plan) -> PlanDecision:
        name = _one_line(plan.name)
        if force:
            console.print(Text(f"✓ the agent's plan \"{name}\" was accepted (--force)",
                               style="yellow"), soft_wrap=True)
            return Accept()
        console.print(Text(f"⊘ the agent's plan \"{name}\" was rejected: no terminal to ask "
                           "(run at a terminal to review it)", style="yellow"), soft_wrap=True)
        return Reject("no terminal to ask: a plan is accepted only at a terminal or with --force")

    return on_plan
