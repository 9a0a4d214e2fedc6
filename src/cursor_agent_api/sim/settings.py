"""The simulator's environment variables, read once into :class:`SimSettings`.

=============================  ===============================================================
``CURSOR_AGENT_SIM_FAULT``     one fault or several, comma-separated (see :class:`Fault`)
``CURSOR_AGENT_SIM_SCRIPT``    a recording (NDJSON) to replay instead of the built-in agent
``CURSOR_AGENT_SIM_SPEED``     replay timing: 0 = as fast as the pipe takes it (default),
                               1 = the recorded gaps between ``timestamp_ms`` (each capped at
                               :data:`MAX_GAP_S`), 0.5 = twice as fast
``CURSOR_AGENT_SIM_DELAY``     seconds for ``slow-start`` (default 3.5) and, per event, for
                               ``slow`` (default 0.5)
``CURSOR_AGENT_SIM_SEED``      when set, new chat ids and every timestamp derive from it, so
                               a run in a fresh config dir is byte-for-byte reproducible
``CURSOR_AGENT_SIM_ACP_ENRICH`` ``cursor-agent-sim acp``: how a tool call is enriched after it
                               starts: ``update`` (a ``tool_call_update``, builds 08.11 on;
                               default) or ``tool_call`` (a second ``tool_call`` with the same
                               id, build 02.27)
``CURSOR_AGENT_SIM_ACP_ASK_EDITS`` ``1``: ACP asks permission for edits and deletes too (the
                               bundle's prompts; current builds do not ask, the default)
``CURSOR_AGENT_SIM_ACP_MCP``   ``cursor-agent-sim acp``: ``approvals`` or ``connect`` (read by
                               :mod:`.mcp_client`, see :data:`ACP_GIVEN_ENV`)
``CURSOR_AGENT_SIM_ACP_EOF``   ``cursor-agent-sim acp`` at the end of stdin once a prompt turn
                               has run: ``linger`` (stays until signalled, at most
                               :data:`LINGER_S`, as the real builds; default) or ``exit``
``CURSOR_AGENT_SIM_ACP_CURSOR_FORM`` how ``cursor/update_todos`` and ``cursor/task`` are
                               sent: ``request`` (with an id, the wire's form; default) or
                               ``notification`` (Cursor's documented form)
``CURSOR_AGENT_SIM_ACP_USER_ECHO`` ``1``: a turn starts with the prompt as a live
                               ``user_message_chunk`` (one probe's report)
``CURSOR_AGENT_SIM_MCP_TIMEOUT`` seconds to connect to an MCP server (:mod:`.mcp_client`)
``CURSOR_CONFIG_DIR``          where chats, trust and login state live (as the real CLI)
``CURSOR_DATA_DIR``            where ``projects/<slug>/mcp-approvals.json`` is read (as the
                               real CLI; else ``CURSOR_CONFIG_DIR``, else ``~/.cursor``:
                               :func:`.mcp_config.approval_root`)
``CURSOR_API_KEY``             an API key (``apiKeySource: "env"``)
=============================  ===============================================================

:data:`SIM_VARS` lists every ``CURSOR_AGENT_SIM_*`` variable, :data:`CLI_VARS` the real CLI's
variables the simulator honours: a harness that wants a run isolated from its caller's
environment clears both (:mod:`cursor_agent_api.testing`'s fixtures do).

Nothing here does I/O beyond reading the mapping it is given.

Example:
    >>> s = SimSettings.from_env({"CURSOR_AGENT_SIM_FAULT": "banner, split-writes"})
    >>> sorted(f.value for f in s.faults)
    ['banner', 'split-writes']
    >>> SimSettings.from_env({"CURSOR_AGENT_SIM_ACP_ENRICH": "tool_call"}).acp_enrich
    'tool_call'
    >>> SimSettings().acp_eof, SimSettings.from_env({"CURSOR_AGENT_SIM_ACP_EOF": "exit"}).acp_eof
    ('linger', 'exit')
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

MAX_GAP_S = 5.0
"""The longest pause replay makes between two recorded events at speed 1."""

FAULT_ENV = "CURSOR_AGENT_SIM_FAULT"
SCRIPT_ENV = "CURSOR_AGENT_SIM_SCRIPT"
SPEED_ENV = "CURSOR_AGENT_SIM_SPEED"
DELAY_ENV = "CURSOR_AGENT_SIM_DELAY"
SEED_ENV = "CURSOR_AGENT_SIM_SEED"
ACP_ENRICH_ENV = "CURSOR_AGENT_SIM_ACP_ENRICH"
ACP_ASK_EDITS_ENV = "CURSOR_AGENT_SIM_ACP_ASK_EDITS"
ACP_ENRICH_STYLES = ("update", "tool_call")
ACP_EOF_ENV = "CURSOR_AGENT_SIM_ACP_EOF"
ACP_EOF_STYLES = ("linger", "exit")
LINGER_S = 60.0
"""How long ``cursor-agent-sim acp`` lingers after the end of stdin once a prompt turn has
run (``linger``): the real builds did not exit within 10 s (ACP.md §1); a client that never
signals its agent still sees it end in time."""
ACP_CURSOR_FORM_ENV = "CURSOR_AGENT_SIM_ACP_CURSOR_FORM"
ACP_CURSOR_FORMS = ("request", "notification")
ACP_USER_ECHO_ENV = "CURSOR_AGENT_SIM_ACP_USER_ECHO"
ACP_GIVEN_ENV = "CURSOR_AGENT_SIM_ACP_MCP"
"""``approvals`` (the default: a server given in ``session/new``/``session/load`` loads only
with an approval entry, as the 09.10 bundle and build ~03) or ``connect`` (loaded without one,
as 08.11 connected them; MCP.md §7). Read by :mod:`.mcp_client`."""
MCP_TIMEOUT_ENV = "CURSOR_AGENT_SIM_MCP_TIMEOUT"
"""Overrides :data:`.mcp_client.CONNECT_TIMEOUT` (seconds, > 0)."""
CONFIG_DIR_ENV = "CURSOR_CONFIG_DIR"
DATA_DIR_ENV = "CURSOR_DATA_DIR"
API_KEY_ENV = "CURSOR_API_KEY"

SIM_VARS = (FAULT_ENV, SCRIPT_ENV, SPEED_ENV, DELAY_ENV, SEED_ENV, ACP_ENRICH_ENV,
            ACP_ASK_EDITS_ENV, ACP_GIVEN_ENV, MCP_TIMEOUT_ENV, ACP_EOF_ENV, ACP_CURSOR_FORM_ENV,
            ACP_USER_ECHO_ENV)
"""Every ``CURSOR_AGENT_SIM_*`` variable the simulator reads (the one list; a test checks that
the simulator's sources name no other)."""
CLI_VARS = (CONFIG_DIR_ENV, DATA_DIR_ENV, API_KEY_ENV)
"""The real CLI's variables the simulator honours."""


class Fault(str, enum.Enum):
    """A failure the simulator reproduces on demand (``CURSOR_AGENT_SIM_FAULT``). Some apply to
    one mode only (:data:`PRINT_ONLY`, :data:`ACP_ONLY`): the other refuses them.

    Example:
        >>> Fault("hang-after-result").name
        'HANG_AFTER_RESULT'
    """

    AUTH = "auth"
    """Not logged in: exit 1, ``Error: Authentication required…`` on stderr. ACP: session
    methods answer ``-32000`` "Authentication required" and ``authenticate`` fails."""
    TRUST = "trust"
    """Untrusted workspace even with ``--trust``: exit 1, the boxed message."""
    INVALID_MODEL = "invalid-model"
    """``Cannot use this model: …``, exit 1, whatever ``--model`` says."""
    USAGE_LIMIT = "usage-limit"
    """``Error: You've hit your usage limit …``, exit 1."""
    BAD_RESUME = "bad-resume"
    """``Failed to claim persistent session for chat …``, exit 1."""
    CHAT_BUSY = "chat-busy"
    """``Chat <id> may still be running…``, exit 1."""
    CRASH = "crash"
    """Dies mid-stream (after the first tool call starts, else before the final message):
    no ``result``, exit 1. ACP: the process dies the same way mid-turn."""
    HANG_AFTER_RESULT = "hang-after-result"
    """Writes ``result``, then never exits until signalled."""
    EXIT1_AFTER_RESULT = "exit1-after-result"
    """Writes ``result``, then exits 1."""
    IGNORE_SIGTERM = "ignore-sigterm"
    """Ignores SIGTERM and SIGINT, spawns a child in its process group that ignores them too,
    and never exits after ``result``: only SIGKILL ends it."""
    STDERR_FLOOD = "stderr-flood"
    """Writes 10 MB to stderr while streaming normally."""
    SILENCE = "silence"
    """Writes ``system/init``, then nothing until signalled."""
    CLOSE_OUTPUT = "close-output"
    """Writes ``system/init``, closes stdout and stderr, and never exits until signalled: no
    more output can come, and no exit either (audit 4)."""
    HUGE_LINE = "huge-line"
    """The turn includes a read of a 20 MB file: one line of about 20 MB."""
    BANNER = "banner"
    """Non-JSON lines with ANSI escapes on stdout, before and among the events (ACP: among
    the JSON-RPC frames)."""
    SLOW_START = "slow-start"
    """Waits ``CURSOR_AGENT_SIM_DELAY`` seconds (default 3.5) before ``system/init``."""
    SLOW = "slow"
    """Waits ``CURSOR_AGENT_SIM_DELAY`` seconds (default 0.5) before every event."""
    SPLIT_WRITES = "split-writes"
    """Every line written in small chunks, flushed separately, splitting UTF-8 characters;
    the reply carries non-ASCII text."""
    CANCEL_UNSUPPORTED = "cancel-unsupported"
    """ACP: ``session/cancel`` is not honoured (the turn runs on) and is answered with a
    ``-32601`` error whose ``id`` is ``null``, as the 02.27 build was reported to do."""
    LOAD_NOT_FOUND = "load-not-found"
    """ACP: every ``session/load`` answers ``-32602`` ``Session "…" not found`` (builds of
    about 03.20)."""
    REJECT_COMPLETED = "reject-completed"
    """ACP: a rejected tool call ends ``status: "completed"`` with no output, as on 08.11 and
    10.01 — the default now; the name is kept so that older settings still parse."""
    REJECT_FAILED = "reject-failed"
    """ACP: a rejected tool call ends ``status: "failed"`` (what ACP's schema allows and no
    published capture shows) instead of the real builds' ``completed``."""
    CRASH_ONCE = "crash-once"
    """ACP: like ``crash``, once per config dir (a marker file there): the process is killed
    mid-turn, the restarted agent works and the next prompt goes on."""
    UNKNOWN_REQUEST = "unknown-request"
    """ACP: mid-turn, before the agent's first words, a request of a method no client knows
    (``cursor/sim_unknown``), and the turn waits for its answer (a client that ignores it
    stalls the turn forever, as on the real builds)."""
    LIST_UNSUPPORTED = "list-unsupported"
    """ACP: the builds of 03.25/03.30: no ``sessionCapabilities`` in ``initialize``, and
    ``session/list`` answers ``-32601``."""
    ASK_AFTER_CANCEL = "ask-after-cancel"
    """ACP: a build still finishing a step when cancelled: after ``session/cancel`` it asks
    ``session/request_permission`` once more (for ``touch after-cancel.txt``, which it runs if
    allowed) and waits for the answer before the prompt answers ``cancelled`` (ACP.md §13
    leaves this open; the client must answer ``cancelled``)."""


PRINT_ONLY = frozenset({
    Fault.TRUST, Fault.INVALID_MODEL, Fault.USAGE_LIMIT, Fault.BAD_RESUME, Fault.CHAT_BUSY,
    Fault.HANG_AFTER_RESULT, Fault.EXIT1_AFTER_RESULT, Fault.IGNORE_SIGTERM, Fault.STDERR_FLOOD,
    Fault.SILENCE, Fault.CLOSE_OUTPUT, Fault.HUGE_LINE, Fault.SPLIT_WRITES,
})
"""The faults of a print-mode turn (``-p``) only: ``cursor-agent-sim acp`` refuses them."""
ACP_ONLY = frozenset({
    Fault.CANCEL_UNSUPPORTED, Fault.LOAD_NOT_FOUND, Fault.REJECT_COMPLETED, Fault.REJECT_FAILED,
    Fault.CRASH_ONCE, Fault.UNKNOWN_REQUEST, Fault.LIST_UNSUPPORTED, Fault.ASK_AFTER_CANCEL,
})
"""The faults of ``cursor-agent-sim acp`` only: a print-mode turn refuses them. The others
(``auth``, ``crash``, ``banner``, ``slow``, ``slow-start``) apply in both modes."""
AGENT_ONLY = frozenset({Fault.HUGE_LINE})
"""The faults that change what the built-in agent does: a replayed script refuses them."""


@dataclass(frozen=True, slots=True)
class SimSettings:
    """What the environment asks of the simulator.

    Example:
        >>> SimSettings.from_env({"CURSOR_AGENT_SIM_SPEED": "1"}).speed
        1.0
    """

    faults: frozenset[Fault] = field(default_factory=frozenset)
    script: str | None = None
    speed: float = 0.0
    delay: float | None = None
    seed: str | None = None
    acp_enrich: str = "update"
    acp_ask_edits: bool = False
    acp_eof: str = "linger"
    acp_cursor_form: str = "request"
    acp_user_echo: bool = False

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> SimSettings:
        """Read the ``CURSOR_AGENT_SIM_*`` variables; raise ``ValueError`` on a bad value.

        Example:
            >>> SimSettings.from_env({"CURSOR_AGENT_SIM_DELAY": "0.2"}).delay
            0.2
        """
        faults: set[Fault] = set()
        for name in (env.get(FAULT_ENV) or "").replace(";", ",").split(","):
            name = name.strip().lower()
            if not name or name == "none":
                continue
            try:
                faults.add(Fault(name))
            except ValueError:
                known = ", ".join(f.value for f in Fault)
                raise ValueError(f"{FAULT_ENV}: unknown fault {name!r} (known: {known})") from None
        speed = _float(env, SPEED_ENV, 0.0)
        delay_text = env.get(DELAY_ENV)
        delay = _float(env, DELAY_ENV, 0.0) if delay_text else None
        enrich = _choice(env, ACP_ENRICH_ENV, ACP_ENRICH_STYLES)
        ask_edits = _flag(env, ACP_ASK_EDITS_ENV)
        return cls(
            frozenset(faults),
            env.get(SCRIPT_ENV) or None,
            speed,
            delay,
            env.get(SEED_ENV),
            acp_enrich=enrich,
            acp_ask_edits=ask_edits,
            acp_eof=_choice(env, ACP_EOF_ENV, ACP_EOF_STYLES),
            acp_cursor_form=_choice(env, ACP_CURSOR_FORM_ENV, ACP_CURSOR_FORMS),
            acp_user_echo=_flag(env, ACP_USER_ECHO_ENV),
        )

    def has(self, fault: Fault) -> bool:
        """True when ``fault`` is on.

        Example:
            >>> SimSettings(frozenset({Fault.CRASH})).has(Fault.CRASH)
            True
        """
        return fault in self.faults

    def refusal(self, mode: str) -> str | None:
        """Why these settings do not apply to a turn in ``mode`` (``"print"`` or ``"acp"``),
        else ``None``: a fault of the other mode, a script in ACP mode (replay is print mode's),
        a fault of the built-in agent with a script. The simulator then exits 1 with this line
        rather than run a turn that tests nothing.

        Example:
            >>> SimSettings(frozenset({Fault.SILENCE})).refusal("acp")
            "CURSOR_AGENT_SIM_FAULT: 'silence' applies to print mode (-p) only, not to acp"
            >>> SimSettings(frozenset({Fault.CRASH})).refusal("acp") is None
            True
        """
        other = ACP_ONLY if mode == "print" else PRINT_ONLY
        wrong = sorted(f.value for f in self.faults & other)
        if wrong:
            names = ", ".join(repr(name) for name in wrong)
            where = "acp" if mode == "print" else "print mode (-p)"
            here = "print mode (-p)" if mode == "print" else "acp"
            verb = "applies" if len(wrong) == 1 else "apply"
            return f"{FAULT_ENV}: {names} {verb} to {where} only, not to {here}"
        if self.script and mode == "acp":
            return f"{SCRIPT_ENV}: replay applies to print mode (-p) only, not to acp"
        wrong = sorted(f.value for f in self.faults & AGENT_ONLY) if self.script else []
        if wrong:
            names = ", ".join(repr(name) for name in wrong)
            return f"{FAULT_ENV}: {names} changes the built-in agent's turn, not a replayed script"
        return None

    def delay_for(self, fault: Fault) -> float:
        """The delay in seconds for ``slow-start`` or ``slow``.

        Example:
            >>> SimSettings().delay_for(Fault.SLOW_START)
            3.5
        """
        if self.delay is not None:
            return self.delay
        return 3.5 if fault is Fault.SLOW_START else 0.5


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    text = env.get(name)
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{name}: not a number: {text!r}") from None
    if not 0 <= value < math.inf:  # nan, inf: no sleep could honour them
        raise ValueError(f"{name}: must be a finite number >= 0, got {text!r}")
    return value


def _choice(env: Mapping[str, str], name: str, choices: tuple[str, ...]) -> str:
    """One of ``choices`` (the first when unset); ``ValueError`` for anything else.

    Example:
        >>> _choice({ACP_EOF_ENV: " Exit "}, ACP_EOF_ENV, ACP_EOF_STYLES)
        'exit'
    """
    value = (env.get(name) or choices[0]).strip().lower()
    if value not in choices:
        raise ValueError(f"{name}: {value!r} is not one of {', '.join(choices)}")
    return value


def _flag(env: Mapping[str, str], name: str) -> bool:
    """A yes/no variable: ``1``, ``true``, ``yes``, ``on`` (any case) are yes."""
    return (env.get(name) or "0").strip().lower() in ("1", "true", "yes", "on")
