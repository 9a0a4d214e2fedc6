"""One print-mode turn: the checks the real CLI makes before it starts (auth, model, resume
id, trust, chat lock), then the events of the agent or of a script, written by the
:class:`~.writer.Writer`, with the stream-level faults (``silence``, ``crash``,
``hang-after-result``, ``exit1-after-result``, ``ignore-sigterm``, ``slow-start``).

How "logged in" is decided: the simulator is logged in by default (``apiKeySource:
"login"``); ``logout`` records the opposite in the config dir and ``login`` undoes it. An API
key from ``--api-key`` (``"flag"``) or ``CURSOR_API_KEY`` (``"env"``) is accepted unless it
starts with ``invalid`` (then the invalid-key warning, exit 1). ``CURSOR_AGENT_SIM_FAULT=auth``
always fails with "Authentication required".

How a workspace becomes trusted: ``--trust`` trusts it and records it in the config dir
(``trusted-workspaces.json``), so later runs there need no flag; ``--force``/``--yolo`` let a
run proceed without recording anything. ``CURSOR_AGENT_SIM_FAULT=trust`` refuses even then.

Example:
    >>> PreflightError("boom").exit_code
    1
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import messages, signals, wire
from .agent import Agent, TurnContext
from .cli_args import Options
from .ids import Clock, TurnIds, new_chat_id
from .mcp_client import McpSession
from .models import DEFAULT_MODEL, MODELS, call_style, display_name
from .node_text import node_str
from .replay import replay
from .settings import Fault, SimSettings
from .store import Chat, ChatBusy, ChatStore, Turn, is_uuid
from .writer import Writer


class PreflightError(Exception):
    """A check before the turn failed: ``str(e)`` goes to stderr, ``exit_code`` is the exit.

    Example:
        >>> str(PreflightError("Error: nope"))
        'Error: nope'
    """

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def api_key_source(opts: Options, env: Mapping[str, str], store: ChatStore, settings: SimSettings) -> str:
    """``"flag"``, ``"env"`` or ``"login"``; raise :class:`PreflightError` when not authenticated.

    Example:
        >>> import tempfile
        >>> api_key_source(Options(api_key="k"), {}, ChatStore(tempfile.mkdtemp()), SimSettings())
        'flag'
    """
    if settings.has(Fault.AUTH):
        raise PreflightError(messages.auth_required())
    key, source = opts.api_key, "flag"
    if not key:
        key, source = env.get("CURSOR_API_KEY") or None, "env"
    if key:
        if key.lower().startswith("invalid"):
            raise PreflightError(messages.invalid_api_key())
        return source
    if not store.logged_in():
        raise PreflightError(messages.auth_required())
    return "login"


def read_prompt(opts: Options) -> str:
    """The positional prompt, else stdin read to EOF (when it is not a terminal).

    Example:
        >>> read_prompt(Options(prompt="  list the files\\n"))
        'list the files'
    """
    if opts.prompt is not None:
        return node_str(opts.prompt).strip()  # Node's argv: undecodable bytes are U+FFFD
    if sys.stdin is None or sys.stdin.isatty():
        return ""
    return sys.stdin.buffer.read().decode("utf-8", "replace").strip()


@dataclass(slots=True)
class TurnSetup:
    """What the checks decided: the resolved workspace, the model slug, the key source, the chat.

    Example:
        >>> import tempfile
        >>> chat = ChatStore(tempfile.mkdtemp()).chat("/ws", "11111111-2222-4333-8444-555555555555")
        >>> TurnSetup(Path("/ws"), "auto", "login", chat).model_slug
        'auto'
    """

    workspace: Path
    model_slug: str
    source: str
    chat: Chat


def preflight(
    opts: Options, env: Mapping[str, str], store: ChatStore, settings: SimSettings, prompt: str
) -> TurnSetup:
    """The checks, in the real CLI's order. Raises :class:`PreflightError`.

    Example:
        >>> import tempfile
        >>> store = ChatStore(tempfile.mkdtemp())
        >>> try:
        ...     preflight(Options(workspace=tempfile.mkdtemp()), {}, store, SimSettings(), "hi")
        ... except PreflightError as e:
        ...     print(str(e).splitlines()[1])
        │ ⚠ Workspace Trust Required                                             │
    """
    source = api_key_source(opts, env, store, settings)
    if settings.script and not os.access(settings.script, os.R_OK):
        raise PreflightError(f"Error: cannot read CURSOR_AGENT_SIM_SCRIPT={settings.script}")
    if settings.has(Fault.USAGE_LIMIT):
        raise PreflightError(messages.usage_limit())
    slug = opts.model or DEFAULT_MODEL
    if settings.has(Fault.INVALID_MODEL) or slug not in MODELS:
        raise PreflightError(messages.invalid_model(slug, MODELS))
    ws_text = opts.workspace or os.getcwd()
    workspace = Path(ws_text).expanduser()
    if not workspace.is_dir():
        raise PreflightError(f"Error: Workspace directory does not exist: {ws_text}")
    workspace = workspace.resolve()
    if settings.has(Fault.BAD_RESUME):
        raise PreflightError(messages.malformed_resume(opts.resume or "not-a-chat-id"))
    if opts.resume is not None and not is_uuid(opts.resume):
        raise PreflightError(messages.malformed_resume(opts.resume))
    if not prompt and not settings.script:
        raise PreflightError(messages.no_prompt())
    if settings.has(Fault.TRUST):
        raise PreflightError(messages.trust_required(str(workspace)))
    if opts.trust:
        store.trust(str(workspace))
    elif not opts.force and not store.is_trusted(str(workspace)):
        raise PreflightError(messages.trust_required(str(workspace)))
    chat_id = opts.resume or new_chat_id(
        settings.seed, str(workspace), prompt, store.chat_count(str(workspace))
    )
    chat = store.chat(str(workspace), chat_id)
    if settings.has(Fault.CHAT_BUSY):
        raise PreflightError(messages.chat_busy(chat_id))
    return TurnSetup(workspace, slug, source, chat)


def _is_final_message(obj: dict[str, Any]) -> bool:
    return obj.get("type") == "assistant" and "timestamp_ms" not in obj and "model_call_id" not in obj


def run_turn(opts: Options, env: Mapping[str, str], store: ChatStore, settings: SimSettings) -> int:
    """Run one print-mode turn; return the exit code. Writes to the real stdout/stderr.

    Example::

        code = run_turn(parse_args(["-p", "--trust", "hi"]), os.environ, store, settings)
    """
    refusal = settings.refusal("print")
    if refusal is not None:  # a fault that would change nothing here: say so, as an unknown one
        sys.stderr.write(f"cursor-agent-sim: {refusal}\n")
        return 1
    err = Writer("text", settings)  # for stderr only
    prompt = read_prompt(opts)
    try:
        setup = preflight(opts, env, store, settings, prompt)
        setup.chat.acquire()
    except PreflightError as e:
        err.stderr(str(e))
        return e.exit_code
    except ChatBusy as e:
        err.stderr(messages.chat_busy(str(e)))
        return 1
    chat = setup.chat
    signals.install(chat.release)
    try:
        if settings.has(Fault.IGNORE_SIGTERM):
            signals.ignore_termination()
        if settings.has(Fault.SLOW_START):
            time.sleep(settings.delay_for(Fault.SLOW_START))
        return _stream(opts, settings, setup, prompt, store)
    finally:
        chat.release()


def _stream(opts: Options, settings: SimSettings, setup: TurnSetup, prompt: str,
            store: ChatStore) -> int:
    chat = setup.chat
    history = chat.turns()
    partial = opts.stream_partial_output and opts.output_format == "stream-json"
    writer = Writer(opts.output_format, settings)
    clock = Clock(settings.seed)
    ids = TurnIds(chat.chat_id, len(history), prompt, call_style=call_style(setup.model_slug))
    agent: Agent | None = None
    items: Iterator[tuple[dict[str, Any] | None, str | None]]
    if settings.script:
        try:
            script = replay(
                settings.script,
                session_id=chat.chat_id,
                workspace=str(setup.workspace),
                partial=partial,
                speed=settings.speed,
            )
            items = ((item.obj, item.raw) for item in script)
        except OSError as e:
            writer.stderr(f"Error: cannot read CURSOR_AGENT_SIM_SCRIPT: {e}")
            return 1
        except ValueError as e:  # empty, or not stream-json: a replay that would test nothing
            writer.stderr(f"Error: CURSOR_AGENT_SIM_SCRIPT={settings.script} {e}")
            return 1
    else:
        mcp = McpSession(setup.workspace, store.config_dir, os.environ, approve_all=opts.approve_mcps,
                         force=opts.force)
        mcp.start()  # the CLI loads its MCP servers at the start of the turn
        ctx = TurnContext(
            session_id=chat.chat_id,
            workspace=setup.workspace,
            model=display_name(setup.model_slug),
            prompt=prompt,
            force=opts.force,
            partial=partial,
            history=history,
            clock=clock,
            ids=ids,
            api_key_source=setup.source,
            huge_line=settings.has(Fault.HUGE_LINE),
            unicode=settings.has(Fault.SPLIT_WRITES),
            mcp=mcp,
            mode=opts.mode,
            config_dir=store.config_dir,
        )
        agent = Agent(ctx)
        items = ((obj, None) for obj in agent.events())
    crash = settings.has(Fault.CRASH)
    result: dict[str, Any] | None = None
    try:
        for obj, raw in items:
            if obj is None:
                writer.raw(raw or "")
                continue
            if crash and (_is_final_message(obj) or obj.get("type") == "result"):
                writer.stderr(messages.crash())
                return 1
            writer.emit(obj, checked=agent is not None)
            if obj.get("type") == "system" and settings.has(Fault.SILENCE):
                signals.wait_forever()
            if obj.get("type") == "system" and settings.has(Fault.CLOSE_OUTPUT):
                signals.close_output()
                signals.wait_forever()
            if crash and obj.get("type") == "tool_call" and obj.get("subtype") == "started":
                writer.stderr(messages.crash())
                return 1
            if obj.get("type") == "result" and result is None:
                result = obj
                text = obj.get("result")
                chat.add_turn(
                    Turn(prompt, text if isinstance(text, str) else "", str(obj.get("request_id", ""))),
                    setup.model_slug,
                )
    except wire.WireShapeError as e:  # a bug of the simulator: say so loudly
        writer.stderr(f"cursor-agent-sim internal error: {e}")
        return 70
    finally:
        if agent is not None and agent.ctx.mcp is not None:
            agent.ctx.mcp.close()
    if result is None:
        return 0 if settings.script else 1
    if settings.has(Fault.HANG_AFTER_RESULT) or settings.has(Fault.IGNORE_SIGTERM):
        chat.release()
        signals.wait_forever()
    if settings.has(Fault.EXIT1_AFTER_RESULT):
        return 1
    return 0
