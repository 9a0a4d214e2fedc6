"""The pytest fixtures of :mod:`cursor_agent_api.testing` (the plugin loaded through the
``pytest11`` entry point). This module imports pytest; :mod:`cursor_agent_api.testing` imports
it only when pytest is installed, so its helpers work without pytest. What pytest gets from
here is listed once, as ``cursor_agent_api.testing._FIXTURES``."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from .home import HOME_ENV
from .sim.harness import CLI_VARS, SIM_VARS, sim_binary, sim_env


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
        # none of the caller's simulator variables (nor its key, data dir) reaches the test
        env: dict[str, str | None] = {name: None for name in (*SIM_VARS, *CLI_VARS)}
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
def cursor_sim_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh data directory of this library, set for one test, so that what the client keeps
    there stays out of your real one: ``CURSOR_AGENT_API_HOME`` (saved chats) and
    ``XDG_DATA_HOME`` (the per-user data dir, where the journals of your tools' injections and
    approvals live whatever the home says) both point at it. The configs of these fixtures use
    it.

    Example::

        def test_tools(cursor_sim_config, cursor_sim_home):
            with CursorAgentClient(cursor_sim_config, tools=[lookup_order]) as client:
                client.query('Check lookup_order {"order_id": "A1"}')
            assert (cursor_sim_home / "injections").is_dir()  # not in ~/.local/share
    """
    data = tmp_path_factory.mktemp("cursor-sim-data")
    home = data / "cursor-agent-api"  # platformdirs' user_data_dir("cursor-agent-api") there
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    monkeypatch.setenv(HOME_ENV, str(home))
    return home


@pytest.fixture
def make_cursor_sim_config(cursor_sim_workspace: Path, cursor_sim_config_dir: Path,
                           cursor_sim_home: Path) -> Callable[..., Any]:
    """A factory of configs that run the simulator in this test's workspace and config dir
    (and with this test's ``cursor_sim_home``):
    ``make_cursor_sim_config(fault=None, script=None, speed=None, *, delay=None, seed=None,
    **AgentConfig_fields)``.

    Example::

        def test_replay(make_cursor_sim_config):
            config = make_cursor_sim_config(script="rec.ndjson", stream_partial_output=True)
    """
    return _make_config(cursor_sim_workspace, cursor_sim_config_dir)


_POSITIONAL = ("fault", "script", "speed")
"""The marker's positional parameters, in the order of ``make_cursor_sim_config``'s."""


def marker_fields(markers: Iterable[pytest.Mark]) -> dict[str, Any]:
    """The arguments of the ``cursor_sim`` markers that apply to a test, closest first (the
    test's own, then its class's, then its module's): positional ones bound as
    ``(fault, script, speed)``, merged key by key, the closest marker winning.

    Example:
        >>> own, of_class = pytest.mark.cursor_sim("crash"), pytest.mark.cursor_sim(seed="s", fault="slow")
        >>> marker_fields([own.mark, of_class.mark])
        {'seed': 's', 'fault': 'crash'}
    """
    merged: dict[str, Any] = {}
    for mark in reversed(list(markers)):
        if len(mark.args) > len(_POSITIONAL):
            raise TypeError(f"@pytest.mark.cursor_sim takes at most {len(_POSITIONAL)} positional "
                            f"arguments ({', '.join(_POSITIONAL)}), got {len(mark.args)}: {mark.args!r}")
        fields = dict(zip(_POSITIONAL, mark.args, strict=False))
        both = sorted(fields.keys() & mark.kwargs.keys())
        if both:
            raise TypeError(f"@pytest.mark.cursor_sim got {', '.join(both)} both by position and by keyword")
        merged.update(fields)
        merged.update(mark.kwargs)
    return merged


@pytest.fixture
def cursor_sim_config(request: pytest.FixtureRequest, make_cursor_sim_config: Callable[..., Any]) -> Any:
    """An ``AgentConfig`` running the simulator; ``@pytest.mark.cursor_sim(fault=None,
    script=None, speed=None, *, delay=None, seed=None, **AgentConfig_fields)`` customizes it
    (the first three may be given by position). Markers on the test, its class and its module
    merge key by key, the closest winning.

    Example::

        @pytest.mark.cursor_sim("hang-after-result")
        def test_hang(cursor_sim_config):
            result = CursorAgentClient(cursor_sim_config).query("hi")
    """
    return make_cursor_sim_config(**marker_fields(request.node.iter_markers("cursor_sim")))


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``cursor_sim`` marker (pytest calls this hook; nothing to do by hand).

    Example::

        $ pytest --markers | grep cursor_sim
    """
    config.addinivalue_line(
        "markers",
        "cursor_sim(fault=None, script=None, speed=None, *, delay=None, seed=None, **fields): "
        "configure the cursor_sim_config fixture (markers of the test, class and module merge, "
        "the closest winning per key)",
    )
