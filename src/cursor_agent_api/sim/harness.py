"""The simulator's helpers for any harness — no pytest needed: :func:`sim_binary` (where the
``cursor-agent-sim`` executable is) and :func:`sim_env` (the environment variables that select
a fault, a script, a speed and a config dir). :mod:`cursor_agent_api.testing` re-exports both
beside its pytest fixtures.

Example:
    >>> sim_env(fault="crash", config_dir="/tmp/cfg")
    {'CURSOR_AGENT_SIM_FAULT': 'crash', 'CURSOR_CONFIG_DIR': '/tmp/cfg'}
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from . import locate
from .settings import CLI_VARS, DELAY_ENV, FAULT_ENV, SCRIPT_ENV, SEED_ENV, SIM_VARS, SPEED_ENV

__all__ = ["CLI_VARS", "SIM_VARS", "sim_binary", "sim_env"]


def sim_binary() -> str:
    """The absolute path of the ``cursor-agent-sim`` executable: the one installed next to
    the running Python (a virtualenv's ``bin/``), else the one this package's installation
    recorded, else the one on ``PATH`` — the virtualenv need not be activated.

    Raises ``FileNotFoundError`` when none exists (the package is not installed as a
    distribution: ``pip install -e .`` fixes that).

    Example:
        >>> os.path.isabs(sim_binary())
        True
    """
    return locate.sim_binary()


def sim_env(
    fault: str | Iterable[str] | None = None,
    script: str | os.PathLike[str] | None = None,
    speed: float | None = None,
    config_dir: str | os.PathLike[str] | None = None,
    *,
    delay: float | None = None,
    seed: str | None = None,
) -> dict[str, str]:
    """The environment variables that make the simulator use ``fault`` (one name, or
    several), replay ``script``, at ``speed``, with chats under ``config_dir``. Merge them
    into the agent's environment (``AgentConfig(env=...)``).

    Example:
        >>> sim_env(fault=["banner", "split-writes"], speed=0)
        {'CURSOR_AGENT_SIM_FAULT': 'banner,split-writes', 'CURSOR_AGENT_SIM_SPEED': '0'}
    """
    env: dict[str, str] = {}
    if fault:
        env[FAULT_ENV] = fault if isinstance(fault, str) else ",".join(fault)
    if script is not None:
        env[SCRIPT_ENV] = str(Path(script).resolve())
    if speed is not None:
        env[SPEED_ENV] = f"{speed:g}"
    if delay is not None:
        env[DELAY_ENV] = f"{delay:g}"
    if seed is not None:
        env[SEED_ENV] = seed
    if config_dir is not None:
        env["CURSOR_CONFIG_DIR"] = str(config_dir)
    return env
