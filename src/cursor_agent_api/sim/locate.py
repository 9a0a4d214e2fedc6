"""Where the ``cursor-agent-sim`` executable is — for the CLI's ``--simulate``, the server's
``--simulate``, ``AgentConfig(agent_binary="cursor-agent-sim")`` and the test fixtures. No
pytest, no I/O beyond looking at the filesystem and the package's installed metadata.

Example:
    >>> import os
    >>> os.path.isabs(sim_binary())
    True
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

__all__ = ["DISTRIBUTION", "SIM_NAME", "installed_script", "is_simulator", "sim_binary"]

SIM_NAME = "cursor-agent-sim"
"""The simulator's console script, as ``pyproject.toml`` installs it."""
DISTRIBUTION = "cursor-agent-api"


def is_simulator(agent_binary: str) -> bool:
    """True when ``agent_binary`` names the simulator (its console script, by any path):
    what ``--simulate`` runs, which keeps its chats apart from Cursor's agent.

    Example:
        >>> is_simulator("/venv/bin/cursor-agent-sim"), is_simulator("agent")
        (True, False)
    """
    return os.path.basename(agent_binary) in (SIM_NAME, SIM_NAME + ".exe")


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def installed_script(name: str) -> str | None:
    """The absolute path of console script ``name`` as pip recorded it when it installed this
    package (its ``RECORD``), wherever that was: a virtualenv's ``bin/``, ``~/.local/bin`` of
    a user install, ``/usr/local/bin``. ``None`` when the package is not installed as a
    distribution or has no such script.

    Example:
        >>> installed_script("no-such-script") is None
        True
    """
    from importlib import metadata  # (email, zipfile, csv: only when this is asked)

    try:
        files = metadata.distribution(DISTRIBUTION).files or []
    except metadata.PackageNotFoundError:
        return None
    wanted = (name, name + ".exe")
    for entry in files:
        if entry.name in wanted:
            path = Path(os.path.normpath(str(entry.locate())))
            if _executable(path):
                return str(path)
    return None


def sim_binary() -> str:
    """The absolute path of the ``cursor-agent-sim`` executable: the one installed next to
    the running Python (a virtualenv's ``bin/``), else the one recorded by this package's
    installation, else the one on ``PATH``. Neither needs the virtualenv to be activated.

    Raises ``FileNotFoundError`` when none exists (the package is not installed as a
    distribution: ``pip install -e .`` fixes that; ``python -m cursor_agent_api.sim`` runs
    the simulator meanwhile).
    """
    directory = Path(sys.executable).parent
    for name in (SIM_NAME, SIM_NAME + ".exe"):
        candidate = directory / name
        if _executable(candidate):
            return str(candidate)
    recorded = installed_script(SIM_NAME)
    if recorded is not None:
        return recorded
    found = shutil.which(SIM_NAME)
    if found:
        return str(Path(found).resolve())
    raise FileNotFoundError(
        f"{SIM_NAME} is not installed next to this Python, in this package's installation, "
        "nor on PATH; install the package (pip install cursor-agent-api, or pip install -e . "
        "in a checkout), or run the simulator as: python -m cursor_agent_api.sim"
    )
