"""The subcommands: ``create-chat``, ``status``/``whoami``, ``models``/``--list-models``,
``login``, ``logout``, ``mcp list``, ``--version``; and the refusals for the interactive ones.

Example:
    >>> VERSION.startswith("2026.")
    True
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from . import messages, signals
from .cli_args import Options
from .ids import new_chat_id
from .mcp_config import approval_root, configured_servers, is_approved
from .models import DEFAULT_MODEL, MODELS
from .node_text import node_bytes
from .settings import SimSettings
from .store import ChatStore
from .writer import write_all

VERSION = "2026.09.15-sim"
"""What ``--version`` prints: the build the simulator follows, marked as simulated."""

ACCOUNT = "simulator@cursor-agent-sim.invalid"


def _out(text: str) -> None:
    write_all(1, node_bytes(text + "\n"))


def _err(text: str) -> None:
    write_all(2, node_bytes(text + "\n"))


def version() -> int:
    """``--version``: print :data:`VERSION`.

    Example::

        $ cursor-agent-sim --version
        2026.09.15-sim
    """
    _out(VERSION)
    return 0


def status(opts: Options, env: Mapping[str, str], store: ChatStore, settings: SimSettings) -> int:
    """``status`` / ``whoami``: exit 0 either way; "Not logged in" when unauthenticated.

    Example::

        $ cursor-agent-sim status
        ✓ Logged in as simulator@cursor-agent-sim.invalid
    """
    from .turn import PreflightError, api_key_source  # the agent: only here

    try:
        source = api_key_source(opts, env, store, settings)
    except PreflightError:
        _out("Not logged in")
        return 0
    if source == "login":
        _out(f"✓ Logged in as {ACCOUNT}")
    else:
        _out(f"✓ Logged in with an API key (from {'--api-key' if source == 'flag' else 'CURSOR_API_KEY'})")
    return 0


def models(opts: Options, env: Mapping[str, str], store: ChatStore, settings: SimSettings) -> int:
    """``models`` / ``--list-models``: ``slug - Display Name`` lines; needs auth.

    Example::

        $ cursor-agent-sim models | grep mini
        gpt-5-mini - GPT-5 Mini
    """
    from .turn import PreflightError, api_key_source  # the agent: only here

    try:
        api_key_source(opts, env, store, settings)
    except PreflightError as e:
        _err(str(e))
        return e.exit_code
    _out("Available models\n")
    for slug, name in MODELS.items():
        _out(f"{slug} - {name}" + (" (default)" if slug == DEFAULT_MODEL else ""))
    return 0


def login(store: ChatStore) -> int:
    """``login``: the simulator logs in at once (no browser).

    Example::

        $ cursor-agent-sim login
        ✓ Logged in as simulator@cursor-agent-sim.invalid
    """
    store.set_logged_in(True)
    _out(f"✓ Logged in as {ACCOUNT}")
    return 0


def logout(store: ChatStore) -> int:
    """``logout``: later runs need an API key until ``login``.

    Example::

        $ cursor-agent-sim logout && cursor-agent-sim status
        Logged out successfully
        Not logged in
    """
    store.set_logged_in(False)
    _out("Logged out successfully")
    return 0


def create_chat(opts: Options, env: Mapping[str, str], store: ChatStore, settings: SimSettings) -> int:
    """``create-chat``: print a new chat id, then — like 2026 builds — keep running until
    signalled (SIGTERM: exit 143; SIGINT: exit 130).

    Example::

        $ cursor-agent-sim create-chat
        3f2b6c0e-…        (and it keeps running: read the line, then stop it)
    """
    from .turn import PreflightError, api_key_source  # the agent: only here

    try:
        api_key_source(opts, env, store, settings)
    except PreflightError as e:
        _err(str(e))
        return e.exit_code
    workspace = str(Path(opts.workspace or os.getcwd()).expanduser().resolve())
    chat_id = new_chat_id(settings.seed, workspace, "create-chat", store.chat_count(workspace))
    store.chat(workspace, chat_id).create(opts.model)
    signals.install(lambda: None)
    _out(chat_id)
    signals.wait_forever()
    return 0  # not reached


NO_MCP_SERVERS = "No MCP servers configured (expected in .cursor/mcp.json or ~/.cursor/mcp.json)"
"""What ``agent mcp list`` prints with no server configured (MCP.md §1 [obs:TH])."""


def mcp_list(opts: Options, env: Mapping[str, str], store: ChatStore) -> int:
    """``mcp list``: the servers of the workspace's ``.cursor/mcp.json`` and the config dir's
    ``mcp.json`` (the project's entry wins), one ``name: approved`` or
    ``name: not loaded (needs approval)`` line each, by name — the simulator's own format, as no
    reference gives the real one; with none, the real message. Exit 0, logged in or not.

    Example::

        $ cursor-agent-sim mcp list
        No MCP servers configured (expected in .cursor/mcp.json or ~/.cursor/mcp.json)
    """
    workspace = Path(opts.workspace or os.getcwd()).expanduser().resolve()
    servers = configured_servers(workspace, store.config_dir)
    if not servers:
        _out(NO_MCP_SERVERS)
        return 0
    for name in sorted(servers):
        approved = is_approved(name, servers[name], str(workspace), approval_root(env), opts.approve_mcps)
        _out(f"{name}: {'approved' if approved else 'not loaded (needs approval)'}")
    return 0


def interactive_only(name: str) -> int:
    """``ls``, ``resume`` and the rest need the real CLI's terminal UI.

    Example::

        $ cursor-agent-sim ls; echo $?
        Error: `ls` needs an interactive terminal; ...
        1
    """
    _err(f"Error: `{name}` needs an interactive terminal; cursor-agent-sim simulates headless mode only.")
    return 1


def not_simulated(name: str) -> int:
    """A subcommand the simulator does not provide (``update``, ``mcp`` but ``mcp list``).

    Example::

        $ cursor-agent-sim update; echo $?
        Error: `update` is not simulated by cursor-agent-sim.
        1
    """
    _err(f"Error: `{name}` is not simulated by cursor-agent-sim.")
    return 1


__all__ = [
    "VERSION",
    "create_chat",
    "interactive_only",
    "login",
    "logout",
    "mcp_list",
    "messages",
    "models",
    "not_simulated",
    "status",
    "version",
]
