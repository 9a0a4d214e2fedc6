"""The deterministic agent: reads the prompt, does real work on the workspace, and yields
the turn's events in the exact shapes of current builds (through :mod:`.wire`).

What it understands (case-insensitive; see docs/simulator.md for examples):

* ``list the files`` / ``ls`` / ``tree`` / ``directory`` -> ``lsToolCall`` of the real tree;
* ``read notes.txt``, or any existing file named in the prompt -> ``readToolCall``;
* ``grep TODO`` / ``search for "x"`` -> ``grepToolCall``; ``glob *.py`` / a ``*`` pattern ->
  ``globToolCall``; several of these in one prompt run as parallel calls of one model call;
* ``create hello.txt with "Hi"``, ``write "x" to a.txt``, ``append probe13 to notes.txt``,
  ``replace "a" with "b" in f.txt`` -> ``editToolCall`` that really changes the file
  (append and replace read the file first, like recording 08);
* ``run `cmd` `` / ``run the shell command: cmd`` -> ``shellToolCall``: runs only with
  ``--force``; without it the call is rejected exactly like recording 07 (reason "");
* ``fetch https://…`` -> ``webFetchToolCall``: rejected through an ``interaction_query``
  pair without ``--force`` (recording 04); with it, approved, then an error (no network);
* ``search the web for X`` -> ``webSearchToolCall``: without ``--force`` only the query pair
  and a completion with no ``started`` (recording 03); with it, an error (no network);
* ``delete a.txt`` -> ``deleteToolCall`` that really deletes the file;
* ``ask me …`` -> ``askQuestionToolCall``, always skipped in print mode (recording 05);
* ``todo`` / ``plan`` -> ``updateTodosToolCall``;
* the name of a tool of a loaded MCP server, optionally followed by its arguments as a JSON
  object (``lookup_order {"order_id": "A1"}``) -> ``mcpToolCall`` through ``tools/call``
  (:mod:`.mcp_client`);
* ``what did I ask before?`` -> answers from the chat's earlier turns;
* ``what is 6 * 7`` -> ``42``; ``reply with exactly: X`` -> ``X``; ``… reply with DONE at the
  end`` -> the answer ends with ``DONE``; anything else gets a short, fixed reply.

Nothing here writes to stdout: the events go to the caller (:mod:`.run`).

Example:
    >>> plan_turn("list the files and read notes.txt", has_file=lambda n: n == "notes.txt").kinds()
    [['lsToolCall', 'readToolCall']]
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import wire
from . import workspace as tools
from .ids import Clock, TurnIds
from .mcp_client import McpSession, mcp_calls
from .store import Turn

HUGE_LINE_BYTES = 20 * 1024 * 1024
UNICODE_LINE = "Unicode check: naïve café — 日本語 ✓ 🚀"

_URL = re.compile(r"https?://[^\s'\"<>`)\]]+")
_BACKTICK = re.compile(r"`([^`]+)`")
_DQUOTE = re.compile(r"\"([^\"]*)\"|“([^”]*)”")
_FILE = re.compile(r"(?<![\w/.-])((?:[\w-]+/)*[\w-]+\.[A-Za-z0-9]{1,8})(?![\w/-])")
_WILDCARD = re.compile(r"(?<!\S)([\w./-]*\*[\w./*{},-]*)")


# ---- the plan ------------------------------------------------------------------------------


@dataclass(slots=True)
class Action:
    """One tool call the agent will make. ``kind_key`` is its wire key (``lsToolCall``).

    Example:
        >>> Action("readToolCall", "I'll read `a.txt`.", "a.txt").target
        'a.txt'
    """

    kind_key: str
    intro: str
    target: str = ""
    text: str = ""
    extra: str = ""
    outcome: dict[str, Any] = field(default_factory=dict)
    answer: str = ""


@dataclass(slots=True)
class Plan:
    """The turn's model calls (each a list of parallel tool calls) and its direct answer.

    Example:
        >>> Plan(direct="4").groups
        []
    """

    groups: list[list[Action]] = field(default_factory=list)
    direct: str | None = None
    exact: str | None = None
    done: bool = False
    goal: str = "answer the question"

    def kinds(self) -> list[list[str]]:
        """The wire keys of the calls, per model call.

        Example:
            >>> plan_turn("run `ls`").kinds()
            [['shellToolCall']]
        """
        return [[a.kind_key for a in g] for g in self.groups]


def _strip(text: str) -> str:
    return text.strip().strip("\"'`“”").rstrip(".").strip()


def _quoted(text: str) -> list[str]:
    out = [m.group(1) for m in _BACKTICK.finditer(text)]
    out += [m.group(1) if m.group(1) is not None else m.group(2) for m in _DQUOTE.finditer(text)]
    return out


def _shell_command(prompt: str) -> str | None:
    m = re.search(r"\b(?:run|execute)\b", prompt, re.I)
    if not m:
        return None
    rest = prompt[m.end() :]
    ticks = _BACKTICK.search(rest)
    if ticks:
        return ticks.group(1).strip()
    m2 = re.search(r"(?:the\s+)?(?:shell\s+)?command\s*:?\s*(.+)", rest, re.I | re.S)
    body = m2.group(1) if m2 else (rest.split(":", 1)[1] if rest.lstrip().startswith(":") else rest)
    body = re.split(r"\s+and\s+(?:report|tell|show|print|reply|give|then)\b|[.;]\s|\n", body, maxsplit=1)[0]
    body = _strip(body)
    return body or None


def _edit_actions(prompt: str, has_file: Callable[[str], bool]) -> tuple[list[Action], list[Action]]:
    """(reads first, edits) for the edit requests of a prompt."""
    p = prompt
    m = re.search(
        r"\bappend\s+(?:the\s+)?(?:line|text|string|word)?\s*(.+?)\s+to\s+(?:the\s+end\s+of\s+)?(?:the\s+file\s+)?([\w./-]+\.\w+)",
        p,
        re.I | re.S,
    )
    if m:
        text, target = _strip(m.group(1)), m.group(2)
        read = Action("readToolCall", f"I'll read `{target}` and append `{text}` to the end.", target)
        return [read], [Action("editToolCall", "", target, text, "append")]
    m = re.search(
        r"\breplace\s+(.+?)\s+with\s+(.+?)\s+in\s+(?:the\s+file\s+)?([\w./-]+\.\w+)", p, re.I | re.S
    )
    if m:
        old, new, target = _strip(m.group(1)), _strip(m.group(2)), m.group(3)
        read = Action("readToolCall", f"I'll read `{target}`", target)
        return [read], [
            Action("editToolCall", f"and replace `{old}` with `{new}`.", target, new, "replace:" + old)
        ]
    m = re.search(r"\b(?:create|write|make|add|overwrite|save)\b", p, re.I)
    if not m:
        return [], []
    files = [f for f in _FILE.findall(p) if not _URL.search(f)]
    if not files:
        return [], []
    target = files[0]
    content: str | None = None
    m2 = re.search(
        r"\b(?:with\s+(?:the\s+)?(?:content|contents|text|line)s?|containing|saying|that\s+says)\s*:?\s*(.+)$",
        p,
        re.I | re.S,
    )
    quoted = _quoted(p)
    if quoted:
        content = quoted[0]
    elif m2:
        content = _strip(re.split(r"\.\s+(?:reply|then|and)\b", m2.group(1), maxsplit=1, flags=re.I)[0])
    else:
        m3 = re.search(r"\bwrite\s+(.+?)\s+(?:to|into)\s+", p, re.I | re.S)
        if m3:
            content = _strip(m3.group(1))
    if content is None:
        content = "Created by cursor-agent-sim."
    if not content.endswith("\n"):
        content += "\n"
    verb = "update" if has_file(target) else "create"
    return [], [Action("editToolCall", f"I'll {verb} `{target}`.", target, content, "write")]


def plan_turn(
    prompt: str,
    *,
    has_file: Callable[[str], bool] = lambda name: False,
    history: list[Turn] | None = None,
    force: bool = False,
    mcp_tools: Mapping[str, str] | None = None,
) -> Plan:
    """Decide what the agent does for ``prompt``. Pure: no I/O beyond ``has_file``.

    Example:
        >>> plan_turn("What is 6 * 7?").direct
        '42'
        >>> plan_turn("append probe13 to notes.txt").kinds()
        [['readToolCall'], ['editToolCall']]
    """
    history = history or []
    low = prompt.lower()
    plan = Plan()
    m = re.search(r"reply\s+with\s+exactly\s*:?\s*(.+?)\s*$", prompt, re.I | re.S)
    if m:
        plan.exact = _strip(m.group(1))
    plan.done = bool(re.search(r"\b(?i:reply|respond|end|finish)\b[^.]*\bDONE\b", prompt))

    # memory questions: no tools
    if _MEMORY_QUESTION.search(low):
        plan.goal = "recall the earlier turns of this chat"
        if "remember" in low:
            # the question itself ("what did I ask you to remember?") is not a thing to remember
            wanted = [t.prompt for t in history if _is_remember_prompt(t.prompt)]
            plan.direct = (
                f"You asked me to remember: {_after_remember(wanted[-1])}"
                if wanted
                else "You have not asked me to remember anything in this chat."
            )
        elif history:
            plan.direct = f'Before this, you asked: "{history[-1].prompt}"'
            if len(history) > 1:
                plan.direct += f" (that was message {len(history)} of this chat; the first was "
                plan.direct += f'"{history[0].prompt}")'
        else:
            plan.direct = "This is the first message of this chat: you have not asked anything before."
        return plan
    if re.search(r"^\s*remember\b", low):
        plan.goal = "remember something"
        plan.direct = f"Noted. I will remember: {_after_remember(prompt)}"
        return plan

    readonly: list[Action] = []
    later: list[list[Action]] = []
    first: list[list[Action]] = []

    tm = re.search(r"\b(?:todo\s*list|todos|to-dos?|plan)\b|\btodo:", low)
    if tm:
        # the todo items are the rest of the prompt; what comes before is read as usual
        items_text = prompt[tm.end() :].lstrip(" :")
        items = [_strip(x) for x in re.split(r",|;|\band\b|\n", items_text) if _strip(x)]
        if len(items) < 2:
            items = ["Understand the request", "Make the change", "Check the result"]
        first.append([Action("updateTodosToolCall", "I'll write down a plan.", text="\n".join(items[:8]))])
        prompt = prompt[: tm.start()]
        low = prompt.lower()

    command = _shell_command(prompt)
    web = (
        None if command else re.search(r"\bsearch\s+the\s+(?:web|internet)\s+for\s+(.+)", prompt, re.I | re.S)
    )
    if web:
        term = _strip(re.split(r"[.?!;]\s|\n", web.group(1), maxsplit=1)[0])
        later.append([Action("webSearchToolCall", f"I'll search the web for {term}.", term)])
        prompt = prompt[: web.start()]
        low = prompt.lower()
    dm = (
        None
        if command
        else re.search(r"\b(?:delete|remove)\s+(?:the\s+file\s+)?([\w./-]+\.\w+)", prompt, re.I)
    )
    if dm:
        later.append([Action("deleteToolCall", f"I'll delete `{dm.group(1)}`.", dm.group(1))])
        prompt = prompt[: dm.start()] + prompt[dm.end() :]
        low = prompt.lower()
    reads, edits = ([], []) if command else _edit_actions(prompt, has_file)
    readonly += reads

    if not command and not edits:
        if re.search(r"\b(?:list|ls|tree|director(?:y|ies)|folders?|what files|which files)\b", low):
            readonly.append(Action("lsToolCall", "I'll list the files in the workspace."))
        gm = re.search(
            r"\b(?:grep|search\s+for|look\s+for|occurrences\s+of|uses\s+of)\s+(.+)", prompt, re.I | re.S
        )
        if gm:
            q = _quoted(gm.group(1))
            pattern = q[0] if q else _strip(gm.group(1).split()[0])
            readonly.append(Action("grepToolCall", f"I'll search the workspace for `{pattern}`.", pattern))
        wm = next((w for w in _WILDCARD.finditer(prompt) if re.search(r"[\w.]", w.group(1))), None)
        globm = re.search(r"\bglob\s+(\S+)", prompt, re.I)
        if globm or (wm and not gm):
            pattern = _strip(globm.group(1)) if globm else wm.group(1) if wm else "*"
            readonly.append(Action("globToolCall", f"I'll find the files matching `{pattern}`.", pattern))

    url_m = _URL.search(prompt)
    if url_m and not command:
        url = url_m.group(0).rstrip(".,;:!?")
        later.append([Action("webFetchToolCall", f"I'll fetch {url}.", url)])

    mentioned = [] if command else [f for f in _FILE.findall(prompt) if not _URL.search(f)]
    explicit_read = re.search(r"\b(?:read|cat|open|show|print|contents?\s+of|summari[sz]e|look\s+at)\b", low)
    for name in mentioned:
        if any(a.target == name for a in reads + edits) or (url_m and name in url_m.group(0)):
            continue
        if has_file(name) or explicit_read:
            readonly.append(Action("readToolCall", f"I'll read `{name}`.", name))

    if command:
        later.append([Action("shellToolCall", f"I'll run `{command}`.", command)])
    if re.search(r"\bask\s+me\b", low):
        later.append([Action("askQuestionToolCall", "", text=prompt)])
    asked = mcp_calls(prompt, mcp_tools or {})
    if asked:  # first the schemas (parallel, once per tool, as recorded), then one model call each
        named = {name: server for server, name, _ in asked}
        later.append([Action("getMcpToolsToolCall", "", n, extra=srv) for n, srv in named.items()])
    for server, name, arguments in asked:
        later.append([Action("mcpToolCall", f"I'll call `{name}`.", name, json.dumps(arguments), server)])

    plan.groups.extend(first)
    if readonly:
        plan.groups.append(readonly)
    if edits:
        plan.groups.append(edits)
    plan.groups.extend(later)
    if plan.groups:
        plan.goal = " and ".join(_goal(a) for g in plan.groups for a in g)
        return plan

    plan.direct = _direct_answer(prompt)
    plan.goal = "answer directly"
    return plan


def _count(n: int, noun: str) -> str:
    plural = noun + ("es" if noun.endswith("ch") else "s")
    return f"{n} {noun if n == 1 else plural}"


_MEMORY_QUESTION = re.compile(
    r"what did i (?:ask|say|tell|write)|(?:previous|earlier|last) (?:question|prompt|message)"
)


def _is_remember_prompt(prompt: str) -> bool:
    """True for a prompt that asks to remember something, not for a question about it.

    Example:
        >>> _is_remember_prompt("Remember that the code word is BLUE")
        True
        >>> _is_remember_prompt("What did I ask you to remember?")
        False
    """
    low = prompt.lower()
    return re.search(r"\bremember\b", low) is not None and not _MEMORY_QUESTION.search(low)


def _after_remember(prompt: str) -> str:
    m = re.search(r"\bremember\b(?:\s+that)?\s*:?\s*(.+)", prompt, re.I | re.S)
    return _strip(m.group(1)) if m else prompt


def _goal(a: Action) -> str:
    return {
        "lsToolCall": "list the workspace",
        "readToolCall": f"read {a.target}",
        "grepToolCall": f"search for {a.target}",
        "globToolCall": f"find files matching {a.target}",
        "editToolCall": f"edit {a.target}",
        "shellToolCall": f"run {a.target}",
        "webFetchToolCall": f"fetch {a.target}",
        "webSearchToolCall": f"search the web for {a.target}",
        "deleteToolCall": f"delete {a.target}",
        "askQuestionToolCall": "ask a question first",
        "updateTodosToolCall": "plan the work",
        "mcpToolCall": f"call {a.target}",
        "getMcpToolsToolCall": f"look up the tool {a.target}",
    }.get(a.kind_key, a.kind_key)


def _direct_answer(prompt: str) -> str:
    m = re.search(r"(-?\d+(?:\.\d+)?)\s*([-+*/x×])\s*(-?\d+(?:\.\d+)?)", prompt)
    if m:
        a, op, b = float(m.group(1)), m.group(2), float(m.group(3))
        value: float | None
        if op == "+":
            value = a + b
        elif op == "-":
            value = a - b
        elif op in "*x×":
            value = a * b
        else:
            value = a / b if b else None
        if value is None:
            return "Division by zero is undefined."
        return str(int(value)) if value == int(value) else f"{value:g}"
    m = re.search(
        r"\b(?:say|respond\s+with|answer\s+with|reply\s+with)\s*:?\s*(.+?)\s*$", prompt, re.I | re.S
    )
    if m:
        return _strip(m.group(1))
    if re.search(r"\b(?:poem|story)\b", prompt, re.I):
        return (
            "River remembers the weathered stones and light\n"
            "River carries the small boats of our unspoken dreams\n"
            "River writes secret maps along the sleeping banks\n"
            "River keeps moving, learning language from the sea"
        )
    text = prompt.strip()
    if len(text) > 200:
        text = text[:200] + "…"
    return (
        f'You said: "{text}". I am cursor-agent-sim, a deterministic stand-in for the Cursor '
        "agent: ask me to list, read, search, create or edit files, run a command, or fetch a URL."
    )


# ---- the turn ------------------------------------------------------------------------------


@dataclass(slots=True)
class TurnContext:
    """Everything one turn needs (see :class:`Agent` for an example)."""

    session_id: str
    workspace: Path
    model: str
    prompt: str
    force: bool
    partial: bool
    history: list[Turn]
    clock: Clock
    ids: TurnIds
    api_key_source: str = "login"
    huge_line: bool = False
    unicode: bool = False
    mcp: McpSession | None = None


def split_text(text: str) -> list[str]:
    """Cut ``text`` into word-sized deltas the way real builds do (" word" with its space).

    Example:
        >>> split_text("River remembers\\nthe sea")
        ['River', ' remembers', '\\n', 'the', ' sea']
    """
    return re.findall(r"[ \t]*[^\s]+|\s", text) if text else []


class Agent:
    """Runs one turn: iterate :meth:`events` to get the wire objects in order (tools run
    as the iteration reaches them, so a killed turn stops where it was).

    Example:
        >>> import tempfile
        >>> from .ids import Clock, TurnIds
        >>> ws = Path(tempfile.mkdtemp())
        >>> ctx = TurnContext("c1", ws, "Auto", "What is 2+2?", False, False, [], Clock("x"),
        ...                   TurnIds("c1", 0, "What is 2+2?", call_style="call"))
        >>> agent = Agent(ctx)
        >>> [e["type"] for e in agent.events()][-1], agent.result_text
        ('result', '4')
    """

    def __init__(self, ctx: TurnContext) -> None:
        self.ctx = ctx
        self.segments: list[str] = []
        self.result_text = ""
        self.tool_count = 0
        self._query_id = 0

    def _has_file(self, name: str) -> bool:
        path = tools.inside(self.ctx.workspace, name)
        return path is not None and path.is_file()

    def events(self) -> Iterator[dict[str, Any]]:
        """The turn's wire objects, from ``system/init`` to ``result``."""
        ctx = self.ctx
        sid, clock = ctx.session_id, ctx.clock
        started_ms = clock.now_ms()
        yield wire.system_init(sid, str(ctx.workspace), ctx.model, api_key_source=ctx.api_key_source)
        yield wire.user(sid, ctx.prompt)
        plan = plan_turn(ctx.prompt, has_file=self._has_file, history=ctx.history, force=ctx.force,
                         mcp_tools=ctx.mcp.tools if ctx.mcp is not None else None)
        if ctx.huge_line:
            huge = Action("readToolCall", "I'll read `huge-line.log`.", "huge-line.log", extra="huge")
            if plan.groups and all(a.kind_key in _READONLY for a in plan.groups[0]):
                plan.groups[0].append(huge)
            else:
                plan.groups.insert(0, [huge])
        yield from self._thinking(f"The user wants me to {plan.goal}.")
        for n, group in enumerate(plan.groups):
            if n:
                yield from self._thinking(f"Next: {' and '.join(_goal(a) for a in group)}.")
            yield from self._group(n, group)
        if plan.groups:
            yield from self._thinking("That is everything; writing the answer.")
        final = self._final_text(plan)
        yield from self._say(final, None)
        self.result_text = "".join(self.segments)
        duration = max(1, clock.now_ms() - started_ms)
        yield wire.result_success(sid, ctx.ids.request_id, self.result_text, duration, self._usage(plan))

    # ---- pieces ----------------------------------------------------------------------------

    def _thinking(self, text: str) -> Iterator[dict[str, Any]]:
        sid, clock = self.ctx.session_id, self.ctx.clock
        words = split_text(text)
        chunks = [
            "".join(words[i : i + 3]) for i in range(0, len(words), 3)
        ]  # a few words per delta, as recorded
        for chunk in chunks:
            yield wire.thinking_delta(sid, chunk, clock.now_ms())
        yield wire.thinking_completed(sid, clock.now_ms())

    def _say(self, text: str, model_call_id: str | None) -> Iterator[dict[str, Any]]:
        if not text:
            return
        sid, clock = self.ctx.session_id, self.ctx.clock
        if self.ctx.partial:
            for piece in split_text(text):
                yield wire.assistant_delta(sid, piece, clock.now_ms())
        if model_call_id is not None:
            yield wire.assistant_segment(sid, text, model_call_id, clock.now_ms())
        else:
            yield wire.assistant_final(sid, text)
        self.segments.append(text)

    def _group(self, n: int, group: list[Action]) -> Iterator[dict[str, Any]]:
        ctx = self.ctx
        sid, clock, ids = ctx.session_id, ctx.clock, ctx.ids
        mcid = ids.model_call_id(n)
        intro = " ".join(a.intro for a in group if a.intro)
        if intro:
            yield from self._say(intro + "\n", mcid)
        calls: list[tuple[Action, str, dict[str, Any], str | None, int]] = []
        for k, action in enumerate(group):
            call_id = ids.call_id(n, k)
            args, description = self._args(action, call_id, mcid)
            if action.kind_key == "askQuestionToolCall":
                yield from self._ask_queries(call_id, args)
            started = clock.now_ms()
            calls.append((action, call_id, args, description, started))
            self.tool_count += 1
            if action.kind_key == "webSearchToolCall" and not ctx.force:
                # recording 03: the query pair, then a completion that no `started` preceded
                yield from self._queries("webSearchRequestQuery", args, skip_approval=None)
                continue
            yield wire.tool_call_started(
                sid,
                call_id,
                action.kind_key,
                args,
                model_call_id=mcid,
                started_at_ms=started,
                timestamp_ms=clock.now_ms(),
                description=description,
            )
            if action.kind_key == "webFetchToolCall" and not ctx.force:
                yield from self._queries("webFetchRequestQuery", args, skip_approval=False)
        # parallel calls complete in finish order: the simulator finishes the last started first
        for action, call_id, args, description, started in reversed(calls):
            outcome = self._execute(action)
            action.outcome = outcome
            keep = "rejected" not in outcome or action.kind_key == "askQuestionToolCall"
            done = clock.now_ms()
            yield wire.tool_call_completed(
                sid,
                call_id,
                action.kind_key,
                outcome,
                args=args if keep else None,
                model_call_id=mcid,
                started_at_ms=started,
                completed_at_ms=done,
                timestamp_ms=clock.now_ms(),
                description=description if keep else None,
            )

    def _args(self, a: Action, call_id: str, mcid: str) -> tuple[dict[str, Any], str | None]:
        ws = self.ctx.workspace
        kind = a.kind_key
        if kind == "lsToolCall":
            return wire.ls_args(str(ws)), None
        if kind == "readToolCall":
            path = tools.inside(ws, a.target)
            return wire.read_args(str(path) if path else a.target), None
        if kind == "grepToolCall":
            return wire.grep_args(a.target, str(ws)), None
        if kind == "globToolCall":
            return wire.glob_args(a.target, str(ws)), None
        if kind == "editToolCall":
            path = tools.inside(ws, a.target)
            return wire.edit_args(str(path) if path else a.target, self._new_content(a).rstrip("\n")), None
        if kind == "shellToolCall":
            description = f"Run {a.target.split()[0] if a.target.split() else 'command'}"
            args = wire.shell_args(
                a.target,
                call_id,
                conversation_id=self.ctx.session_id,
                request_id=self.ctx.ids.request_id,
                description=description,
            )
            return args, description
        if kind == "webFetchToolCall":
            return wire.web_fetch_args(a.target, call_id), None
        if kind == "webSearchToolCall":
            return wire.web_search_args(a.target, call_id), None
        if kind == "deleteToolCall":
            path = tools.inside(ws, a.target)
            return wire.delete_args(str(path) if path else a.target, call_id), None
        if kind == "askQuestionToolCall":
            questions = [
                {
                    "id": "choice",
                    "prompt": "How should I proceed?",
                    "options": [{"id": "a", "label": "Go ahead"}, {"id": "b", "label": "Stop"}],
                    "allowMultiple": False,
                }
            ]
            return wire.ask_question_args("Before I start", questions), None
        if kind == "mcpToolCall":
            return wire.mcp_args(a.extra, a.target, json.loads(a.text), call_id), f"Call {a.target}"
        if kind == "getMcpToolsToolCall":
            return wire.get_mcp_tools_args(a.extra, call_id, a.target), None
        if kind == "updateTodosToolCall":
            now = self.ctx.clock.now_ms()
            todos = [
                wire.todo_item(
                    str(i + 1), item, "TODO_STATUS_IN_PROGRESS" if i == 0 else "TODO_STATUS_PENDING", now
                )
                for i, item in enumerate(a.text.split("\n"))
            ]
            return wire.todos_args(todos, merge=False), None
        return {}, None

    def _new_content(self, a: Action) -> str:
        if a.extra == "write":
            return a.text
        path = tools.inside(self.ctx.workspace, a.target)
        try:
            before = path.read_text(encoding="utf-8", errors="replace") if path else ""
        except OSError:
            before = ""
        if a.extra == "append":
            sep = "" if not before or before.endswith("\n") else "\n"
            return before + sep + a.text.rstrip("\n") + "\n"
        if a.extra.startswith("replace:"):
            return before.replace(a.extra[len("replace:") :], a.text.rstrip("\n"))
        return a.text

    def _queries(
        self, qtype: str, args: dict[str, Any], *, skip_approval: bool | None
    ) -> Iterator[dict[str, Any]]:
        sid, clock = self.ctx.session_id, self.ctx.clock
        qid = self._query_id
        self._query_id += 1
        yield wire.interaction_request(sid, qid, qtype, args, clock.now_ms(), skip_approval=skip_approval)
        yield wire.interaction_response(sid, qid, qtype, wire.rejected("User Rejected"), clock.now_ms())

    def _ask_queries(self, call_id: str, args: dict[str, Any]) -> Iterator[dict[str, Any]]:
        sid, clock = self.ctx.session_id, self.ctx.clock
        qid = self._query_id
        self._query_id += 1
        qtype = "askQuestionInteractionQuery"
        yield wire.interaction_request(
            sid, qid, qtype, args, clock.now_ms(), skip_approval=None, tool_call_id=call_id
        )
        yield wire.interaction_response(sid, qid, qtype, wire.rejected(ASK_SKIPPED), clock.now_ms())

    def _execute(self, a: Action) -> dict[str, Any]:
        ctx = self.ctx
        ws = ctx.workspace
        kind = a.kind_key
        if kind == "lsToolCall":
            outcome, names = tools.tree(ws)
            if not names:
                a.answer = "The workspace is empty."
            else:
                n_dirs = sum(1 for x in names if x.endswith("/"))
                listing = "\n".join(f"- {x}" for x in names)
                a.answer = (
                    f"The workspace contains {_count(len(names) - n_dirs, 'file')} and "
                    f"{_count(n_dirs, 'folder')} at the top level:\n{listing}"
                )
            return outcome
        if kind == "readToolCall":
            if a.extra == "huge":
                line = "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ sim\n"
                content = line * (HUGE_LINE_BYTES // len(line))
                a.answer = f"`{a.target}` has {content.count(chr(10))} lines."
                return wire.read_success(str(ws / a.target), content)
            outcome, text = tools.read(ws, a.target)
            if text is None:
                a.answer = f"I could not read `{a.target}`: {outcome['error']['error'].lower()}."
            elif not text:
                a.answer = f"`{a.target}` is empty."
            else:
                lines = text.splitlines()
                shown = "\n".join(lines[:20]) + ("\n…" if len(lines) > 20 else "")
                a.answer = f"`{a.target}` has {len(lines)} lines:\n```\n{shown}\n```"
            return outcome
        if kind == "grepToolCall":
            outcome, matches = tools.grep(ws, a.target)
            total = sum(len(m) for _, m in matches)
            if not total:
                a.answer = f"No matches for `{a.target}`."
            else:
                where = ", ".join(f"{f}:{n}" for f, hits in matches for n, _ in hits[:5])
                in_files = _count(len(matches), "file")
                a.answer = f"Found {_count(total, 'match')} for `{a.target}` in {in_files}: {where}."
            return outcome
        if kind == "globToolCall":
            outcome, files = tools.glob(ws, a.target)
            a.answer = (
                f"{_count(len(files), 'file')} match `{a.target}`: " + ", ".join(files[:20]) + "."
                if files
                else f"No files match `{a.target}`."
            )
            return outcome
        if kind == "editToolCall":
            outcome, _path, created = tools.edit(ws, a.target, self._new_content(a))
            if "error" in outcome:
                a.answer = f"I could not edit `{a.target}`: {outcome['error']['error']}."
            else:
                a.answer = f"{'Created' if created else 'Updated'} `{a.target}`."
            return outcome
        if kind == "shellToolCall":
            if not ctx.force:
                a.answer = (
                    f"I could not run `{a.target}`: the command was rejected (run with --force to allow it)."
                )
                return wire.shell_rejected(a.target, str(ws))
            outcome, code, out, err, ms = tools.run_shell(ws, a.target)
            ctx.clock.advance(ms)
            shown = (out + err).rstrip("\n")
            a.answer = f"`{a.target}` exited with code {code}."
            if shown:
                a.answer += f" Output:\n```\n{shown[:4000]}\n```"
            return outcome
        if kind == "webFetchToolCall":
            if not ctx.force:
                a.answer = f"I couldn't fetch {a.target} — the web fetch was rejected."
                return wire.rejected("User Rejected")
            a.answer = f"I couldn't fetch {a.target} — the simulator has no network access."
            return wire.error_outcome("Network access is not available in cursor-agent-sim", url=a.target)
        if kind == "webSearchToolCall":
            if not ctx.force:
                a.answer = f"I couldn't search the web for {a.target} — the search was rejected."
                return wire.rejected("User Rejected")
            a.answer = f"I couldn't search the web for {a.target} — the simulator has no network access."
            return wire.error_outcome("Network access is not available in cursor-agent-sim")
        if kind == "deleteToolCall":
            outcome = tools.delete(ws, a.target)
            a.answer = (
                f"Deleted `{a.target}`."
                if "success" in outcome
                else f"I could not delete `{a.target}`: {outcome['error']['error']}."
            )
            return outcome
        if kind == "askQuestionToolCall":
            a.answer = "You didn't pick an option, so I'll continue with what I have."
            return wire.rejected(ASK_SKIPPED)
        if kind == "mcpToolCall":
            return self._call_mcp(a)
        if kind == "getMcpToolsToolCall":
            described = self.ctx.mcp.describe(a.target) if self.ctx.mcp is not None else {"tool": a.target}
            return {"success": {"content": json.dumps(described, indent=2, ensure_ascii=False)}}
        if kind == "updateTodosToolCall":
            items = a.text.split("\n")
            now = ctx.clock.now_ms()
            todos = [
                wire.todo_item(
                    str(i + 1), item, "TODO_STATUS_IN_PROGRESS" if i == 0 else "TODO_STATUS_PENDING", now
                )
                for i, item in enumerate(items)
            ]
            a.answer = f"I wrote a plan of {_count(len(items), 'todo')}."
            return wire.todos_success(todos, was_merge=False)
        return wire.error_outcome(f"unknown tool {kind}")

    def _call_mcp(self, a: Action) -> dict[str, Any]:
        mcp = self.ctx.mcp
        outcome = (mcp.call(a.extra, a.target, json.loads(a.text)) if mcp is not None
                   else {"serverNotFound": {"name": a.extra}})
        success: Any = outcome.get("success")
        if isinstance(success, dict):
            text = "\n".join(str(c["text"]["text"]) for c in success["content"])
            verb = "failed" if success["isError"] else "returned"
            a.answer = f"`{a.target}` {verb}: {text}"
        elif "rejected" in outcome:
            a.answer = (f"I could not call `{a.target}`: the call was rejected (it is not in the "
                        "allowlist; run with --force to allow it).")
        else:
            a.answer = f"I could not call `{a.target}`: {next(iter(outcome.values()))}."
        return outcome

    def _final_text(self, plan: Plan) -> str:
        if plan.exact is not None:
            text = plan.exact
        elif plan.direct is not None:
            text = plan.direct
        else:
            text = "\n\n".join(a.answer for g in plan.groups for a in g if a.answer)
        if self.ctx.unicode:
            text += "\n" + UNICODE_LINE
        if plan.done and not text.rstrip().endswith("DONE"):
            text += "\nDONE"
        return text

    def _usage(self, plan: Plan) -> dict[str, int]:
        ctx = self.ctx
        history_chars = sum(len(t.prompt) + len(t.result) for t in ctx.history)
        input_tokens = 6000 + len(ctx.prompt) // 4 + history_chars // 4 + 900 * len(plan.groups)
        output_tokens = 40 + len(self.result_text) // 4 + 60 * self.tool_count
        cache_read = 7168 * (len(ctx.history) + 1) if ctx.history else 0
        return wire.usage(input_tokens, output_tokens, cache_read, 0)


_READONLY = frozenset({"lsToolCall", "readToolCall", "grepToolCall", "globToolCall"})
ASK_SKIPPED = "Questions skipped by the user, continue with the information you already have"
