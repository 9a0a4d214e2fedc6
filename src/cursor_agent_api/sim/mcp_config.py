"""The simulator's view of MCP configuration, as the CLI has it (docs: ../shared/MCP.md §1-5).

What lives here, pure functions over files and mappings: :func:`configured_servers` (the
workspace's ``.cursor/mcp.json`` over the config dir's ``mcp.json``: the project wins on a
name clash), :func:`interpolate` (``${env:NAME}``, ``${workspaceFolder}``, ``${userHome}`` in
``command``, ``args``, ``env``, ``url`` and ``headers``), :func:`approval_key` and
:func:`is_approved` (``--approve-mcps``, else an entry in
``<data dir>/projects/<slug>/mcp-approvals.json``, the data dir being ``CURSOR_DATA_DIR``,
else ``CURSOR_CONFIG_DIR``, else ``~/.cursor``: :func:`approval_root`; an unapproved server is
not loaded, and nothing is printed, like the CLI),
:func:`given_approval_keys` (the keys that approve a server given over ACP),
:func:`tool_allowed` (``Mcp(server:tool)`` in the project's
``.cursor/cli.json`` or the config dir's ``cli-config.json``; deny beats allow; ``--force``
allows what is not denied). What does not: connecting (:mod:`.mcp_client`).

Example:
    >>> interpolate({"url": "http://x/${env:P}", "headers": {"A": "Bearer ${env:T}"}},
    ...             {"P": "mcp", "T": "t0k"}, "/ws")
    {'url': 'http://x/mcp', 'headers': {'A': 'Bearer t0k'}}
    >>> workspace_slug("/home/u/my repo")
    'home-u-my-repo'
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .settings import CONFIG_DIR_ENV, DATA_DIR_ENV

__all__ = ["approval_key", "approval_root", "configured_servers", "given_approval_keys", "interpolate",
           "is_approved", "recorded_approvals", "tool_allowed", "workspace_slug"]

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
    except ValueError:
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


def _permissions(path: Path) -> tuple[list[str], list[str]]:
    perms = _read_object(path).get("permissions")
    if not isinstance(perms, dict):
        return [], []
    allow, deny = perms.get("allow"), perms.get("deny")
    return ([a for a in allow if isinstance(a, str)] if isinstance(allow, list) else [],
            [d for d in deny if isinstance(d, str)] if isinstance(deny, list) else [])


def tool_allowed(server: str, tool: str, workspace: Path, config_dir: Path, force: bool) -> bool:
    """Whether a call of ``server``'s ``tool`` runs without asking (print mode cannot ask).

    Example:
        >>> import tempfile
        >>> tool_allowed("s", "t", Path(tempfile.mkdtemp()), Path(tempfile.mkdtemp()), force=True)
        True
    """
    token = f"Mcp({server}:{tool})"
    allow: list[str] = []
    deny: list[str] = []
    for path in (workspace / ".cursor" / "cli.json", config_dir / "cli-config.json"):
        a, d = _permissions(path)
        allow += a
        deny += d
    if token in deny:
        return False
    return force or token in allow
