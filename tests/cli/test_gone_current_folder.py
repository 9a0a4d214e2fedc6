"""A command started in a folder deleted since the shell went there: run, chat, serve and
worker ended in a FileNotFoundError traceback from os.getcwd() (review 46); now one line that
says what happened and what to do, exit 1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("args", [["run", "--simulate", "hi"], ["chat", "--simulate"],
                                  ["serve", "--simulate"]], ids=["run", "chat", "serve"])
def test_a_command_in_a_deleted_folder_says_so_in_one_line(args: list[str], tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    env = {**os.environ, "CURSOR_AGENT_API_HOME": str(tmp_path / "home"),
           "CURSOR_CONFIG_DIR": str(tmp_path / "cursor-config")}
    # the child goes into the folder, which is then deleted, before the command starts
    script = (f"import os, runpy, sys; os.chdir({str(gone)!r}); os.rmdir({str(gone)!r}); "
              f"sys.argv = ['cursor-agent-api', *{args!r}]; "
              "runpy.run_module('cursor_agent_api', run_name='__main__')")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120, check=False)
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    assert "the current folder no longer exists" in done.stderr and "--workspace" in done.stderr
