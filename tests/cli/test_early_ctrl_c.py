"""A Ctrl-C in the first moments of ``cursor-agent-api`` (while Python imports the command
line: click, the group) ends it quietly with status 130, as a Ctrl-C at any later moment does;
it showed Python's ``KeyboardInterrupt`` traceback, because the console script imported the
command line before any of the project's code could catch it.

The Ctrl-C is not typed (its moment would be a matter of timing): the script pyproject.toml
declares is run as pip writes it, with an import hook that raises ``KeyboardInterrupt`` when
``click`` is imported, where a Ctrl-C of that moment raises it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pytest's own dependency before 3.11
    import tomli as tomllib

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"

HOOK = """
import sys

class CtrlCDuringImport:
    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            raise KeyboardInterrupt
        return None

sys.meta_path.insert(0, CtrlCDuringImport())
"""
FIRST_IMPORTS = ["click", "typing"]
"""Modules the command's first moments import: click (the command line) and typing, which
this package's ``__init__`` and the console script imported (for ``TYPE_CHECKING``) before the
script's ``try``: most of the time before it. (``importlib``, ``warnings`` and ``__future__``,
about a millisecond, are still loaded before it.)"""


def _console_script() -> str:
    """The script pip writes for the ``cursor-agent-api`` entry point, minus its shebang."""
    entry = tomllib.loads(PYPROJECT.read_text())["project"]["scripts"]["cursor-agent-api"]
    module, _, attribute = entry.partition(":")
    return (f"import sys\nfrom {module} import {attribute}\n"
            f"sys.argv[0] = 'cursor-agent-api'\nsys.exit({attribute}())\n")


@pytest.mark.parametrize("module", FIRST_IMPORTS)
def test_a_ctrl_c_while_the_command_line_loads_dies_from_it_quietly(module: str) -> None:
    proc = subprocess.run([sys.executable, "-c", HOOK.format(module=module) + _console_script(),
                           "--help"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == -signal.SIGINT, proc.stderr[-500:]  # (it exited with 130)
    assert proc.stderr == "\n", proc.stderr[-500:]
    assert proc.stdout == ""


PYTHON_M = "import runpy\nrunpy.run_module('cursor_agent_api.cli', run_name='__main__', alter_sys=True)\n"
"""``python -m cursor_agent_api.cli``, as ``-m`` runs it (the package imported, then its
``__main__``), with the hook installed first."""


@pytest.mark.parametrize("module", FIRST_IMPORTS)
def test_python_m_too(module: str) -> None:
    """The package's ``__init__`` imported click and the group, and ``python -m`` imports it
    before its ``__main__`` runs: Python's traceback. It imports nothing now."""
    proc = subprocess.run([sys.executable, "-c", HOOK.format(module=module) + PYTHON_M, "--help"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == -signal.SIGINT, proc.stderr[-500:]
    assert proc.stderr == "\n", proc.stderr[-500:]
    assert proc.stdout == ""


def test_python_m_runs_the_command_line() -> None:
    proc = subprocess.run([sys.executable, "-c", PYTHON_M, "--help"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr[-500:]
    assert "Usage: " in proc.stdout and "COMMAND" in proc.stdout, proc.stdout[:200]


def test_the_console_script_runs_the_command_line() -> None:
    proc = subprocess.run([sys.executable, "-c", _console_script(), "--help"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr[-500:]
    assert proc.stdout.startswith("Usage: cursor-agent-api [OPTIONS] COMMAND"), proc.stdout[:200]


def test_with_stderr_closed_an_early_ctrl_c_writes_nothing_to_stdout() -> None:
    """``2>&-``: ``sys.stderr`` is None, and ``print(file=None)`` would write the ending line
    to stdout (which may be ``-o json`` going into ``jq``)."""
    proc = subprocess.run([sys.executable, "-c", HOOK.format(module="click") + _console_script(),
                           "--help"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                          timeout=60, check=False,
                          preexec_fn=lambda: os.close(2))
    assert proc.returncode == -signal.SIGINT
    assert proc.stdout == ""
