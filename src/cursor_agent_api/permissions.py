"""Steering an ACP turn: permission requests, questions and plans, and how they are answered.

In ACP mode (``AgentConfig(transport="acp")``) the agent asks before a tool call it may not
run on its own. The answer comes, in this order, from:

1. ``denied_tools`` then ``allowed_tools``: rules in Cursor's own syntax, ``Shell(cmd)``
   (a simple command's name or its whole text, ``*`` globs; Cursor's ``command:args`` form,
   ``Shell(curl:*)``, is the command with arguments the second part globs, or none; an allow
   rule must cover every simple command of a compound one, a deny rule matches any), ``Write(path)`` (edits,
   deletes), ``Read(path)`` (paths normalised first), ``Mcp(server:tool)``,
   ``WebFetch(domain)``; ``Shell(*)`` is any command; a deny rule also matches a request
   that does not say what it touches (an edit without a path);
2. ``can_use_tool(request)``, sync or async: :class:`Allow` (``remember=True`` picks Cursor's
   "allow always", which Cursor writes to its global allowlist), :class:`Deny` or
   :class:`Cancel` (cancels the whole turn);
3. ``permission_mode``: ``"deny"`` (the default, as print mode without ``--force``),
   ``"allow"`` (everything), ``"read-only"`` (reads and searches only), ``"ask"``
   (``can_use_tool`` is required).

All of them answer the requests the agent *sends*, and current builds send none before an
edit, a new file or a delete (nor a read): ``"read-only"`` and ``Write(…)`` rules do not stop
edits. ``session_mode="plan"`` or ``"ask"``, or Cursor's own deny list (``Write(**)`` in
``.cursor/cli.json``), does (docs/acp.md).

The answer is sent as the offered option of the right *kind* (``allow_once``,
``allow_always``, ``reject_once``), never by guessing Cursor's option ids.
``permission_timeout`` (seconds, none by default) answers "reject" when no decision came.

Questions (``cursor/ask_question``, and the ``__ask_question_skip__`` permission request a
build falls back to) go to ``on_question(question) -> Answer | Skip`` (default: skipped);
plans (``cursor/create_plan``) to ``on_plan(plan) -> Accept | Reject`` (default: accepted,
as print mode does).

Example:
    >>> from cursor_agent_api.protocol.acp_mapper import acp_tool_call
    >>> req = PermissionRequest("s1", acp_tool_call({"toolCallId": "c", "kind": "execute",
    ...                         "title": "`rm -rf build`", "rawInput": {"command": "rm -rf build"}}))
    >>> req.command, match_rule("Shell(rm)", req), match_rule("Shell(ls)", req)
    ('rm -rf build', True, False)
    >>> decide_by_rules(req, mode="read-only", allowed=["Shell(ls)"], denied=[])
    Deny(reason='read-only mode: shell calls are rejected')
"""

from __future__ import annotations

import enum
import fnmatch
import ipaddress
import posixpath
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from .protocol.tools import ToolCall, ToolKind
from .shell_commands import possible_command_words, split_commands

__all__ = [
    "Accept",
    "Allow",
    "Answer",
    "Cancel",
    "Deny",
    "PermissionDecision",
    "PermissionMode",
    "PermissionOption",
    "PermissionRequest",
    "Plan",
    "PlanDecision",
    "Question",
    "QuestionDecision",
    "QuestionOption",
    "QuestionRequest",
    "Reject",
    "Skip",
    "check_rule",
    "decide_by_rules",
    "match_rule",
]


@dataclass(frozen=True, slots=True)
class Allow:
    """Run the tool call. ``remember=True`` picks "allow always" (Cursor then never asks
    again for this command, path or tool, on this machine: its global allowlist)."""

    remember: bool = False


@dataclass(frozen=True, slots=True)
class Deny:
    """Do not run it; the agent sees a rejection. ``reason`` is shown in events and views."""

    reason: str = ""


@dataclass(frozen=True, slots=True)
class Cancel:
    """Cancel the whole turn (``session/cancel``); the session goes on."""


PermissionDecision = Allow | Deny | Cancel


@dataclass(frozen=True, slots=True)
class PermissionOption:
    """One option the agent offered: its id (echoed back), name and kind."""

    option_id: str
    name: str
    kind: str


@dataclass(slots=True)
class PermissionRequest:
    """What the agent asks to do: the session, the :class:`ToolCall` (kind, command, path,
    diff, MCP server and tool), why it asks (``reason``: "Not in allowlist: echo") and the
    options offered.

    Example:
        >>> from cursor_agent_api.protocol.tools import ToolCall, ToolKind
        >>> PermissionRequest("s", ToolCall("c", ToolKind.READ, args={"path": "a.txt"})).path
        'a.txt'
    """

    session_id: str
    tool_call: ToolCall
    options: list[PermissionOption] = field(default_factory=list)
    title: str = ""
    reason: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def kind(self) -> ToolKind:
        """The tool call's kind (``SHELL``, ``EDIT``, ``READ``, ``MCP``, ``WEB_FETCH``…)."""
        return self.tool_call.kind

    @property
    def command(self) -> str | None:
        """Shell: the command line."""
        return self.tool_call.command

    @property
    def path(self) -> str | None:
        """Read, edit, delete: the file."""
        return self.tool_call.path

    @property
    def diff(self) -> str | None:
        """Edit: the change, as a unified diff, when the agent sent it."""
        return self.tool_call.diff

    @property
    def mcp_server(self) -> str | None:
        """MCP: the server."""
        return self.tool_call.mcp_server

    @property
    def mcp_tool(self) -> str | None:
        """MCP: the tool."""
        return self.tool_call.mcp_tool

    def describe(self) -> str:
        """One line for a person: what, and on what.

        Example:
            >>> from cursor_agent_api.protocol.tools import ToolCall, ToolKind
            >>> PermissionRequest("s", ToolCall("c", ToolKind.SHELL, args={"command": "ls"})).describe()
            'shell: ls'
        """
        what = self.tool_call.summary() or self.title
        return f"{self.kind.value}: {what}" if what else self.kind.value


@dataclass(frozen=True, slots=True)
class QuestionOption:
    """One possible answer."""

    id: str
    label: str


@dataclass(frozen=True, slots=True)
class Question:
    """One question: its id, text, options and whether several may be chosen."""

    id: str
    prompt: str
    options: tuple[QuestionOption, ...] = ()
    allow_multiple: bool = False


@dataclass(slots=True)
class QuestionRequest:
    """The agent's questions (``cursor/ask_question``; ``fallback`` when the build asked
    through a permission request with ``__ask_question_skip__``: then one single-choice
    question)."""

    session_id: str
    title: str
    questions: list[Question]
    tool_call_id: str | None = None
    fallback: bool = False


@dataclass(frozen=True, slots=True)
class Answer:
    """The chosen option ids, per question id; a bare string or list answers the first
    question. Example: ``Answer({"q1": ["small"]})`` or ``Answer("small")``. An option's label
    (``Answer("Small change")``) stands for it when exactly one option of its question has
    it; a value that is neither skips the questions, with a warning (docs/acp.md)."""

    choices: Mapping[str, Sequence[str]] | Sequence[str] | str

    def selected(self, questions: Sequence[Question]) -> dict[str, list[str]]:
        """The option ids chosen for each question.

        Example:
            >>> Answer("b").selected([Question("q1", "?", (QuestionOption("b", "B"),))])
            {'q1': ['b']}
        """
        if isinstance(self.choices, str):
            return {questions[0].id: [self.choices]} if questions else {}
        if isinstance(self.choices, Mapping):
            return {str(k): [v] if isinstance(v, str) else [str(x) for x in v]
                    for k, v in self.choices.items()}
        return {questions[0].id: [str(x) for x in self.choices]} if questions else {}


@dataclass(frozen=True, slots=True)
class Skip:
    """Do not answer; the agent goes on without one."""

    reason: str = ""


QuestionDecision = Answer | Skip


@dataclass(slots=True)
class Plan:
    """A plan the agent proposes (``cursor/create_plan``): name, overview, the plan text
    (markdown) and its todos."""

    session_id: str
    name: str
    plan: str
    overview: str = ""
    todos: list[dict[str, Any]] = field(default_factory=list)
    tool_call_id: str | None = None


@dataclass(frozen=True, slots=True)
class Accept:
    """Go ahead with the plan."""


@dataclass(frozen=True, slots=True)
class Reject:
    """Do not; ``reason`` goes back to the agent."""

    reason: str = ""


PlanDecision = Accept | Reject

CanUseTool = Callable[[PermissionRequest], "PermissionDecision | Awaitable[PermissionDecision]"]
OnQuestion = Callable[[QuestionRequest], "QuestionDecision | Awaitable[QuestionDecision]"]
OnPlan = Callable[[Plan], "PlanDecision | Awaitable[PlanDecision]"]


class PermissionMode(str, enum.Enum):
    """What happens to a permission request no rule and no callback decided."""

    ASK = "ask"
    ALLOW = "allow"
    READ_ONLY = "read-only"
    DENY = "deny"


_RULE = re.compile(r"^(Shell|Write|Read|Mcp|WebFetch|WebSearch)\((.*)\)$")
_RULE_KINDS: dict[str, tuple[ToolKind, ...]] = {
    "Shell": (ToolKind.SHELL,),
    "Write": (ToolKind.EDIT, ToolKind.WRITE, ToolKind.DELETE),
    "Read": (ToolKind.READ,),
    "Mcp": (ToolKind.MCP,),
    "WebFetch": (ToolKind.WEB_FETCH,),
    "WebSearch": (ToolKind.WEB_SEARCH,),
}
_READS = (ToolKind.READ, ToolKind.GREP, ToolKind.GLOB, ToolKind.LS, ToolKind.SEM_SEARCH)


def check_rule(rule: str) -> str:
    """The rule, if it is one (``ValueError`` naming the syntax otherwise).

    Example:
        >>> check_rule("Mcp(github:create_issue)")
        'Mcp(github:create_issue)'
        >>> check_rule("rm")
        Traceback (most recent call last):
        ...
        ValueError: 'rm' is not a permission rule: use Shell(cmd), Write(path), ...
    """
    m = _RULE.match(rule.strip()) if isinstance(rule, str) else None
    if m is None:
        raise ValueError(f"{rule!r} is not a permission rule: use Shell(cmd), Write(path), "
                         "Read(path), Mcp(server:tool), WebFetch(domain) or WebSearch(term)")
    command, colon, args = m.group(2).partition(":")
    if m.group(1) == "Shell" and colon and not command.strip():
        raise ValueError(f"{rule!r} is not a permission rule: Shell(command:args) needs the "
                         "command before the colon, such as Shell(curl:*)")
    if m.group(1) == "Shell" and colon and not args.strip():
        raise ValueError(f"{rule!r} is not a permission rule: Shell(command:args) needs the "
                         "arguments after the colon, such as Shell(git:status *); "
                         "Shell(curl) and Shell(curl:*) name the command with any arguments")
    return rule.strip()


def _shell_patterns(arg: str) -> list[str]:
    """The globs a ``Shell(…)`` rule's argument stands for: itself, or for Cursor's
    ``command:args`` form (``Shell(curl:*)``) the command followed by arguments the second
    part globs (``curl *``), and the bare command when that part globs no arguments too.

    Example:
        >>> _shell_patterns("ls"), _shell_patterns("rm:*"), _shell_patterns("git:push *")
        (['ls'], ['rm *', 'rm'], ['git push *'])
    """
    if ":" not in arg:
        return [arg]
    command, _, args = arg.partition(":")
    command, args = command.strip(), args.strip()
    return [f"{command} {args}", *([command] if fnmatch.fnmatchcase("", args) else [])]


def _glob(pattern: str, value: str | None) -> bool:
    return value is not None and fnmatch.fnmatchcase(value, pattern)


def _shell_covers(patterns: Sequence[str], command: str) -> bool:
    """Whether allow rules (their ``Shell(…)`` arguments) cover every simple command of
    ``command``: each a harmless one (no ``VAR=value``, no redirection to a file) whose name,
    or whole text, one pattern globs; no substitution anywhere."""
    if "*" in patterns:
        return True
    commands = split_commands(command)
    if commands is None or not any(c.argv for c in commands):
        return False
    return all(c.harmless and (not c.argv or any(
        _glob(p, c.argv[0]) or _glob(p, " ".join(c.argv)) for p in patterns)) for c in commands)


def _shell_touches(pattern: str, command: str) -> bool:
    """Whether a deny rule's pattern matches any part of ``command``: the whole line, a
    simple command (its name, its name's last path part, its text), any simple command whose
    name is not known (``$X``, a glob) or that is a shell without ``-c`` (it runs what it
    reads), what a wrapper or shell runs (``sudo rm``,
    ``sh -c 'rm x'``: each later word, read as a command line, and the rest of the words),
    any word of a line that cannot be split."""
    if _glob(pattern, command):
        return True
    commands = split_commands(command)
    if commands is None:
        return _glob_from_some_word(pattern, possible_command_words(command))
    for c in commands:
        if not c.argv:
            continue
        if not c.name_known or c.runs_unseen:
            return True
        for name in {c.argv[0], posixpath.basename(c.argv[0])}:
            if _glob(pattern, name) or _glob(pattern, " ".join((name, *c.argv[1:]))):
                return True
        if c.runs_others and (_glob_from_some_word(pattern, c.argv[1:]) or any(
                _shell_touches(pattern, word) for word in c.argv[1:] if _SCRIPT.search(word))):
            return True
    return False


_SCRIPT = re.compile(r"[\s;&|()<>`]|\$\(")  # a word that may be a command line: `sh -c 'rm x'`


_MAX_STARTS = 64


def _glob_from_some_word(pattern: str, words: Sequence[str]) -> bool:
    """Whether ``pattern`` globs the words from one of them on (``rm -rf *`` in ``sudo rm
    -rf x``). Only a word the pattern's first word globs starts a try, and at most 64 do:
    with more, the answer is yes (a deny rule errs on matching; no line makes this slow).

    Example:
        >>> _glob_from_some_word("rm -rf *", ["-u", "root", "/bin/rm", "-rf", "x"])
        True
    """
    head = pattern.split(" ", 1)[0]
    starts = [i for i, w in enumerate(words) if _glob(head, w) or _glob(head, posixpath.basename(w))]
    if len(starts) > _MAX_STARTS:
        return True
    return any(_glob(pattern, name) or _glob(pattern, " ".join((name, *words[i + 1:])))
               for i in starts for name in (words[i], posixpath.basename(words[i])))


def _unknown(value: str | None) -> bool:
    """Whether the request leaves this out (an edit's ``rawInput`` is ``{}`` at first)."""
    return value is None or not value.strip()


def _path_matches(pattern: str, path: str | None, *, deny: bool) -> bool:
    if pattern in ("*", "**"):
        return True
    if path is None or _unknown(path):
        return deny  # a path the request does not name: a deny rule matches it
    return _glob(pattern, posixpath.normpath(path)) or (deny and _glob(pattern, path))


def match_rule(rule: str, request: PermissionRequest, *, deny: bool = False) -> bool:
    """Whether ``rule`` covers ``request`` (as an allow rule: all of it) or, with
    ``deny=True``, touches it (as a deny rule: any part of it, and when in doubt, yes: a
    request that does not say what it touches — no command, path, server, tool, URL or
    query — matches every deny rule of its kind).

    A shell command is judged simple command by simple command (:mod:`.shell_commands`):
    ``Shell(ls)`` covers ``ls -la && ls src`` but not ``ls && rm x``, ``ls $(rm x)``,
    ``ls > f`` or ``PATH=/tmp ls``; as a deny rule ``Shell(rm)`` touches ``true && rm x``.
    Paths are judged after ``posixpath.normpath``: ``Write(src/**)`` does not cover
    ``src/../x``.

    Example:
        >>> from cursor_agent_api.protocol.tools import ToolCall, ToolKind
        >>> mcp = PermissionRequest("s", ToolCall("c", ToolKind.MCP,
        ...     args={"providerIdentifier": "github", "toolName": "create_issue"}))
        >>> match_rule("Mcp(github:*)", mcp), match_rule("Mcp(slack:*)", mcp)
        (True, False)
        >>> sh = PermissionRequest("s", ToolCall("c", ToolKind.SHELL, args={"command": "ls && rm x"}))
        >>> match_rule("Shell(ls)", sh), match_rule("Shell(rm)", sh, deny=True)
        (False, True)
        >>> pathless = PermissionRequest("s", ToolCall("c", ToolKind.EDIT, args={}))
        >>> match_rule("Write(src/**)", pathless), match_rule("Write(secrets/**)", pathless, deny=True)
        (False, True)
    """
    m = _RULE.match(rule.strip())
    if m is None:
        return False
    head, arg = m.group(1), m.group(2).strip()
    if request.kind not in _RULE_KINDS[head]:
        return False
    tc = request.tool_call
    if head == "Shell":
        command = tc.command or ""
        patterns = _shell_patterns(arg)
        if deny:
            return _unknown(command) or any(_shell_touches(p, command) for p in patterns)
        return _shell_covers(patterns, command)
    if head in ("Write", "Read"):
        return _path_matches(arg, tc.path, deny=deny)
    if head == "Mcp":
        server, _, tool = arg.partition(":")
        return all((deny and _unknown(value)) or _glob(part or "*", value or "")
                   for part, value in ((server, tc.mcp_server), (tool, tc.mcp_tool)))
    if head == "WebFetch":
        host = web_host(tc.url)
        if arg == "*" or (deny and host is None):
            return True
        want = _rule_host(arg)
        return host is not None and any(_glob(want, h) for h in _spellings(host))
    return arg == "*" or (deny and _unknown(tc.pattern)) or _glob(arg, tc.pattern)


def web_host(url: str | None) -> str | None:
    """The host a fetch of ``url`` reaches, spelled one way: lower case, percent-decoded,
    without the trailing dot a resolver ignores (``https://EVIL%2Eexample./x`` is
    ``evil.example``); ``None`` when there is none or the URL does not parse (a deny rule then
    matches). A URL without a scheme is read as ``//url`` (``docs.example/a``); one whose
    scheme has no ``//`` after it names no host (``https:evil.example/`` is evil.example to
    Node; ``localhost:8080/x`` is a scheme ``localhost:`` to it, with no host at all).

    The agent runs on Node, whose URL parser (WHATWG's) reads some URLs otherwise than
    urllib: a ``\\`` is a ``/`` in an http(s) URL (``https://evil.example\\@docs.example/``
    fetches evil.example, where urllib sees docs.example), tabs and newlines are dropped, and a
    host's Unicode is mapped (a full-width dot is a dot). Such a URL — a backslash, a control
    character or a space inside it, a host that is not ASCII — names no host the rules can
    trust: ``None``, so a deny rule matches it and an allow rule for one host does not.

    Example:
        >>> web_host("https://EVIL%2Eexample.:8443/x"), web_host("docs.example/a")
        ('evil.example', 'docs.example')
        >>> web_host("http://[::1"), web_host("")
        (None, None)
        >>> web_host("https://evil.example\\\\@docs.example/"), web_host("https://evil\\u3002example/")
        (None, None)
    """
    text = (url or "").strip()
    if not text or any(c == "\\" or c <= " " or c == "\x7f" for c in text):
        return None
    scheme = re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", text)
    if scheme is not None and not text[scheme.end():].startswith("//"):
        return None  # (https:evil.example/ is evil.example to Node, host 'https' to urllib)
    try:
        host = urlsplit(text if scheme is not None else f"//{text}").hostname
    except ValueError:
        return None
    host = unquote(host or "").lower().rstrip(".")
    if not host.isascii() or any(c <= " " or c in "\\/@%\x7f" for c in host):
        return None  # (percent-decoded: a host Node would read otherwise, or refuse)
    return _address(host) if host else None


def _address(host: str) -> str | None:
    """``host`` as Node's URL parser spells an address: an IPv6 address compressed, an IPv4
    address only in its dotted form; ``None`` for a name WHATWG reads as an IPv4 address
    written another way (``2852039166``, ``0xA9.0xFE.0xA9.0xFE``, ``169.254.43518``:
    169.254.169.254 each), which the rules cannot compare. Any other name as it is.

    Example:
        >>> _address("0:0::1"), _address("::ffff:169.254.169.254"), _address("0xa9.0xfe.0xa9.0xfe")
        ('::1', '::ffff:a9fe:a9fe', None)
    """
    if ":" in host:
        try:
            return ipaddress.IPv6Address(host).compressed
        except ValueError:
            return None
    if re.fullmatch(r"[0-9]+|0x[0-9a-f]*", host.rsplit(".", 1)[-1]):  # WHATWG: an IPv4 address
        try:
            v4 = ipaddress.IPv4Address(host)
        except ValueError:
            return None
        return str(v4) if str(v4) == host else None
    return host


def _rule_host(arg: str) -> str:
    """A WebFetch rule's host, spelled as :func:`web_host` spells a URL's: lower case, without
    a trailing dot or brackets, an address in Node's form (``WebFetch(0:0:0:0:0:0:0:1)`` and
    ``WebFetch([::1])`` name ``::1``). A glob is left as written.

    Example:
        >>> _rule_host("[0:0::1]"), _rule_host("::FFFF:127.0.0.1"), _rule_host("Docs.Example.")
        ('::1', '::ffff:7f00:1', 'docs.example')
    """
    want = arg.strip().lower().rstrip(".")
    if want.startswith("[") and want.endswith("]"):
        want = want[1:-1]
    if any(c in want for c in "*?["):
        return want
    return _address(want) or want


def _spellings(host: str) -> list[str]:
    """The spellings of ``host`` a rule may name: itself, and for an IPv4-mapped IPv6 address
    the IPv4 address it reaches and its mixed form (a deny rule of 127.0.0.1 matches
    ``http://[::ffff:127.0.0.1]/``, as does one of ``::ffff:7f00:1`` or ``::ffff:*``).

    Example:
        >>> _spellings("::ffff:7f00:1"), _spellings("docs.example")
        (['::ffff:7f00:1', '127.0.0.1', '::ffff:127.0.0.1'], ['docs.example'])
    """
    if ":" not in host:
        return [host]
    mapped = ipaddress.IPv6Address(host).ipv4_mapped
    return [host] if mapped is None else [host, str(mapped), f"::ffff:{mapped}"]


def decide_by_rules(request: PermissionRequest, *, mode: str, allowed: Sequence[str],
                    denied: Sequence[str]) -> PermissionDecision | None:
    """The decision the rules and the mode give, or ``None`` when a callback must decide
    (mode ``ask``). Deny rules win over allow rules.

    Example:
        >>> from cursor_agent_api.protocol.tools import ToolCall, ToolKind
        >>> ls = PermissionRequest("s", ToolCall("c", ToolKind.SHELL, args={"command": "ls -la"}))
        >>> decide_by_rules(ls, mode="deny", allowed=["Shell(ls)"], denied=[])
        Allow(remember=False)
        >>> decide_by_rules(ls, mode="allow", allowed=[], denied=["Shell(*)"])
        Deny(reason='denied by the rule Shell(*)')
        >>> decide_by_rules(ls, mode="ask", allowed=[], denied=[]) is None
        True
    """
    for rule in denied:
        if match_rule(rule, request, deny=True):
            return Deny(f"denied by the rule {rule}")
    if request.kind is ToolKind.SHELL:
        # every simple command by some rule: `Shell(ls)` and `Shell(wc)` cover `ls | wc -l`
        shell = [p for r in allowed if (m := _RULE.match(r.strip())) and m.group(1) == "Shell"
                 for p in _shell_patterns(m.group(2).strip())]
        if shell and _shell_covers(shell, request.command or ""):
            return Allow()
    elif any(match_rule(rule, request) for rule in allowed):
        return Allow()
    pm = PermissionMode(mode)
    if pm is PermissionMode.ASK:
        return None
    if pm is PermissionMode.ALLOW:
        return Allow()
    if pm is PermissionMode.READ_ONLY:
        if request.kind in _READS:
            return Allow()
        return Deny(f"read-only mode: {request.kind.value} calls are rejected")
    return Deny("no rule allows it and no callback decided (permission_mode='deny')")
