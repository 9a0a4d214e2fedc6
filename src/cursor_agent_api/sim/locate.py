"""Where the ``cursor-agent-sim`` executable is — for the CLI's ``--simulate``, the server's
``--simulate`` and the test fixtures. No pytest, no I/O beyond looking at the filesystem.

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


def sim_binary() -> str:
    """The absolute path of the ``cursor-agent-sim`` executable: the one installed next to
    the running Python (a virtualenv's ``bin/``), else the one on ``PATH``.

    Raises ``FileNotFoundError`` when neither exists (the package is not installed as a
    distribution: ``pip install -e .`` fixes that).
    """
    directory = Path(sys.executable).parent
    for name in ("cursor-agent-sim", "cursor-agent-sim.exe"):
        candidate = directory / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("cursor-agent-sim")
    if found:
        return str(Path(found).resolve())
    raise FileNotFoundError(
        "cursor-agent-sim is not installed next to this Python nor on PATH; "
        "install the package (pip install cursor-agent-api, or pip install -e . in a checkout)"
    )
