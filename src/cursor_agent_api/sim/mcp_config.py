"""The simulator's view of the CLI's configuration files: MCP servers and the permission
rules, as the CLI has them (docs: ../shared/MCP.md §1-5, ACP.md §6).

What lives here, pure functions over files and mappings: :func:`configured_servers` (the
workspace's ``.cursor/mcp.json`` over the config dir's ``mcp.json``: the project wins on a
name clash), :func:`interpolate` (``${env:NAME}``, ``${workspaceFolder}``, ``${userHome}`` in
``command``, ``args``, ``env``, ``url`` and ``headers``), :func:`approval_key` and
:func:`is_approved` (``--approve-mcps``, else an entry in
``<data dir>/projects/<slug>/mcp-approvals.json``, the data dir being ``CURSOR_DATA_DIR``,
else ``CURSOR_CONFIG_DIR``, else ``~/.cursor``: :func:`approval_root`; an unapproved server is
not loaded, and nothing is printed, like the CLI),
:func:`given_approval_keys` (the keys that approve a server given over ACP).

The permission rules, one matcher for every tool kind, print mode and ACP alike:
:func:`call_token` (a call as the rules see it: ``Shell(ls)``, ``Read(path)``,
``Write(path)`` for edits and deletes, ``Mcp(server:tool)``, ``WebFetch(domain)``,
``WebSearch(term)``), :func:`load_rules` (``permissions.allow`` / ``permissions.deny`` of the
project's ``.cursor/cli.json`` — under ACP its deny rules only — and the config dir's
``cli-config.json``, read anew at each call: ACP's "allow always" adds to them mid-session)
and :meth:`Rules.verdict` (deny beats allow; ``--force`` allows what is not denied; a
``WebFetch`` deny is ignored, as observed),
:func:`tool_allowed` (an MCP call in print mode). What does not: connecting
(:mod:`.mcp_client`), asking (the outputs).

Example:
    >>> interpolate({"url": "http://x/${env:P}", "headers": {"A": "Bearer ${env:T}"}},
    ...             {"P": "mcp", "T": "t0k"}, "/ws")
    {'url': 'http://x/mcp', 'headers': {'A': 'Bearer t0k'}}
    >>> workspace_slug("/home/u/my repo")
    'home-u-my-repo'
    >>> rules = Rules(allow=("Shell(ls)",), deny=("Shell(rm:*)", "Read(**/.env)"))
    >>> token = call_token("shellToolCall", "rm -rf build", {}, Path("/ws"))
    >>> str(token), rules.verdict(token, force=True)
    ('Shell(rm)', Verdict(kind='deny', rule='Shell(rm:*)'))
    >>> rules.verdict(call_token("shellToolCall", "ls -la", {}, Path("/ws")), force=False).kind
    'allow'
    >>> rules.verdict(call_token("readToolCall", "", {"path": "/ws/a/.env"}, Path("/ws")), force=False).kind
    'deny'
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from .settings import CONFIG_DIR_ENV, DATA_DIR_ENV

__all__ = ["Rules", "Token", "Verdict", "approval_key", "approval_root", "call_token", "configured_servers",
           "given_approval_keys", "glob_matches", "interpolate", "is_approved", "load_rules",
           "recorded_approvals", "rule_matches", "tool_allowed", "workspace_slug"]

_VAR = re.compile(r"\$\{(env:([A-Za-z_][A-Za-z0-9_]*)|workspaceFolder|userHome)\}")


MAX_CONFIG_BYTES = 4 << 20
"""A configuration file larger than this (4 MiB) is taken for unreadable, not read."""


def _read_bytes(path: Path) -> bytes | None:
    """A regular file's bytes; ``None`` for anything else (absent, a directory, a FIFO — opened
    without blocking, ``O_NONBLOCK``, and not read —, larger than :data:`MAX_CONFIG_BYTES`).

    Example:
        >>> import tempfile
        >>> _read_bytes(Path(tempfile.mkdtemp())) is None
        True
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_CONFIG_BYTES:
        os.close(fd)
        return None
    with os.fdopen(fd, "rb") as f:
        data = f.read(MAX_CONFIG_BYTES + 1)
    return data if len(data) <= MAX_CONFIG_BYTES else None


def _read_json(path: Path) -> Any:
    """The file's JSON value; ``None`` when it is unreadable (:func:`_read_bytes`) or not JSON."""
    data = _read_bytes(path)
    try:
        return None if data is None else json.loads(data)
    except (ValueError, RecursionError):  # (nested too deep: RecursionError)
        return None


def _read_object(path: Path) -> dict[str, Any]:
    value = _read_json(path)
    return value if isinstance(value, dict) else {}


def configured_servers(workspace: Path, config_dir: Path) -> dict[str, dict[str, Any]]:
    """Every server of both ``mcp.json`` files, the project's over the config dir's, as written.

    Example:
        >>> import tempfile
        >>> configured_servers(Path(tempfile.mkdtemp()), Path(tempfile.mkdtemp()))
        {}
    """
    servers: dict[str, dict[str, Any]] = {}
    for path in (config_dir / "mcp.json", workspace / ".cursor" / "mcp.json"):
        found = _read_object(path).get("mcpServers")
        if isinstance(found, dict):
            servers.update({k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, dict)})
    return servers


def _expand(text: str, env: Mapping[str, str], workspace: str) -> str:
    def one(m: re.Match[str]) -> str:
        if m.group(2) is not None:
            return env.get(m.group(2), "")
        if m.group(1) == "workspaceFolder":
            return workspace
        return env.get("HOME", os.path.expanduser("~"))

    return _VAR.sub(one, text)


def interpolate(entry: Mapping[str, Any], env: Mapping[str, str], workspace: str) -> dict[str, Any]:
    """``entry`` with the three interpolations resolved where the CLI resolves them."""
    out = dict(entry)
    for key in ("command", "url"):
        if isinstance(out.get(key), str):
            out[key] = _expand(out[key], env, workspace)
    if isinstance(out.get("args"), list):
        out["args"] = [_expand(a, env, workspace) if isinstance(a, str) else a for a in out["args"]]
    for key in ("env", "headers"):
        if isinstance(out.get(key), dict):
            out[key] = {k: _expand(v, env, workspace) if isinstance(v, str) else v
                        for k, v in out[key].items()}
    return out


def workspace_slug(workspace: str) -> str:
    """The approvals directory's name: runs of non-alphanumerics become ``-``, trimmed."""
    return re.sub(r"[^A-Za-z0-9]+", "-", workspace).strip("-")


def approval_key(name: str, entry: Mapping[str, Any], workspace: str) -> str:
    """``<name>-<16 hex>``: SHA-256 of ``JSON.stringify({path, server})`` (MCP.md §4).

    Example:
        >>> approval_key("app", {"url": "http://127.0.0.1:1/mcp"}, "/ws")[:4]
        'app-'
    """
    text = json.dumps({"path": workspace, "server": dict(entry)}, separators=(",", ":"),
                      ensure_ascii=False)
    return f"{name}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def approval_root(env: Mapping[str, str]) -> Path:
    """Where ``projects/<slug>/mcp-approvals.json`` lives, where the CLI reads it (MCP.md §4):
    ``CURSOR_DATA_DIR`` (the bundle resolves ``projects/`` through it), else
    ``CURSOR_CONFIG_DIR`` (whether it moves the file is not known, §11; the client writes there
    too), else ``$HOME/.cursor`` — not the simulator's own data directory, which a client
    writing the entries where the CLI reads them cannot know.

    Example:
        >>> str(approval_root({"HOME": "/h"})), str(approval_root({"CURSOR_CONFIG_DIR": "/c"}))
        ('/h/.cursor', '/c')
        >>> str(approval_root({"CURSOR_DATA_DIR": "/d", "CURSOR_CONFIG_DIR": "/c"}))
        '/d'
    """
    root = env.get(DATA_DIR_ENV) or env.get(CONFIG_DIR_ENV)
    if root:
        return Path(root)  # as given: Node does not expand a ``~`` (nor does the client)
    return Path(env.get("HOME") or os.path.expanduser("~")) / ".cursor"


def recorded_approvals(root: Path, workspace: str) -> set[str]:
    """The keys in ``<root>/projects/<slug>/mcp-approvals.json`` (none when absent or
    unreadable: :func:`_read_bytes`)."""
    recorded = _read_json(root / "projects" / workspace_slug(workspace) / "mcp-approvals.json")
    return {k for k in recorded if isinstance(k, str)} if isinstance(recorded, list) else set()


def is_approved(name: str, entry: Mapping[str, Any], workspace: str, root: Path,
                approve_all: bool) -> bool:
    """``--approve-mcps``, or the server's key recorded in the project's approvals file
    (``root``: :func:`approval_root`)."""
    if approve_all:
        return True
    return approval_key(name, entry, workspace) in recorded_approvals(root, workspace)


def given_approval_keys(name: str, entry: Mapping[str, Any], workspace: str) -> list[str]:
    """The keys that approve a server given in ACP's ``session/new`` (``entry`` in
    ``mcp.json``'s shape): the definition itself and, for an HTTP server, ``{url}`` alone, as
    the forum repro hashed it (MCP.md §4: which one a build hashes is unknown, either counts).

    Example:
        >>> len(given_approval_keys("app", {"url": "http://h/mcp", "headers": {}}, "/ws"))
        2
    """
    keys = [approval_key(name, entry, workspace)]
    if isinstance(entry.get("url"), str):
        keys.append(approval_key(name, {"url": entry["url"]}, workspace))
    return keys


DENY_IGNORED = frozenset({"WebFetch"})
"""Tools whose deny rules the CLI ignores: a ``WebFetch(*)`` deny still asks (ACP.md §6 [obs:RH])."""


@dataclass(frozen=True, slots=True)
class Token:
    """A call as the permission rules see it: ``tool`` (``Shell``, ``Read``, ``Write``, ``Mcp``,
    ``WebFetch``, ``WebSearch``) and ``arg`` (what ``str()`` shows and "allow always" writes:
    the command's first word, the path, ``server:tool``, the domain, the search term), and the
    other ``forms`` a rule's pattern may match (a command as ``cmd:args`` and whole, a path
    relative to the workspace).

    Example:
        >>> str(Token("Shell", "ls", ("ls:-la", "ls -la")))
        'Shell(ls)'
    """

    tool: str
    arg: str
    forms: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.tool}({self.arg})"


def rule_matches(rule: str, token: Token) -> bool:
    """True when ``rule`` (``Shell(ls)``, ``Read(src/**)``, ``Mcp(app:*)``) covers ``token``:
    same tool, and the pattern (``*`` globs anything, ``/`` too) matches its argument or one of
    its forms. ``Shell(curl:*)`` is ``curl`` with any arguments or none.

    Example:
        >>> shell = call_token("shellToolCall", "curl -s x", {}, Path("/ws"))
        >>> [rule_matches(r, shell) for r in ("Shell(curl)", "Shell(curl:*)", "Shell(*)", "Shell(ls)")]
        [True, True, True, False]
        >>> rule_matches("Write(*.md)", call_token("editToolCall", "", {"path": "/ws/a.md"}, Path("/ws")))
        True
    """
    name, paren, rest = rule.partition("(")
    if not paren or not rest.endswith(")") or name.strip() != token.tool:
        return False
    pattern = rest[:-1]
    return any(glob_matches(pattern, value) for value in (token.arg, *token.forms))


def glob_matches(pattern: str, text: str) -> bool:
    """Whether ``text`` is ``pattern`` with each ``*`` standing for any characters, ``/``
    included; every other character stands for itself (``?`` and ``[`` too). The pieces between
    the stars are found in order, each at its leftmost place (``str.find``): linear in practice
    (``fnmatch``'s translation is quadratic in a pattern's unclosed ``[``, and a rule comes from
    a file in the workspace).

    Example:
        >>> glob_matches("src/**", "src/a/b.py"), glob_matches("*.md", "a.txt"), glob_matches("a[1]", "a[1]")
        (True, False, True)
        >>> glob_matches("a*b*c", "axxbyyc"), glob_matches("a*b*c", "acb"), glob_matches("ab*ba", "aba")
        (True, False, False)
    """
    if "*" not in pattern:
        return pattern == text
    first, *middle, last = pattern.split("*")
    if len(first) + len(last) > len(text) or not text.startswith(first) or not text.endswith(last):
        return False
    at, end = len(first), len(text) - len(last)
    for piece in middle:
        found = text.find(piece, at, end)
        if found < 0:
            return False
        at = found + len(piece)
    return True


class Verdict(NamedTuple):
    """What the rules say of a call: ``allow``, ``deny`` (``rule``: the deny rule that matched)
    or ``ask`` (not listed: ACP asks the client, print mode refuses a shell command)."""

    kind: str
    rule: str = ""


@dataclass(frozen=True, slots=True)
class Rules:
    """``permissions.allow`` and ``permissions.deny``, both files merged (:func:`load_rules`).

    Example:
        >>> Rules(allow=("Mcp(s:t)",), deny=("Mcp(s:t)",)).verdict(Token("Mcp", "s:t"), force=True)
        Verdict(kind='deny', rule='Mcp(s:t)')
        >>> Rules(deny=("WebFetch(*)",)).verdict(Token("WebFetch", "a.com"), force=False).kind
        'ask'
    """

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()

    def verdict(self, token: Token, force: bool) -> Verdict:
        """Deny beats allow; ``force`` (``--force``) allows what is not denied (MCP.md §5)."""
        if token.tool not in DENY_IGNORED:
            for rule in self.deny:
                if rule_matches(rule, token):
                    return Verdict("deny", rule)
        if force or any(rule_matches(rule, token) for rule in self.allow):
            return Verdict("allow")
        return Verdict("ask")


def _permissions(path: Path) -> tuple[list[str], list[str]]:
    perms = _read_object(path).get("permissions")
    if not isinstance(perms, dict):
        return [], []
    allow, deny = perms.get("allow"), perms.get("deny")
    return ([a for a in allow if isinstance(a, str)] if isinstance(allow, list) else [],
            [d for d in deny if isinstance(d, str)] if isinstance(deny, list) else [])


def load_rules(workspace: Path, config_dir: Path | None, *, project_allow: bool = True) -> Rules:
    """The rules of the project's ``.cursor/cli.json`` and of ``<config_dir>/cli-config.json``
    (none for an absent or unreadable file: :func:`_read_bytes`). ``project_allow=False``
    keeps the project file's deny rules only (ACP: whether its allow rules count there is not
    known; the simulator keeps asking, as before).

    Example:
        >>> import tempfile
        >>> load_rules(Path(tempfile.mkdtemp()), None)
        Rules(allow=(), deny=())
    """
    allow, deny = _permissions(workspace / ".cursor" / "cli.json")
    if not project_allow:
        allow = []
    if config_dir is not None:
        a, d = _permissions(config_dir / "cli-config.json")
        allow += a
        deny += d
    return Rules(tuple(allow), tuple(deny))


def call_token(kind: str, target: str, args: Mapping[str, Any], workspace: Path) -> Token | None:
    """The token of a call of print-mode kind ``kind`` (``shellToolCall``) on ``target`` (the
    command, URL, term, tool) with its print-mode ``args``; ``None`` for a kind no rule names
    (``ls``, ``grep``, ``glob``, todos, questions, plans, tasks).

    Example:
        >>> call_token("webFetchToolCall", "https://example.com/a", {}, Path("/ws"))
        Token(tool='WebFetch', arg='example.com', forms=())
        >>> call_token("webFetchToolCall", "https://[docs.example.com]/a", {}, Path("/ws")).arg
        'https://[docs.example.com]/a'
        >>> call_token("deleteToolCall", "", {"path": "/ws/src/a.py"}, Path("/ws"))
        Token(tool='Write', arg='/ws/src/a.py', forms=('src/a.py',))
        >>> call_token("lsToolCall", "", {}, Path("/ws")) is None
        True
    """
    if kind == "shellToolCall":
        try:
            words = shlex.split(target)
        except ValueError:
            words = target.split()
        argv0 = words[0] if words else target
        return Token("Shell", argv0, (f"{argv0}:{' '.join(words[1:])}", target.strip()))
    if kind == "webFetchToolCall":
        try:
            host = urlsplit(target).hostname
        except ValueError:  # "https://[docs.example.com]/api": no host, the URL is the token
            host = None
        return Token("WebFetch", host or target)
    if kind == "webSearchToolCall":
        return Token("WebSearch", target)
    if kind == "mcpToolCall":
        return Token("Mcp", f"{args.get('providerIdentifier', '')}:{args.get('toolName', '')}")
    if kind in ("readToolCall", "editToolCall", "deleteToolCall"):
        path = args.get("path")
        path = path if isinstance(path, str) else target
        try:
            forms: tuple[str, ...] = (str(Path(path).relative_to(workspace)),)
        except ValueError:
            forms = ()
        return Token("Read" if kind == "readToolCall" else "Write", path, forms)
    return None


def tool_allowed(server: str, tool: str, workspace: Path, config_dir: Path, force: bool) -> bool:
    """Whether a call of ``server``'s ``tool`` runs without asking (print mode cannot ask).

    Example:
        >>> import tempfile
        >>> tool_allowed("s", "t", Path(tempfile.mkdtemp()), Path(tempfile.mkdtemp()), force=True)
        True
    """
    token = Token("Mcp", f"{server}:{tool}")
    return load_rules(workspace, config_dir).verdict(token, force).kind == "allow"
