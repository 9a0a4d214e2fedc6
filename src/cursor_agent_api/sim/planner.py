"""The deterministic agent's planner: what it does for a prompt, decided by a table of rules.

Each rule of :data:`RULES` reads the prompt (and what earlier rules left of it) and adds tool
calls to a :class:`Draft`; a rule may also settle the turn with a direct answer. The rules, in
order (case-insensitive; see docs/simulator.md for examples):

* ``reply with exactly: X`` -> ``X``; ``… reply with DONE at the end`` -> ends with ``DONE``;
* ``what did I ask before?`` / ``remember …`` -> answers from the chat's earlier turns;
* ``todo`` / ``plan`` -> ``updateTodosToolCall`` (the rest of the prompt is the items);
* ``run `cmd` `` / ``run the shell command: cmd`` -> ``shellToolCall``;
* ``search the web for X`` -> ``webSearchToolCall``;
* ``delete a.txt`` -> ``deleteToolCall``;
* ``create hello.txt with "Hi"``, ``write "x" to a.txt``, ``append probe13 to notes.txt``,
  ``replace "a" with "b" in f.txt`` -> ``editToolCall`` (append and replace read first);
* ``list the files`` / ``grep TODO`` / ``glob *.py`` -> ``lsToolCall``, ``grepToolCall``,
  ``globToolCall``, run as parallel calls of one model call;
* ``fetch https://…`` -> ``webFetchToolCall``;
* ``read notes.txt``, or any existing file named in the prompt -> ``readToolCall``;
* ``ask me …`` -> ``askQuestionToolCall``;
* the name of a tool of a loaded MCP server, optionally followed by its arguments as a JSON
  object (``lookup_order {"order_id": "A1"}``) -> ``getMcpToolsToolCall`` (its schema, once per
  tool), then ``mcpToolCall`` (:mod:`.mcp_client`);
* ``use a subagent to X`` -> ``taskToolCall`` (ACP only);
* in plan mode (ACP ``session/set_mode``), edits and deletes become one ``createPlanToolCall``;
* anything else: ``what is 6 * 7`` -> ``42``, else a short, fixed reply.

Pure: no I/O beyond the ``has_file`` callback. What the calls do is :mod:`.executors`; how
they are written is the output's business (:mod:`.output`).

Example:
    >>> plan_turn("list the files and read notes.txt", has_file=lambda n: n == "notes.txt").kinds()
    [['lsToolCall', 'readToolCall']]
    >>> [rule.__name__ for rule in RULES][:3]
    ['rule_exact', 'rule_memory', 'rule_remember']
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .mcp_client import mcp_calls
from .store import Turn

_URL = re.compile(r"https?://[^\s'\"<>`)\]]+")
_BACKTICK = re.compile(r"`([^`]+)`")
_DQUOTE = re.compile(r"\"([^\"]*)\"|“([^”]*)”")
# a file name, relative (``a/b.txt``, ``./a.txt``, ``../a.txt``) or absolute (``/tmp/a.txt``): the
# names outside the workspace reach the tools, which refuse them. It starts at the first
# character of a run of path characters only (not after ``~``: a home path is not ``/…``).
_FILE = re.compile(r"(?<![\w/.~-])(/?(?:[\w.-]+/)*[\w-]+\.[A-Za-z0-9]{1,8})(?![\w/-])")
_WILDCARD = re.compile(r"(?<!\S)([\w./-]*\*[\w./*{},-]*)")

# The patterns below read prompts of any size in linear time: a lazy group is scanned from the
# first occurrence of its keyword only (a later one cannot match when the first does not),
# ``(?!\s)`` after a greedy ``\s+`` keeps it from giving back a run of spaces (Python 3.10 has
# no possessive quantifiers), and ``(?<!\s)`` / ``(?<!\d)`` start a match at the beginning of
# a run only (a match inside the run would also match at its start, which comes first).
_APPEND = re.compile(
    r"append\s+(?!\s)(?:the\s+(?!\s))?(?:line|text|string|word)?\s*(?!\s)(.+?)(?<!\s)\s+to\s+"
    r"(?:the\s+end\s+of\s+)?(?:the\s+file\s+)?([\w./-]+\.\w+)",
    re.I | re.S,
)
_REPLACE = re.compile(r"\breplace\s+(?!\s)", re.I)
_REPLACE_WITH = re.compile(r"(?<!\s)\s+with\s+(?!\s)", re.I)
_REPLACE_IN = re.compile(r"(?<!\s)\s+in\s+(?:the\s+file\s+)?([\w./-]+\.\w+)", re.I)
_WRITE_TO = re.compile(r"write\s+(?!\s)(.+?)(?<!\s)\s+(?:to|into)\s+", re.I | re.S)
_EXACTLY = re.compile(r"reply\s+with\s+exactly", re.I)
_SAY = re.compile(r"\b(?:say|respond\s+with|answer\s+with|reply\s+with)", re.I)
_DONE_ASKED = re.compile(r"\b(?i:reply|respond|end|finish)\b")
_DONE = re.compile(r"\bDONE\b")
_ARITHMETIC = re.compile(r"(?<!\d)(-?\d+(?:\.\d+)?)\s*([-+*/x×])\s*(-?\d+(?:\.\d+)?)")
_HEAD_SPACE = re.compile(r"\s*:?\s*")
_TODO = re.compile(r"\b(?:todo\s*list|todos|to-dos?|plan)\b|\btodo:", re.I)


def _first(keyword: str, pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    """``pattern`` matched at the first whole-word ``keyword`` followed by a space (what
    ``re.search`` would find, without trying every later occurrence)."""
    found = re.search(rf"\b{keyword}\s", text, re.I)
    return pattern.match(text, found.start()) if found else None


def _rest_of(head: re.Pattern[str], text: str) -> str | None:
    """What follows the first match of ``head`` and ``\\s*:?\\s*``, trailing spaces cut: as
    ``head\\s*:?\\s*(.+?)\\s*$`` reads it, in linear time.

    Example:
        >>> say = re.compile("say")
        >>> _rest_of(say, "say:  hi  \\n"), _rest_of(say, "say: "), _rest_of(say, "say")
        ('hi', ' ', None)
    """
    m = head.search(text)
    if m is None:
        return None
    spaces = _HEAD_SPACE.match(text, m.end())
    assert spaces is not None  # it matches the empty string
    rest = text[spaces.end() :].rstrip()
    if rest:
        return rest
    # nothing after it: the group takes back the last character of ``\s*:?\s*``, if any
    return spaces.group()[-1:] or None


def _replace_parts(text: str) -> tuple[str, str, str] | None:
    """``replace OLD with NEW in FILE``: (old, new, file), as
    ``\\breplace\\s+(.+?)\\s+with\\s+(.+?)\\s+in\\s+(?:the\\s+file\\s+)?FILE`` reads it.

    Example:
        >>> _replace_parts("replace 'a' with 'b' in the file x.txt, then reply")
        ("'a'", "'b'", 'x.txt')
    """
    m = _REPLACE.search(text)
    if m is None:
        return None
    w = _REPLACE_WITH.search(text, m.end() + 1)
    if w is None:
        return None
    f = _REPLACE_IN.search(text, w.end() + 1)
    if f is None:
        return None
    return text[m.end() : w.start()], text[w.end() : f.start()], f.group(1)


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
    # (?<!\s): the split may start only at a run's first space (else quadratic in a run of spaces)
    body = re.split(r"(?<!\s)\s+and\s+(?:report|tell|show|print|reply|give|then)\b|[.;]\s|\n", body,
                    maxsplit=1)[0]
    body = _strip(body)
    return body or None


def _edit_actions(prompt: str, has_file: Callable[[str], bool]) -> tuple[list[Action], list[Action]]:
    """(reads first, edits) for the edit requests of a prompt."""
    p = prompt
    m = _first("append", _APPEND, p)
    if m:
        text, target = _strip(m.group(1)), m.group(2)
        read = Action("readToolCall", f"I'll read `{target}` and append `{text}` to the end.", target)
        return [read], [Action("editToolCall", "", target, text, "append")]
    parts = _replace_parts(p)
    if parts:
        old, new, target = _strip(parts[0]), _strip(parts[1]), parts[2]
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
        m3 = _first("write", _WRITE_TO, p)
        if m3:
            content = _strip(m3.group(1))
    if content is None:
        content = "Created by cursor-agent-sim."
    if not content.endswith("\n"):
        content += "\n"
    verb = "update" if has_file(target) else "create"
    return [], [Action("editToolCall", f"I'll {verb} `{target}`.", target, content, "write")]


# ---- the rules -------------------------------------------------------------------------------


@dataclass(slots=True)
class Draft:
    """The plan being built: what is left of the prompt and the calls found so far.

    Example:
        >>> d = Draft("list the files"); rule_listing(d); [a.kind_key for a in d.readonly]
        False
        ['lsToolCall']
    """

    prompt: str
    has_file: Callable[[str], bool] = lambda name: False
    history: list[Turn] = field(default_factory=list)
    mode: str = "agent"
    subagents: bool = False
    mcp_tools: Mapping[str, str] = field(default_factory=dict)
    """The tools of the loaded MCP servers: tool name -> server name."""
    plan: Plan = field(default_factory=Plan)
    command: str | None = None
    first: list[list[Action]] = field(default_factory=list)
    readonly: list[Action] = field(default_factory=list)
    reads: list[Action] = field(default_factory=list)
    edits: list[Action] = field(default_factory=list)
    later: list[list[Action]] = field(default_factory=list)
    url_text: str = ""

    @property
    def low(self) -> str:
        """The prompt left, lower-cased."""
        return self.prompt.lower()


Rule = Callable[[Draft], bool]
"""A rule: reads and extends the draft; True when the turn is settled (no later rule runs)."""


def rule_exact(d: Draft) -> bool:
    """``reply with exactly: X`` and ``… reply with DONE``."""
    exact = _rest_of(_EXACTLY, d.prompt)
    if exact is not None:
        d.plan.exact = _strip(exact)
    d.plan.done = _asks_for_done(d.prompt)
    return False


def _asks_for_done(prompt: str) -> bool:
    """``reply|respond|end|finish … DONE`` within one sentence (no ``.`` between), as
    ``\\b(?i:reply|respond|end|finish)\\b[^.]*\\bDONE\\b`` reads it, in linear time.

    Example:
        >>> _asks_for_done("Reply with DONE at the end"), _asks_for_done("Reply. DONE")
        (True, False)
    """
    for sentence in prompt.split("."):
        asked = _DONE_ASKED.search(sentence)
        if asked and _DONE.search(sentence, asked.end()):
            return True
    return False


def rule_memory(d: Draft) -> bool:
    """Questions about the chat's earlier turns: answered from the history, no tools."""
    low, history, plan = d.low, d.history, d.plan
    if not _MEMORY_QUESTION.search(low):
        return False
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
    return True


def rule_remember(d: Draft) -> bool:
    """``remember X``: acknowledged."""
    if not re.search(r"^\s*remember\b", d.low):
        return False
    d.plan.goal = "remember something"
    d.plan.direct = f"Noted. I will remember: {_after_remember(d.prompt)}"
    return True


def _first_outside_names(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    """The first match of ``pattern`` in ``text`` that touches no backticked span and no file
    name: a command or a name is never taken for a keyword, and never cut. Linear time.

    Example:
        >>> _TODO.search("run `rm -rf build/plan`") is not None
        True
        >>> _first_outside_names(_TODO, "run `rm -rf build/plan`, read plan.md") is None
        True
        >>> _first_outside_names(_TODO, "run `ls plan` then plan: a, b").start()
        19
    """
    covered = bytearray(len(text) + 1)
    for m in _BACKTICK.finditer(text):
        covered[m.start() : m.end()] = b"\1" * (m.end() - m.start())
    for m in _FILE.finditer(text):
        covered[m.start(1) : m.end(1)] = b"\1" * (m.end(1) - m.start(1))
    for m in pattern.finditer(text):
        if not any(covered[m.start() : m.end()]):
            return m
    return None


def rule_todos(d: Draft) -> bool:
    """``todo`` / ``plan``: the rest of the prompt is the items; what comes before is read on.
    The words inside a backticked command or a file name do not count (``run `rm -rf build/plan` ``
    runs that command whole; ``read plan.md`` reads the file).

    Example:
        >>> plan_turn("run `rm -rf build/plan`").groups[0][0].target
        'rm -rf build/plan'
    """
    tm = _first_outside_names(_TODO, d.prompt)
    if not tm:
        return False
    items_text = d.prompt[tm.end() :].lstrip(" :")
    items = [_strip(x) for x in re.split(r",|;|\band\b|\n", items_text) if _strip(x)]
    if len(items) < 2:
        items = ["Understand the request", "Make the change", "Check the result"]
    d.first.append([Action("updateTodosToolCall", "I'll write down a plan.", text="\n".join(items[:8]))])
    d.prompt = d.prompt[: tm.start()]
    return False


def rule_task(d: Draft) -> bool:
    """``use a subagent to X``: a Task (ACP only: print mode's task shape is not recorded).

    Example:
        >>> plan_turn("use a subagent to count the files", subagents=True).kinds()
        [['taskToolCall']]
    """
    m = (
        re.search(r"\b(?:use|start|spawn|ask)\s+a\s+sub-?agent\s+to\s+(.+)", d.prompt, re.I | re.S)
        if d.subagents
        else None
    )
    if m:
        task = _strip(m.group(1))
        d.later.append([Action("taskToolCall", "I'll hand this to a subagent.", task[:60], task)])
        d.prompt = d.prompt[: m.start()]
    return False


def rule_shell(d: Draft) -> bool:
    """``run `cmd` ``: a shell command (it silences the other tool rules)."""
    d.command = _shell_command(d.prompt)
    return False


def rule_web_search(d: Draft) -> bool:
    """``search the web for X``."""
    web = (
        None
        if d.command
        else re.search(r"\bsearch\s+the\s+(?:web|internet)\s+for\s+(.+)", d.prompt, re.I | re.S)
    )
    if web:
        term = _strip(re.split(r"[.?!;]\s|\n", web.group(1), maxsplit=1)[0])
        d.later.append([Action("webSearchToolCall", f"I'll search the web for {term}.", term)])
        d.prompt = d.prompt[: web.start()]
    return False


def rule_delete(d: Draft) -> bool:
    """``delete a.txt``."""
    dm = (
        None
        if d.command
        else re.search(r"\b(?:delete|remove)\s+(?:the\s+file\s+)?([\w./-]+\.\w+)", d.prompt, re.I)
    )
    if dm:
        d.later.append([Action("deleteToolCall", f"I'll delete `{dm.group(1)}`.", dm.group(1))])
        d.prompt = d.prompt[: dm.start()] + d.prompt[dm.end() :]
    return False


def rule_edits(d: Draft) -> bool:
    """``create``/``write``/``append``/``replace`` in a file (append and replace read first)."""
    if not d.command:
        d.reads, d.edits = _edit_actions(d.prompt, d.has_file)
        d.readonly += d.reads
    return False


def rule_listing(d: Draft) -> bool:
    """``list the files``, ``grep X``, ``glob *.py``: read-only calls made in parallel."""
    if d.command or d.edits:
        return False
    prompt, low = d.prompt, d.low
    if re.search(r"\b(?:list|ls|tree|director(?:y|ies)|folders?|what files|which files)\b", low):
        d.readonly.append(Action("lsToolCall", "I'll list the files in the workspace."))
    gm = re.search(
        r"\b(?:grep|search\s+for|look\s+for|occurrences\s+of|uses\s+of)\s+(\S.*)", prompt, re.I | re.S
    )
    if gm:
        q = _quoted(gm.group(1))
        pattern = q[0] if q else _strip(gm.group(1).split()[0])
        d.readonly.append(Action("grepToolCall", f"I'll search the workspace for `{pattern}`.", pattern))
    wm = next((w for w in _WILDCARD.finditer(prompt) if re.search(r"[\w.]", w.group(1))), None)
    globm = re.search(r"\bglob\s+(\S+)", prompt, re.I)
    if globm or (wm and not gm):
        pattern = _strip(globm.group(1)) if globm else wm.group(1) if wm else "*"
        d.readonly.append(Action("globToolCall", f"I'll find the files matching `{pattern}`.", pattern))
    return False


def rule_fetch(d: Draft) -> bool:
    """``fetch https://…`` (any URL in the prompt)."""
    url_m = _URL.search(d.prompt)
    if url_m:
        d.url_text = url_m.group(0)
    if url_m and not d.command:
        url = url_m.group(0).rstrip(".,;:!?")
        d.later.append([Action("webFetchToolCall", f"I'll fetch {url}.", url)])
    return False


def rule_reads(d: Draft) -> bool:
    """Files named in the prompt: read when they exist or when the prompt asks to read."""
    mentioned = [] if d.command else [f for f in _FILE.findall(d.prompt) if not _URL.search(f)]
    explicit_read = re.search(
        r"\b(?:read|cat|open|show|print|contents?\s+of|summari[sz]e|look\s+at)\b", d.low
    )
    for name in mentioned:
        if any(a.target == name for a in d.reads + d.edits) or (d.url_text and name in d.url_text):
            continue
        if d.has_file(name) or explicit_read:
            d.readonly.append(Action("readToolCall", f"I'll read `{name}`.", name))
    return False


def rule_run(d: Draft) -> bool:
    """The shell command found by :func:`rule_shell`, after the other calls."""
    if d.command:
        d.later.append([Action("shellToolCall", f"I'll run `{d.command}`.", d.command)])
    return False


def rule_ask(d: Draft) -> bool:
    """``ask me …``: the agent asks a question first."""
    if re.search(r"\bask\s+me\b", d.low):
        d.later.append([Action("askQuestionToolCall", "", text=d.prompt)])
    return False


def rule_mcp(d: Draft) -> bool:
    """A loaded MCP server's tool named in the prompt: its schema first (parallel, once per
    tool, as recorded), then one model call per ``tools/call``.

    Example:
        >>> plan_turn('lookup_order {"order_id": "A1"}', mcp_tools={"lookup_order": "shop"}).kinds()
        [['getMcpToolsToolCall'], ['mcpToolCall']]
    """
    asked = mcp_calls(d.prompt, d.mcp_tools)
    if asked:
        named = {name: server for server, name, _ in asked}
        d.later.append([Action("getMcpToolsToolCall", "", n, extra=srv) for n, srv in named.items()])
    for server, name, arguments in asked:
        d.later.append([Action("mcpToolCall", f"I'll call `{name}`.", name, json.dumps(arguments), server)])
    return False


def rule_plan_mode(d: Draft) -> bool:
    """Plan mode: no edits or deletes; they (or the todo items) become one plan to approve.

    Example:
        >>> plan_turn("create a.txt with hi", mode="plan").kinds()
        [['createPlanToolCall']]
        >>> plan_turn("plan: a, b", mode="plan").groups[0][0].text
        'a\\nb'
    """
    if d.mode != "plan":
        return False
    deletes = [a for g in d.later for a in g if a.kind_key == "deleteToolCall"]
    todos = [a for g in d.first for a in g if a.kind_key == "updateTodosToolCall"]
    if d.edits or deletes:
        steps = [goal(a) for a in d.edits + deletes]
    elif todos:
        steps = todos[0].text.split("\n")
    else:
        return False
    d.readonly = [a for a in d.readonly if a not in d.reads]
    d.edits, d.first = [], []
    d.later = [g for g in ([a for a in g if a.kind_key != "deleteToolCall"] for g in d.later) if g]
    name = steps[0][:1].upper() + steps[0][1:]
    d.later.insert(0, [Action("createPlanToolCall", "I'll write a plan first.", name, "\n".join(steps))])
    return False


RULES: tuple[Rule, ...] = (
    rule_exact,
    rule_memory,
    rule_remember,
    rule_todos,
    rule_task,
    rule_shell,
    rule_web_search,
    rule_delete,
    rule_edits,
    rule_listing,
    rule_fetch,
    rule_reads,
    rule_run,
    rule_ask,
    rule_mcp,
    rule_plan_mode,
)
"""The planner's rules, in the order they read the prompt."""


def plan_turn(
    prompt: str,
    *,
    has_file: Callable[[str], bool] = lambda name: False,
    history: list[Turn] | None = None,
    mode: str = "agent",
    subagents: bool = False,
    mcp_tools: Mapping[str, str] | None = None,
) -> Plan:
    """Decide what the agent does for ``prompt`` by running :data:`RULES`. Pure.

    ``mode`` is the ACP session mode (``agent``, ``plan`` or ``ask``; print mode is ``agent``);
    ``subagents`` lets the agent start Tasks (ACP); ``mcp_tools`` maps the loaded MCP servers'
    tools to their servers.

    Example:
        >>> plan_turn("What is 6 * 7?").direct
        '42'
        >>> plan_turn("append probe13 to notes.txt").kinds()
        [['readToolCall'], ['editToolCall']]
    """
    d = Draft(prompt, has_file, list(history or []), mode, subagents, dict(mcp_tools or {}))
    for rule in RULES:
        if rule(d):
            return d.plan
    plan = d.plan
    plan.groups.extend(d.first)
    if d.readonly:
        plan.groups.append(d.readonly)
    if d.edits:
        plan.groups.append(d.edits)
    plan.groups.extend(d.later)
    if plan.groups:
        plan.goal = " and ".join(goal(a) for g in plan.groups for a in g)
        return plan
    plan.direct = _direct_answer(d.prompt)
    plan.goal = "answer directly"
    return plan


def count(n: int, noun: str) -> str:
    """``n`` and the noun, plural when needed.

    Example:
        >>> count(1, "file"), count(2, "match")
        ('1 file', '2 matches')
    """
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


def goal(a: Action) -> str:
    """What a call is for, in words (the agent's thinking).

    Example:
        >>> goal(Action("readToolCall", "", "a.txt"))
        'read a.txt'
    """
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
        "createPlanToolCall": f"plan: {a.target}",
        "taskToolCall": f"hand “{a.target}” to a subagent",
        "mcpToolCall": f"call {a.target}",
        "getMcpToolsToolCall": f"look up the tool {a.target}",
    }.get(a.kind_key, a.kind_key)


def _direct_answer(prompt: str) -> str:
    m = _ARITHMETIC.search(prompt)
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
    said = _rest_of(_SAY, prompt)
    if said is not None:
        return _strip(said)
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
