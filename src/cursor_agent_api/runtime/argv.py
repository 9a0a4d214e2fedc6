"""What the agent process is started with: its binary, argv, environment and workspace.

What lives here: :func:`resolve_binary`, :func:`build_argv`, :func:`build_env`, and
:func:`check_workspace`, the one check that the workspace is there, which both transports
(print mode's :class:`~.run.AgentRun`, ACP's :class:`~.acp_turn.AcpTurn` and its process),
``create_chat`` and a turn with tools (its ``TurnScope``, before the tool server) make before
they start anything. The prompt never goes in argv (it is written
on stdin, then stdin is closed) and neither does the API key (it goes in ``CURSOR_API_KEY``):
argv is visible to every local user through ``ps``. What does not: spawning
(:mod:`.process`), the turn's lifecycle (:mod:`.run`).

Example:
    >>> from cursor_agent_api.config import AgentConfig
    >>> build_argv(AgentConfig(model="gpt-5", trust=True), binary="agent")
    ['agent', '--print', '--output-format', 'stream-json', '--trust', '--model=gpt-5']
    >>> build_env(AgentConfig(api_key="k", env={"A": "1"}), base={"PATH": "/bin"})
    {'PATH': '/bin', 'A': '1', 'CURSOR_API_KEY': 'k'}
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Mapping

from ..config import DEFAULT_AGENT_BINARY, AgentConfig
from ..errors import WorkspaceNotFoundError

__all__ = [
    "FALLBACK_BINARIES",
    "build_argv",
    "build_env",
    "check_workspace",
    "global_flags",
    "resolve_binary",
    "trailing_flags",
]

FALLBACK_BINARIES = (DEFAULT_AGENT_BINARY, "cursor-agent")
"""Names the CLI is installed under (``agent`` since 2026, ``cursor-agent`` kept as a link)."""


def resolve_binary(config: AgentConfig, env: Mapping[str, str] | None = None) -> str:
    """The executable to start: ``config.agent_binary``, found on ``PATH``.

    When the default ``"agent"`` is not on ``PATH`` but ``cursor-agent`` is, that
    one is used. ``"cursor-agent-sim"`` not on ``PATH`` is the simulator bundled with
    this package, wherever it is installed (no need to activate its virtualenv). A name
    that cannot be found is returned unchanged (starting it then fails with
    :class:`~cursor_agent_api.errors.AgentNotFoundError`).

    Example:
        >>> resolve_binary(AgentConfig(agent_binary="/bin/sh"))
        '/bin/sh'
    """
    binary = config.agent_binary
    path = (env or os.environ).get("PATH")
    if os.sep in binary:
        return binary
    found = shutil.which(binary, path=path)
    if found:
        return found
    if binary in FALLBACK_BINARIES:
        for other in FALLBACK_BINARIES:
            found = shutil.which(other, path=path)
            if found:
                return found
    if binary == "cursor-agent-sim":
        from ..sim.locate import sim_binary  # imported here: the simulator is rarely wanted

        try:
            return sim_binary()
        except FileNotFoundError:
            pass
    return binary


def build_argv(config: AgentConfig, *, binary: str | None = None) -> list[str]:
    """argv for one headless turn: ``--print --output-format …`` plus the configured flags.

    The prompt is not part of it (it goes on stdin); neither is the API key. Every value
    is joined to its option (``--resume=ID``), so a value can never be read as an option
    of its own, whatever it holds (the values are validated by :class:`AgentConfig` too:
    a chat id is a UUID, a model slug has no spaces and no leading dash).

    Example:
        >>> chat = "8b72ae6d-ab42-4854-991e-6ecf580e66c2"
        >>> build_argv(AgentConfig(resume=chat, headers=["X-A: 1"], extra_args=["--x"]),
        ...            binary="agent")[4:]
        ['--resume=8b72ae6d-ab42-4854-991e-6ecf580e66c2', '--header=X-A: 1', '--x']
    """
    argv = [binary or config.agent_binary, "--print", "--output-format",
            config.output_format.value]
    if config.stream_partial_output:
        argv.append("--stream-partial-output")
    argv += global_flags(config)
    if config.workspace is not None:
        argv.append(f"--workspace={config.workspace}")
    if config.resume is not None:
        argv.append(f"--resume={config.resume}")
    return argv + trailing_flags(config)


def global_flags(config: AgentConfig) -> list[str]:
    """The flags both modes take (print mode and ``agent acp``): ``--trust``, ``--force``,
    ``--approve-mcps``, ``--model=…``.

    Example:
        >>> global_flags(AgentConfig(trust=True, model="gpt-5"))
        ['--trust', '--model=gpt-5']
    """
    flags = []
    if config.trust:
        flags.append("--trust")
    if config.force_approve:
        flags.append("--force")
    if config.approve_mcps:
        flags.append("--approve-mcps")
    if config.model is not None:
        flags.append(f"--model={config.model}")
    return flags


def trailing_flags(config: AgentConfig) -> list[str]:
    """What both modes' argv end with, before ``acp`` for that mode: ``--header=…`` each,
    then ``extra_args`` as given.

    Example:
        >>> trailing_flags(AgentConfig(headers=["X-A: 1"], extra_args=["--x"]))
        ['--header=X-A: 1', '--x']
    """
    return [f"--header={header}" for header in config.headers] + list(config.extra_args)


def build_env(config: AgentConfig, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The agent's environment: ``base`` (the parent's by default) merged with ``config.env``.

    A ``None`` value in ``config.env`` removes the variable; ``config.api_key``
    becomes ``CURSOR_API_KEY`` (and wins over both).

    Example:
        >>> build_env(AgentConfig(env={"HOME": None, "X": "1"}), base={"HOME": "/h"})
        {'X': '1'}
    """
    env = dict(os.environ if base is None else base)
    for key, value in config.env.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    if config.api_key is not None:
        env["CURSOR_API_KEY"] = config.api_key
    return env


def unfound_binary(binary: str, env: Mapping[str, str | None]) -> str | None:
    """``binary`` when the agent program it names cannot be found, resolved as a turn
    resolves it (:func:`resolve_binary`, in the environment ``env`` makes of this process's:
    ``PATH=…`` when given, ``cursor-agent`` for a missing ``agent``); ``None`` if it is there.
    (``serve``'s start-up warning and ``worker``'s refusal.)

    Example:
        >>> unfound_binary("/no/such/agent", {})
        '/no/such/agent'
        >>> unfound_binary("sh", {}) is None, unfound_binary("sh", {"PATH": "/nonexistent"})
        (True, 'sh')
    """
    config = AgentConfig(agent_binary=binary, env=dict(env))
    full = build_env(config)
    found = resolve_binary(config, full)
    if shutil.which(found, path=full.get("PATH", os.defpath)) is not None:
        return None
    return binary


def check_workspace(workspace: str | None) -> None:
    """Raise :class:`~cursor_agent_api.errors.WorkspaceNotFoundError` unless ``workspace`` is
    ``None`` (the current directory) or an existing directory: a workspace that is missing, or
    a file, is named, the same in both modes (not the agent's stderr in one and a "binary not
    found" from a failed ``chdir`` in the other).

    Example:
        >>> check_workspace(None), check_workspace(".")
        (None, None)
        >>> check_workspace("/nonexistent/dir")
        Traceback (most recent call last):
        ...
        cursor_agent_api.errors.WorkspaceNotFoundError: the workspace directory does not exist: ...
        >>> import tempfile
        >>> with tempfile.NamedTemporaryFile() as f:
        ...     check_workspace(f.name)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        cursor_agent_api.errors.WorkspaceNotFoundError: the workspace is not a directory: ...
    """
    if workspace is None or os.path.isdir(workspace):
        return
    if os.path.lexists(workspace):
        raise WorkspaceNotFoundError(f"the workspace is not a directory: {workspace!r}",
                                     errno=errno.ENOTDIR)
    raise WorkspaceNotFoundError(f"the workspace directory does not exist: {workspace!r}",
                                 errno=errno.ENOENT)
