"""The runtime: agent processes and the lifecycle of a turn. Knows processes, nothing of HTTP.

* :mod:`.argv` — what the agent starts with: binary, argv, environment (prompt on stdin, key
  in the env), and the one check that its workspace is there;
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
* :mod:`.transport` — the seam: :class:`Turn`, :class:`Transport`, the subprocess transport
  (whose turn is :class:`AgentRun`) and :func:`transport_for`, the one place a config picks one;
* :mod:`.portal` — the private event-loop thread the sync API drives it on;
* :mod:`.commands` — the short subcommands: ``status``, ``models``, ``create-chat``.

The package exports what is public: the transport seam a transport author plugs into
(:class:`Transport`, :class:`Turn`, :class:`SubprocessTransport`, :func:`transport_for`, and
:class:`AgentRun` to reuse with a ``spawn`` function), and the answers of the account commands
(:class:`AccountStatus`, :class:`ModelInfo`, also at the package's top level). The rest
(argv, stderr, groups, the stop policy, sinks, the command runners) is internal and reached
through its modules. The in-memory :class:`~cursor_agent_api.testing.ScriptTransport` and its
:class:`~cursor_agent_api.testing.Script` (an agent for tests, passed as
``AgentConfig(transport=...)``) plug into that seam from :mod:`cursor_agent_api.testing`; they
are still reached here too, by their old names (imported when first asked for).

Example:
    >>> from cursor_agent_api.config import AgentConfig
    >>> isinstance(transport_for(AgentConfig()), SubprocessTransport)
    True
"""

from typing import Any

from .commands import AccountStatus, ModelInfo
from .run import AgentRun
from .transport import SubprocessTransport, Transport, Turn, transport_for

__all__ = [
    "AccountStatus",
    "AgentRun",
    "ModelInfo",
    "SubprocessTransport",
    "Transport",
    "Turn",
    "transport_for",
]


def __getattr__(name: str) -> Any:
    """``Script`` and ``ScriptTransport``, which live in :mod:`cursor_agent_api.testing`.

    Example:
        >>> from cursor_agent_api import runtime, testing
        >>> runtime.ScriptTransport is testing.ScriptTransport
        True
    """
    if name in ("Script", "ScriptTransport"):
        from .. import testing

        return getattr(testing, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
