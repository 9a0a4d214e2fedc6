"""Pytest fixtures and helpers for testing your own code against ``cursor-agent-sim``.

Installed as a pytest plugin (entry point ``pytest11``), so the fixtures are available in
any project that has ``cursor-agent-api`` installed — no import needed:

* ``cursor_sim_workspace`` — a fresh, empty temporary workspace (a ``pathlib.Path``);
* ``cursor_sim_config_dir`` — a fresh temporary ``CURSOR_CONFIG_DIR`` (chats, trust, login);
* ``cursor_sim_config`` — an :class:`~cursor_agent_api.config.AgentConfig` that runs the
  simulator in that workspace with that config dir (``trust=True``, stream-json); a test
  marked ``@pytest.mark.cursor_sim(fault="crash", script="rec.ndjson", speed=1)`` gets that
  fault, script or speed;
* ``make_cursor_sim_config`` — a factory: ``make_cursor_sim_config(fault=..., script=...,
  speed=..., **AgentConfig_fields)``.

And two plain helpers for any harness: :func:`sim_binary` (where the ``cursor-agent-sim``
executable is) and :func:`sim_env` (the environment variables that select a fault, a
script, a speed and a config dir).

Example:
    >>> sim_env(fault="crash", config_dir="/tmp/cfg")
    {'CURSOR_AGENT_SIM_FAULT': 'crash', 'CURSOR_CONFIG_DIR': '/tmp/cfg'}
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from .sim import locate
from .sim.settings import DELAY_ENV, FAULT_ENV, SCRIPT_ENV, SEED_ENV, SPEED_ENV

__all__ = [
    "cursor_sim_config",
    "cursor_sim_config_dir",
    "cursor_sim_workspace",
    "make_cursor_sim_config",
    "pytest_configure",
    "sim_binary",
    "sim_env",
]

_SIM_VARS = (FAULT_ENV, SCRIPT_ENV, SPEED_ENV, DELAY_ENV, SEED_ENV)


def sim_binary() -> str:
    """The absolute path of the ``cursor-agent-sim`` executable: the one installed next to
    the running Python (a virtualenv's ``bin/``), else the one on ``PATH``.

    Raises ``FileNotFoundError`` when neither exists (the package is not installed as a
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


def _make_config(workspace: Path, config_dir: Path) -> Callable[..., Any]:
    def make(
        fault: str | Iterable[str] | None = None,
        script: str | os.PathLike[str] | None = None,
        speed: float | None = None,
        *,
        delay: float | None = None,
        seed: str | None = None,
        **fields: Any,
    ) -> Any:
        env: dict[str, str | None] = {name: None for name in _SIM_VARS}
        env["CURSOR_API_KEY"] = None
        env.update(sim_env(fault, script, speed, config_dir, delay=delay, seed=seed))
        env.update(fields.pop("env", None) or {})
        kwargs: dict[str, Any] = {
            "workspace": str(workspace),
            "agent_binary": sim_binary(),
            "trust": True,
            "env": env,
        }
        kwargs.update(fields)
        try:
            from .config import AgentConfig
        except ImportError:  # a build without the client: a plain dict of the same fields
            return kwargs
        return AgentConfig(**kwargs)

    return make


@pytest.fixture
def cursor_sim_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh, empty workspace directory for one test.

    Example::

        def test_lists(cursor_sim_config, cursor_sim_workspace):
            (cursor_sim_workspace / "a.py").write_text("")
    """
    return tmp_path_factory.mktemp("cursor-sim-workspace")


@pytest.fixture
def cursor_sim_config_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh ``CURSOR_CONFIG_DIR`` for one test (chats, trusted workspaces, login).

    Example::

        def test_chat_saved(cursor_sim_config, cursor_sim_config_dir):
            ...
            assert list(cursor_sim_config_dir.glob("chats/*/*/turns.jsonl"))
    """
    return tmp_path_factory.mktemp("cursor-sim-config")


@pytest.fixture
def make_cursor_sim_config(cursor_sim_workspace: Path, cursor_sim_config_dir: Path) -> Callable[..., Any]:
    """A factory of configs that run the simulator in this test's workspace and config dir:
    ``make_cursor_sim_config(fault=None, script=None, speed=None, *, delay=None, seed=None,
    **AgentConfig_fields)``.

    Example::

        def test_replay(make_cursor_sim_config):
            config = make_cursor_sim_config(script="rec.ndjson", stream_partial_output=True)
    """
    return _make_config(cursor_sim_workspace, cursor_sim_config_dir)


@pytest.fixture
def cursor_sim_config(request: pytest.FixtureRequest, make_cursor_sim_config: Callable[..., Any]) -> Any:
    """An ``AgentConfig`` running the simulator; ``@pytest.mark.cursor_sim(fault=..., script=...,
    speed=..., delay=..., seed=..., **AgentConfig_fields)`` customizes it.

    Example::

        @pytest.mark.cursor_sim(fault="hang-after-result")
        def test_hang(cursor_sim_config):
            result = CursorAgentClient(cursor_sim_config).query("hi")
    """
    marker = request.node.get_closest_marker("cursor_sim")
    kwargs: dict[str, Any] = dict(marker.kwargs) if marker is not None else {}
    return make_cursor_sim_config(**kwargs)


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``cursor_sim`` marker (pytest calls this hook; nothing to do by hand).

    Example::

        $ pytest --markers | grep cursor_sim
    """
    config.addinivalue_line(
        "markers",
        "cursor_sim(fault=None, script=None, speed=None, **fields): configure the cursor_sim_config fixture",
    )
