"""``cursor-agent-sim acp``: the deterministic agent behind Cursor's ACP front end
(JSON-RPC 2.0 over stdio, one message per line), as ACP.md describes ``agent acp``.

Methods: ``initialize`` (Cursor's capability block), ``authenticate`` (``cursor_login``: works
when logged in, else the headless browser failure), ``session/new|load|list|prompt``,
``session/cancel`` (a notification), ``session/set_mode``, ``session/set_config_option``,
``session/set_model``, ``cursor/list_available_models``; anything else ``-32601``. The process
counts as authenticated at start when logged in (print mode's notion: ``login``/``logout``)
or given an API key (``--api-key``, ``CURSOR_API_KEY``); then sessions need no
``authenticate``. Global flags go before ``acp``: ``--force`` (nothing asks; deny rules still
hold), ``--model``.

One process, many sessions, one turn at a time: while a turn runs (also while it waits on a
shell command or an MCP call: :attr:`~.context.TurnContext.waiting`), ``session/cancel`` and
answers are handled at once (a cancel kills the running command); ``session/prompt`` and
``session/load`` wait for the turn (a prompt on the busy session cancels it first); other
requests are answered at once. The
turn's frames come from :class:`~.acp_output.AcpOutput`; sessions are stored by
:mod:`.acp_store`. Faults (``CURSOR_AGENT_SIM_FAULT``): ``auth``, ``crash``, ``banner`` (noise
on stdout), ``slow``, ``slow-start`` (``initialize`` answered late), ``cancel-unsupported``,
``load-not-found``, ``reject-failed`` (a rejected
call ends ``failed``; the real builds' ``completed`` is the default), ``crash-once`` (``crash``,
once per config dir), ``unknown-request`` (an unknown agent request mid-turn, awaited),
``list-unsupported`` (no ``session/list``: 03.25/03.30), ``ask-after-cancel`` (one more
permission request after a cancel, before ``cancelled``). Variables (:mod:`.settings`):
``CURSOR_AGENT_SIM_ACP_EOF`` (``linger``, the default: at the end of stdin once a prompt turn
has run, the process stays until signalled or :data:`~.settings.LINGER_S` has passed, as the
real builds did not exit; idle, it exits at once), ``CURSOR_AGENT_SIM_ACP_CURSOR_FORM``
(``cursor/update_todos`` and ``cursor/task`` as requests or as notifications),
``CURSOR_AGENT_SIM_ACP_USER_ECHO`` (the prompt as a live ``user_message_chunk``).

Example::

    $ printf '%s\\n' '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}' \\
        | cursor-agent-sim acp
    {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true,…}}}
"""

from __future__ import annotations

import collections
import contextlib
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from . import messages
from .acp_output import AcpOutput, AcpSessionState, TurnCancelled
from .acp_store import AcpSessionFiles, AcpStore
from .agent import Agent
from .cli_args import Options
from .context import TurnContext
from .ids import Clock, TurnIds, new_chat_id
from .jsonrpc import AUTH_REQUIRED, INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, Connection, Message
from .mcp_client import ACP_GIVEN_ENV, McpSession
from .mcp_config import configured_servers
from .models import DEFAULT_MODEL, MODELS, call_style, display_name
from .settings import LINGER_S, Fault, SimSettings
from .store import ChatStore, Turn, update_file
from .turn import PreflightError, api_key_source
from .writer import BANNER_AMONG, BANNER_LINES, write_all

PROTOCOL_VERSION = 1

AUTH_METHODS = [
    {
        "id": "cursor_login",
        "name": "Cursor Login",
        "description": "Authenticate using existing Cursor login credentials. "
        "Run 'agent login' first if not logged in.",
    }
]

CAPABILITIES: dict[str, Any] = {
    "loadSession": True,
    "mcpCapabilities": {"http": True, "sse": True},
    "promptCapabilities": {"audio": False, "embeddedContext": False, "image": True},
    "sessionCapabilities": {"list": {}},
}
"""Cursor's ``agentCapabilities`` on 08.11-09.10 (ACP.md §3); no ``agentInfo``, no ``_meta``."""

MODES = [
    {"id": "agent", "name": "Agent", "description": "Full agent capabilities with tool access"},
    {
        "id": "plan",
        "name": "Plan",
        "description": "Read-only mode for planning and designing before implementation",
    },
    {"id": "ask", "name": "Ask", "description": "Q&A mode - no edits or command execution"},
]

COMMANDS = [
    {"name": "plan", "description": "Switch to plan mode"},
    {"name": "ask", "description": "Switch to ask mode"},
    {"name": "summarize", "description": "Summarize the conversation"},
]
"""What ``available_commands_update`` lists after ``session/new``."""

AUTH_MESSAGE = (
    "Authentication required. Please run 'agent login' first, then call authenticate() "
    "with methodId 'cursor_login'."
)
BROWSER_MESSAGE = (
    "Failed to open browser for login. Please visit: https://cursor.com/loginDeepControl?challenge=sim"
)


class RpcError(Exception):
    """A request's error answer."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


@dataclass(slots=True)
class LiveSession:
    """A session this process holds: its files, its cwd, its model and its turn state."""

    files: AcpSessionFiles
    cwd: str
    model: str
    state: AcpSessionState
    title: str | None = None
    mcp: McpSession | None = None
    """The MCP servers loaded at ``session/new``/``session/load`` (the files' and the given)."""


@dataclass(slots=True)
class RunningTurn:
    """The turn in progress: its session and whether it was cancelled."""

    session_id: str
    cancelled: bool = False


@dataclass
class Server:
    """The ACP server of one process (see the module docstring)."""

    opts: Options
    env: Mapping[str, str]
    store: ChatStore
    settings: SimSettings
    conn: Connection
    authenticated: bool = False
    invalid_key: bool = False
    bare_model_ids: bool = False
    sessions: dict[str, LiveSession] = field(default_factory=dict)
    deferred: collections.deque[Message] = field(default_factory=collections.deque)
    turn: RunningTurn | None = None
    prompted: bool = False
    """A prompt turn has run (then the end of stdin does not end the process at once)."""
    created: int = 0
    mcp_files: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    """Each workspace's ``mcp.json`` servers, as first read (:meth:`configured_servers`)."""

    def __post_init__(self) -> None:
        self.acp_store = AcpStore(self.store)
        try:
            api_key_source(self.opts, self.env, self.store, self.settings)
            self.authenticated = True
        except PreflightError:
            if self.opts.auth_token or self.env.get("CURSOR_AUTH_TOKEN"):
                self.authenticated = True  # an auth token counts as a login (ACP.md §2)
                return
            key = self.opts.api_key or self.env.get("CURSOR_API_KEY") or ""
            self.invalid_key = key.lower().startswith("invalid") and not self.settings.has(Fault.AUTH)

    # ---- the loop -------------------------------------------------------------------------------

    def serve(self) -> int:
        """Answer messages until stdin closes; the exit code."""
        if self.settings.has(Fault.BANNER):
            for line in BANNER_LINES:
                self.conn.raw(line)
            self.conn.after_write = lambda n: self.conn.raw(BANNER_AMONG) if n == 2 else None
        while True:
            message = self.deferred.popleft() if self.deferred else self.conn.next()
            if message is None:
                if self.prompted and self.settings.acp_eof == "linger":
                    linger(LINGER_S)  # as the real builds after a turn (ACP.md §1)
                return 0
            self.handle(message)

    def handle(self, message: Message) -> None:
        """One incoming message, outside a turn."""
        if message.kind == "notification":
            self._notification(message)
        elif message.kind == "request":
            self._request(message)
        # responses outside a turn are late answers (after a cancel): dropped

    def _notification(self, message: Message) -> None:
        if message.method != "session/cancel":
            return
        if self.settings.has(Fault.CANCEL_UNSUPPORTED):
            self.conn.error(None, METHOD_NOT_FOUND, "Method not found: session/cancel")
            return
        params = message.params if isinstance(message.params, dict) else {}
        session_id = params.get("sessionId")
        if self.turn is not None and session_id == self.turn.session_id:
            self.turn.cancelled = True
        # a prompt of the session still queued behind a turn (another session's, or the one
        # just cancelled) is pending too: it answers cancelled at once and never runs (ACP.md §8)
        queued = [m for m in self.deferred if m.kind == "request" and m.method == "session/prompt"
                  and isinstance(m.params, dict) and m.params.get("sessionId") == session_id]
        for m in queued:
            self.deferred.remove(m)
            self.conn.result(m.id, {"stopReason": "cancelled"})

    def _request(self, message: Message) -> None:
        handler = _METHODS.get(message.method)
        if message.method == "session/list" and self.settings.has(Fault.LIST_UNSUPPORTED):
            handler = None  # the builds of 03.25/03.30
        if handler is None:
            self.conn.error(message.id, METHOD_NOT_FOUND, f"Method not found: {message.method}")
            return
        params = message.params if isinstance(message.params, dict) else {}
        try:
            result = handler(self, params)
        except RpcError as e:
            self.conn.error(message.id, e.code, e.message, e.data)
            return
        except Exception as e:  # a bug of the simulator: answer it and say so, keep serving
            write_all(2, f"cursor-agent-sim acp internal error in {message.method}: {e!r}\n".encode())
            self.conn.error(message.id, INTERNAL_ERROR, "Internal error", {"details": str(e)})
            return
        self.conn.result(message.id, result)
        after = _AFTER.get(message.method)
        if after is not None:
            after(self, result)

    # ---- during a turn (the AcpHost of AcpOutput) -----------------------------------------------

    def _during_turn(self, message: Message) -> None:
        """A message that arrives while a turn runs."""
        turn = self.turn
        if message.kind == "request" and message.method in ("session/prompt", "session/load"):
            params = message.params if isinstance(message.params, dict) else {}
            if (
                turn is not None
                and message.method == "session/prompt"
                and params.get("sessionId") == turn.session_id
            ):
                turn.cancelled = True  # a second prompt on a busy session ends the first
            self.deferred.append(message)
        else:
            self.handle(message)

    def update(self, session_id: str, update: dict[str, Any]) -> None:
        if self.settings.has(Fault.SLOW):
            time.sleep(self.settings.delay_for(Fault.SLOW))
        self.conn.notify("session/update", {"sessionId": session_id, "update": update})

    def ask(self, method: str, params: dict[str, Any]) -> tuple[str, Any]:
        request_id = self.conn.request(method, params)
        while True:
            if self.turn is not None and self.turn.cancelled:
                return "cancelled", None
            message = self.conn.next()
            if message is None:  # stdin closed: nobody will answer
                if self.turn is not None:
                    self.turn.cancelled = True
                return "cancelled", None
            if message.kind == "response":
                if message.id == request_id:
                    return (
                        ("error", message.error) if message.error is not None else ("result", message.result)
                    )
                continue  # a late answer to an earlier request
            self._during_turn(message)

    def tell(self, method: str, params: dict[str, Any]) -> None:
        if self.settings.acp_cursor_form == "notification":
            self.conn.notify(method, params)  # Cursor's documented form (ACP.md §9)
        else:
            self.conn.request(method, params)  # the wire's: an id, not awaited

    def check_cancel(self) -> None:
        while (message := self.conn.poll()) is not None:
            if message.kind != "response":
                self._during_turn(message)
        if self.turn is not None and self.turn.cancelled:
            raise TurnCancelled()

    def crash_point(self) -> None:
        crash = self.settings.has(Fault.CRASH)
        if not crash and self.settings.has(Fault.CRASH_ONCE):
            marker = self.store.config_dir / "acp-sim-crashed"
            if not marker.exists():
                marker.parent.mkdir(parents=True, exist_ok=True)
                marker.write_bytes(b"")
                crash = True
        if crash:
            write_all(2, (messages.crash() + "\n").encode())
            os._exit(1)

    def _config_path(self) -> Path:
        return self.store.config_dir / "cli-config.json"

    def remember(self, token: str) -> None:
        """Add ``token`` to the allow list (with what other processes add at once)."""

        def add(data: bytes | None) -> bytes:
            config = _config(data)
            permissions = config.setdefault("permissions", {})
            if not isinstance(permissions, dict):
                permissions = config["permissions"] = {}
            allow = permissions.setdefault("allow", [])
            if isinstance(allow, list) and token not in allow:
                allow.append(token)
            return orjson.dumps(config, option=orjson.OPT_INDENT_2)

        update_file(self._config_path(), add)

    # ---- helpers --------------------------------------------------------------------------------

    def require_auth(self) -> None:
        """The gate of the session methods."""
        if self.invalid_key:
            raise RpcError(INTERNAL_ERROR, "Failed to initialize session services")
        if self.settings.has(Fault.AUTH) or not self.authenticated:
            raise RpcError(AUTH_REQUIRED, "Authentication required", {"message": AUTH_MESSAGE})

    def model_id(self, slug: str) -> str:
        """A model's id in the picker space the client chose (bracketed unless it asked for bare ids)."""
        base = "default" if slug == DEFAULT_MODEL else slug
        return base if self.bare_model_ids else f"{base}[]"

    def slug_of(self, model_id: str) -> str | None:
        """The slug of a model id, ``None`` when it is not one of this picker space."""
        for slug in MODELS:
            if self.model_id(slug) == model_id:
                return slug
        return None

    def session_setup(self, live: LiveSession) -> dict[str, Any]:
        """``modes``, ``models`` and ``configOptions`` of a session."""
        current = self.model_id(live.model)
        models = [{"modelId": self.model_id(s), "name": name} for s, name in MODELS.items()]
        return {
            "modes": {"currentModeId": live.state.mode, "availableModes": MODES},
            "models": {"currentModelId": current, "availableModels": models},
            "configOptions": self.config_options(live),
        }

    def config_options(self, live: LiveSession) -> list[dict[str, Any]]:
        """The session's ``configOptions``: ``mode`` and ``model``."""
        return [
            {
                "id": "mode",
                "name": "Mode",
                "category": "mode",
                "type": "select",
                "currentValue": live.state.mode,
                "options": [{"value": m["id"], "name": m["name"]} for m in MODES],
            },
            {
                "id": "model",
                "name": "Model",
                "category": "model",
                "type": "select",
                "currentValue": self.model_id(live.model),
                "options": [{"value": self.model_id(s), "name": n} for s, n in MODELS.items()],
            },
        ]

    def live(self, params: dict[str, Any]) -> LiveSession:
        """The live session named by ``params["sessionId"]``."""
        session_id = params.get("sessionId")
        live = self.sessions.get(session_id) if isinstance(session_id, str) else None
        if live is None:
            raise RpcError(INVALID_PARAMS, f'Session "{session_id}" not found')
        return live

    def load_mcp(self, live: LiveSession, given: Any) -> None:
        """Connect the session's MCP servers now (08.11 connected them during ``session/new``,
        before any prompt): those of the ``mcp.json`` files (as this process first read them)
        and the ``mcpServers`` given, each only with a matching approval entry —
        ``--approve-mcps`` is not wired to ACP (MCP.md §4); ``CURSOR_AGENT_SIM_ACP_MCP=connect``
        loads the given ones without one, as 08.11 did (§7). Calls are gated by
        ``session/request_permission`` here, not by the allowlist of print mode."""
        if live.mcp is not None:
            live.mcp.close()
        workspace = Path(live.cwd).resolve()
        live.mcp = McpSession(workspace, self.store.config_dir, self.env, approve_all=False, force=True,
                              given=mcp_entries(given),
                              given_need_approval=self.env.get(ACP_GIVEN_ENV, "approvals") != "connect",
                              configured=self.configured_servers(workspace))
        live.mcp.start()

    def configured_servers(self, workspace: Path) -> dict[str, dict[str, Any]]:
        """The ``mcp.json`` servers of ``workspace``, read once per process (MCP.md §1: files
        are read at process start; a change needs a new ``agent acp``): the first session in
        a workspace reads them, later ones reuse that."""
        key = str(workspace)
        if key not in self.mcp_files:
            self.mcp_files[key] = configured_servers(workspace, self.store.config_dir)
        return self.mcp_files[key]

    def close(self) -> None:
        """Disconnect every session's MCP servers."""
        for live in self.sessions.values():
            if live.mcp is not None:
                live.mcp.close()

    def new_live(self, files: AcpSessionFiles, cwd: str, title: str | None = None) -> LiveSession:
        """Hold a session in this process."""
        state = AcpSessionState(
            files.session_id,
            force=self.opts.force,
            ask_edits=self.settings.acp_ask_edits,
            enrich=self.settings.acp_enrich,
            reject_completed=not self.settings.has(Fault.REJECT_FAILED),
        )
        live = LiveSession(files, cwd, self.opts.model or DEFAULT_MODEL, state, title)
        self.sessions[files.session_id] = live
        return live


# ---- the methods --------------------------------------------------------------------------------


def _initialize(server: Server, params: dict[str, Any]) -> dict[str, Any]:
    caps = params.get("clientCapabilities")
    meta = caps.get("_meta") if isinstance(caps, dict) else None
    server.bare_model_ids = isinstance(meta, dict) and meta.get("parameterizedModelPicker") is True
    if server.settings.has(Fault.SLOW_START):  # a build that takes its time to start
        time.sleep(server.settings.delay_for(Fault.SLOW_START))
    caps = dict(CAPABILITIES)
    if server.settings.has(Fault.LIST_UNSUPPORTED):
        del caps["sessionCapabilities"]  # the builds of 03.25/03.30 (ACP.md §3)
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": caps,
        "authMethods": AUTH_METHODS,
    }


def _authenticate(server: Server, params: dict[str, Any]) -> dict[str, Any]:
    method = params.get("methodId")
    if method != "cursor_login":
        raise RpcError(
            INVALID_PARAMS,
            "Invalid params",
            {"message": f"Unknown authentication method: {method}. Supported method: cursor_login"},
        )
    if server.settings.has(Fault.AUTH) or not server.store.logged_in():
        # the browser login cannot work headless: it fails at once (ACP.md §2)
        raise RpcError(INVALID_PARAMS, "Invalid params", {"message": BROWSER_MESSAGE})
    server.authenticated = True
    server.invalid_key = False
    return {}


def _zod(path: str, expected: str) -> dict[str, Any]:
    return {
        "code": "invalid_type",
        "expected": expected,
        "received": "undefined",
        "path": [path],
        "message": "Required",
    }


def _session_new(server: Server, params: dict[str, Any]) -> dict[str, Any]:
    server.require_auth()
    issues = []
    if not isinstance(params.get("cwd"), str):
        issues.append(_zod("cwd", "string"))
    if not isinstance(params.get("mcpServers"), list):
        issues.append(_zod("mcpServers", "array"))
    if issues:
        raise RpcError(INTERNAL_ERROR, "Internal error", issues)
    cwd = str(params["cwd"])
    session_id = new_chat_id(server.settings.seed, "acp", cwd, server.created)
    server.created += 1
    live = server.new_live(server.acp_store.create(session_id, cwd), cwd)
    server.load_mcp(live, params["mcpServers"])
    return {"sessionId": session_id, **server.session_setup(live)}


def _after_new(server: Server, result: Any) -> None:
    session_id = result["sessionId"]
    update = {"sessionUpdate": "available_commands_update", "availableCommands": COMMANDS}
    server.conn.notify("session/update", {"sessionId": session_id, "update": update})


def _session_load(server: Server, params: dict[str, Any]) -> dict[str, Any]:
    server.require_auth()
    session_id = params.get("sessionId")
    if not isinstance(session_id, str) or not isinstance(params.get("cwd"), str):
        raise RpcError(INVALID_PARAMS, "Invalid params")
    files = None if server.settings.has(Fault.LOAD_NOT_FOUND) else server.acp_store.open(session_id)
    if files is None:
        raise RpcError(INVALID_PARAMS, f'Session "{session_id}" not found')
    for update in files.replay():  # replay before the result; the result marks the end
        server.conn.notify("session/update", {"sessionId": session_id, "update": update})
    live = server.sessions.get(session_id)
    if live is None:
        live = server.new_live(files, str(params["cwd"]), files.meta().get("title"))
    live.cwd = str(params["cwd"])  # not checked: the live session is rebound there (ACP.md §10)
    server.load_mcp(live, params.get("mcpServers"))
    return server.session_setup(live)


def _session_list(server: Server, params: dict[str, Any]) -> dict[str, Any]:
    server.require_auth()
    if params.get("cursor") is not None:
        raise RpcError(INVALID_PARAMS, "Invalid params", {"message": "Pagination is not supported"})
    return {"sessions": server.acp_store.list()}


def _prompt_text(prompt: Any) -> str:
    if not isinstance(prompt, list):
        raise RpcError(
            INVALID_PARAMS, "Invalid params", {"message": "prompt must be an array of content blocks"}
        )
    parts: list[str] = []
    for block in prompt:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif block.get("type") == "resource_link" and isinstance(block.get("uri"), str):
            parts.append(block["uri"])
    return "\n".join(parts).strip()


def _session_prompt(server: Server, params: dict[str, Any]) -> dict[str, Any]:
    server.require_auth()
    live = server.live(params)
    text = _prompt_text(params.get("prompt"))
    if not Path(live.cwd).is_dir():
        raise RpcError(
            INTERNAL_ERROR, "Internal error", {"details": f"Workspace directory does not exist: {live.cwd}"}
        )
    files = live.files
    history = files.turns()
    ctx = TurnContext(
        session_id=files.session_id,
        workspace=Path(live.cwd).resolve(),
        model=display_name(live.model),
        prompt=text,
        force=live.state.force,
        partial=True,
        history=history,
        clock=Clock(server.settings.seed),
        ids=TurnIds(files.session_id, len(history), text, call_style=call_style(live.model)),
        mode=live.state.mode,
        subagents=True,
        mcp=live.mcp,
        acp=True,
        config_dir=server.store.config_dir,
        waiting=server.check_cancel,  # a running command or MCP call keeps serving stdin
    )
    out = AcpOutput(ctx, live.state, server)
    server.turn = running = RunningTurn(files.session_id)
    server.prompted = True
    stop = "end_turn"
    try:
        if server.settings.acp_user_echo:  # one probe saw the prompt echoed live (ACP.md §5)
            server.update(files.session_id, {"sessionUpdate": "user_message_chunk",
                                             "content": {"type": "text", "text": text}})
        if live.title is None:
            live.title = " ".join(text.split()[:6]) or "New chat"
            files.write_meta(live.title)
            server.update(files.session_id, {"sessionUpdate": "session_info_update", "title": live.title})
        if server.settings.has(Fault.UNKNOWN_REQUEST):
            # a request no client knows, awaited as the builds await theirs (ACP.md §11)
            server.ask("cursor/sim_unknown", {"sessionId": files.session_id})
            server.check_cancel()
        for _ in Agent(ctx).run(out):
            pass
    except TurnCancelled:
        stop = "cancelled"
        if server.settings.has(Fault.ASK_AFTER_CANCEL):
            running.cancelled = False  # it asks once more, and waits (or a cancel again)
            out.after_cancel()
    finally:
        server.turn = None
    files.add_turn(Turn(text, "".join(out.text), ctx.ids.request_id), out.replay_updates(len(history)))
    return {"stopReason": stop}


def _session_set_mode(server: Server, params: dict[str, Any]) -> dict[str, Any]:
    live = server.live(params)
    mode = params.get("modeId")
    if mode not in {m["id"] for m in MODES}:
        raise RpcError(INTERNAL_ERROR, "Internal error", {"details": f"Invalid mode ID: {mode}"})
    live.state.mode = str(mode)
    server.update(
        live.files.session_id, {"sessionUpdate": "current_mode_update", "currentModeId": live.state.mode}
    )
    return {}


def _session_set_config_option(server: Server, params: dict[str, Any]) -> dict[str, Any]:
    live = server.live(params)
    config, value = params.get("configId"), params.get("value")
    if config == "mode":
        if value not in {m["id"] for m in MODES}:
            raise RpcError(INTERNAL_ERROR, "Internal error", {"details": f"Invalid mode ID: {value}"})
        live.state.mode = str(value)
    elif config == "model":
        slug = server.slug_of(str(value))
        if slug is None:
            raise RpcError(
                INVALID_PARAMS, "Invalid model value", {"message": f"Invalid model value: {value}"}
            )
        live.model = slug
    else:
        raise RpcError(INVALID_PARAMS, "Invalid params", {"message": f"Unknown config option: {config}"})
    return {"configOptions": server.config_options(live)}


def _session_set_model(server: Server, params: dict[str, Any]) -> dict[str, Any]:
    live = server.live(params)
    slug = server.slug_of(str(params.get("modelId")))
    if slug is None:
        raise RpcError(
            INVALID_PARAMS,
            "Invalid model value",
            {"message": f"Invalid model value: {params.get('modelId')}"},
        )
    live.model = slug
    return {}


def _list_models(server: Server, params: dict[str, Any]) -> dict[str, Any]:
    return {
        "models": [{"modelId": server.model_id(s), "name": n, "configOptions": []} for s, n in MODELS.items()]
    }


_METHODS: dict[str, Callable[[Server, dict[str, Any]], dict[str, Any]]] = {
    "initialize": _initialize,
    "authenticate": _authenticate,
    "session/new": _session_new,
    "session/load": _session_load,
    "session/list": _session_list,
    "session/prompt": _session_prompt,
    "session/set_mode": _session_set_mode,
    "session/set_config_option": _session_set_config_option,
    "session/set_model": _session_set_model,
    "cursor/list_available_models": _list_models,
}
"""Every request the simulator answers; any other method (``session/cancel`` sent with an id,
``session/resume|close|fork``, …) gets ``-32601``."""

_AFTER: dict[str, Callable[[Server, Any], None]] = {"session/new": _after_new}
"""What follows a method's answer (``available_commands_update`` after ``session/new``)."""


def serve(opts: Options, env: Mapping[str, str], store: ChatStore, settings: SimSettings) -> int:
    """Run ``cursor-agent-sim acp`` on stdin/stdout until stdin closes; the exit code."""
    refusal = settings.refusal("acp")
    if refusal is not None:  # a fault or a script that would change nothing here
        write_all(2, f"cursor-agent-sim: {refusal}\n".encode())
        return 1
    server = Server(opts, env, store, settings, Connection())
    try:
        with contextlib.suppress(KeyboardInterrupt):
            return server.serve()
        return 130
    finally:
        server.close()


def linger(seconds: float) -> None:
    """Stay ``seconds`` (a signal ends the process before: SIGTERM exits 143)."""
    time.sleep(seconds)


def _config(data: bytes | None) -> dict[str, Any]:
    """``cli-config.json`` as a dict (empty when it is missing or malformed)."""
    try:
        obj: Any = orjson.loads(data) if data is not None else None
    except orjson.JSONDecodeError:
        return {}
    return obj if isinstance(obj, dict) else {}


def mcp_entries(servers: Any) -> dict[str, dict[str, Any]]:
    """ACP's ``mcpServers`` array as ``mcp.json`` entries (malformed items are skipped).

    Example:
        >>> entries = mcp_entries([{"name": "app", "type": "http", "url": "http://h/mcp",
        ...                         "headers": [{"name": "A", "value": "b"}]},
        ...                        {"name": "rg", "command": "rg-mcp", "args": [], "env": []}])
        >>> entries["app"], entries["rg"]
        ({'url': 'http://h/mcp', 'headers': {'A': 'b'}}, {'command': 'rg-mcp', 'args': [], 'env': {}})
    """

    def pairs(items: Any) -> dict[str, str]:
        return {str(i["name"]): str(i.get("value", "")) for i in items or []
                if isinstance(i, dict) and isinstance(i.get("name"), str)}

    out: dict[str, dict[str, Any]] = {}
    for item in servers if isinstance(servers, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        if isinstance(item.get("command"), str):
            out[item["name"]] = {"command": item["command"],
                                 "args": [str(a) for a in item.get("args") or []],
                                 "env": pairs(item.get("env"))}
        elif isinstance(item.get("url"), str):
            out[item["name"]] = {"url": item["url"], "headers": pairs(item.get("headers"))}
    return out
