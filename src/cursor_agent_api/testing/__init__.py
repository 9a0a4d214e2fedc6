"""Pytest fixtures and helpers for testing your own code against ``cursor-agent-sim``.

Installed as a pytest plugin (entry point ``pytest11``), so the fixtures are available in
any project that has ``cursor-agent-api`` and pytest installed — no import needed:

* ``cursor_sim_workspace`` — a fresh, empty temporary workspace (a ``pathlib.Path``);
* ``cursor_sim_config_dir`` — a fresh temporary ``CURSOR_CONFIG_DIR`` (chats, trust, login);
* ``cursor_sim_home`` — a fresh temporary data dir of the client set for the test
  (``CURSOR_AGENT_API_HOME`` and ``XDG_DATA_HOME``: the journals of tool injections, saved
  chats), used by the configs below;
* ``cursor_sim_config`` — an :class:`~cursor_agent_api.config.AgentConfig` that runs the
  simulator in that workspace with that config dir (``trust=True``, stream-json); a test
  marked ``@pytest.mark.cursor_sim(fault="crash", script="rec.ndjson", speed=1)`` gets that
  fault, script or speed;
* ``make_cursor_sim_config`` — a factory: ``make_cursor_sim_config(fault=..., script=...,
  speed=..., **AgentConfig_fields)``.

And plain helpers for any harness, which work without pytest: :func:`sim_binary` (where
the ``cursor-agent-sim`` executable is) and :func:`sim_env` (the environment variables that
select a fault, a script, a speed and a config dir), which live in
:mod:`cursor_agent_api.sim.harness`; and :class:`ScriptTransport` with its :class:`Script`
(:mod:`.script`: an in-memory agent playing given lines, no process, passed as
``AgentConfig(transport=...)``). This module imports pytest only to define the fixtures, and
only when pytest is installed.

Example:
    >>> sim_env(fault="crash", config_dir="/tmp/cfg")
    {'CURSOR_AGENT_SIM_FAULT': 'crash', 'CURSOR_CONFIG_DIR': '/tmp/cfg'}
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..sim.harness import sim_binary, sim_env

if TYPE_CHECKING:
    from .script import Script, ScriptTransport

__all__ = ["Script", "ScriptTransport", "sim_binary", "sim_env"]

_FIXTURES = (
    "cursor_sim_config",
    "cursor_sim_config_dir",
    "cursor_sim_home",
    "cursor_sim_workspace",
    "make_cursor_sim_config",
    "pytest_configure",
)
"""What :mod:`cursor_agent_api._testing_fixtures` defines for pytest, its fixtures and hook:
re-exported here (where the ``pytest11`` entry point makes pytest look for them) when pytest
is installed, a clear ``ImportError`` otherwise. The one list of them."""

try:
    from .. import _testing_fixtures as _fixtures
except ModuleNotFoundError as e:  # the default install has no pytest: the helpers still work
    if e.name != "pytest":
        raise
else:
    globals().update({name: getattr(_fixtures, name) for name in _FIXTURES})
    __all__ += list(_FIXTURES)


def __getattr__(name: str) -> Any:
    """:class:`Script` and :class:`ScriptTransport`, imported on first use (this module loads in
    every pytest run, as its plugin, and they need asyncio); without pytest, a fixture's name is
    a clear ``ImportError`` instead of a missing name.

    Example:
        >>> from cursor_agent_api.testing import ScriptTransport
        >>> ScriptTransport(["x"], exit_code=3).script.exit_code
        3
    """
    if name in ("Script", "ScriptTransport"):
        from . import script

        return getattr(script, name)
    if name in _FIXTURES:
        raise ImportError(
            f"{name} is a pytest fixture of cursor_agent_api.testing and pytest is not "
            "installed (pip install pytest); outside pytest, use sim_binary() and sim_env()"
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
