"""The runtime: agent processes and the lifecycle of a turn. Knows processes, nothing of HTTP.

* :mod:`.argv` — argv and environment of the agent (prompt on stdin, key in the env);
* :mod:`.process` — spawn in a new process group, signal the group, reap; on Linux through
  the owner guard (:mod:`._guard`, a script): the agent's group goes when its owner dies;
* :mod:`.groups` — the one ``/proc`` reader (start times, group members) and the one
  group stopper (signal, grace, SIGKILL), standard library only;
* :mod:`.stop_policy` — when to signal the group and when the turn is over: a pure state
  machine (no I/O, no clock);
* :mod:`.outcome` — the result event the client adds when the agent wrote none;
* :mod:`.stderr` — the bounded stderr tail and stderr texts -> typed errors;
* :mod:`.sinks` — hand-off of events to a consumer, with back-pressure;
* :mod:`.run` — :class:`AgentRun`, the one lifecycle core, async: spawns, reads, folds, and
  performs what the stop policy asks;
* :mod:`.portal` — the private event-loop thread the sync API drives it on;
* :mod:`.commands` — the short subcommands: ``status``, ``models``, ``create-chat``.

Example:
    >>> from cursor_agent_api.config import AgentConfig
    >>> build_argv(AgentConfig(), binary="agent")
    ['agent', '--print', '--output-format', 'stream-json']
"""

from .argv import build_argv, build_env, resolve_binary
from .commands import AccountStatus, ModelInfo, create_chat, fetch_models, fetch_status
from .outcome import ClientResultEvent, client_result_event
from .portal import LoopThread
from .process import AgentProcess, group_alive, normalize_exit_code, signal_group
from .run import AgentRun, StopReason
from .sinks import AsyncEventQueue, ThreadEventQueue
from .stderr import StderrTail, classify_failure

__all__ = [
    "AccountStatus",
    "AgentProcess",
    "AgentRun",
    "AsyncEventQueue",
    "ClientResultEvent",
    "LoopThread",
    "ModelInfo",
    "StderrTail",
    "StopReason",
    "ThreadEventQueue",
    "build_argv",
    "build_env",
    "classify_failure",
    "client_result_event",
    "create_chat",
    "fetch_models",
    "fetch_status",
    "group_alive",
    "normalize_exit_code",
    "resolve_binary",
    "signal_group",
]
