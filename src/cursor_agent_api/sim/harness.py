"""The simulator's helpers for any harness — no pytest needed: :func:`sim_binary` (where the
``cursor-agent-sim`` executable is) and :func:`sim_env` (the environment variables that select
a fault, a script, a speed and a config dir). :mod:`cursor_agent_api.testing` re-exports both
beside its pytest fixtures.

Example:
    >>> sim_env(fault="crash", config_dir="/tmp/cfg")
    {'CURSOR_AGENT_SIM_FAULT': 'crash', 'CURSOR_CONFIG_DIR': '/tmp/cfg'}
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from pathlib import Path

from . import locate
from .settings import (
    CLI_VARS,
    CONFIG_DIR_ENV,
    DELAY_ENV,
    FAULT_ENV,
    SCRIPT_ENV,
    SEED_ENV,
    SIM_VARS,
    SPEED_ENV,
)

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

    An argument of the wrong type is a ``TypeError`` naming it; a speed or delay that is
    negative or not finite a ``ValueError``.

    Example:
        >>> sim_env(fault=["banner", "split-writes"], speed=0)
        {'CURSOR_AGENT_SIM_FAULT': 'banner,split-writes', 'CURSOR_AGENT_SIM_SPEED': '0'}
        >>> sim_env(speed="1")
        Traceback (most recent call last):
        TypeError: sim_env(speed=...): a number (int or float), got '1'
    """
    env: dict[str, str] = {}
    if fault is not None and not isinstance(fault, str):
        if not isinstance(fault, Iterable) or isinstance(fault, (bytes, bytearray)):
            raise TypeError(f"sim_env(fault=...): a fault name or an iterable of names, got {fault!r}")
        fault = list(fault)
        bad = [name for name in fault if not isinstance(name, str)]
        if bad:
            raise TypeError(f"sim_env(fault=...): fault names are str, got {bad[0]!r} in {fault!r}")
    if fault:
        env[FAULT_ENV] = fault if isinstance(fault, str) else ",".join(fault)
    if script is not None:
        env[SCRIPT_ENV] = str(Path(_path("script", script)).resolve())
    if speed is not None:
        env[SPEED_ENV] = f"{_number('speed', speed):g}"
    if delay is not None:
        env[DELAY_ENV] = f"{_number('delay', delay):g}"
    if seed is not None:
        if not isinstance(seed, str):
            raise TypeError(f"sim_env(seed=...): a str, got {seed!r}")
        env[SEED_ENV] = seed
    if config_dir is not None:
        env[CONFIG_DIR_ENV] = _path("config_dir", config_dir)
    return env


def _path(name: str, value: object) -> str:
    """``value`` as a path string; ``TypeError`` naming ``name`` unless a str or str path."""
    path = os.fspath(value) if isinstance(value, os.PathLike) else value
    if not isinstance(path, str):
        raise TypeError(f"sim_env({name}=...): a str or os.PathLike path, got {value!r}")
    return path


def _number(name: str, value: object) -> float:
    """``value`` as a finite number >= 0; ``TypeError``/``ValueError`` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"sim_env({name}=...): a number (int or float), got {value!r}")
    if not (0 <= value < math.inf):
        raise ValueError(f"sim_env({name}=...): a finite number >= 0, got {value!r}")
    return float(value)
