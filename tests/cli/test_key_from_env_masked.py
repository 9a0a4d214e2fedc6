"""The API key a CI job exports in ``CURSOR_API_KEY`` (the only way the command line takes
it) never reaches the output when the agent prints it: ``-o json``'s ``error`` and
``stderr``, ``-o ndjson``'s events, the ``✗`` line, the saved chat (docs/client.md,
"What is guaranteed about secrets in errors")."""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

import pytest

KEY = "sk-CIKEY-0123456789abcdef"
LEAKY = ("#!/bin/sh\ncat >/dev/null\necho \"debug: using api key $CURSOR_API_KEY\" >&2\n"
         "echo \"Error: request failed with key=$CURSOR_API_KEY\" >&2\nexit 1\n")


@pytest.mark.parametrize("output", [["-o", "json"], ["-o", "ndjson"], ["-o", "text"],
                                    ["--output-format", "json"]])
def test_the_key_from_the_environment_is_masked(
        cli: Callable[..., CompletedProcess[str]], cli_env: dict[str, str], tmp_path: Path,
        output: list[str]) -> None:
    agent = tmp_path / "agent"
    agent.write_text(LEAKY)
    agent.chmod(agent.stat().st_mode | stat.S_IXUSR)
    proc = cli("run", "--agent-binary", str(agent), "--trust", *output, "hi", stdin="",
               extra_env={"CURSOR_API_KEY": KEY})
    assert proc.returncode == 1, proc.stderr
    assert KEY not in proc.stdout and KEY not in proc.stderr
    assert "request failed with key=***" in proc.stdout + proc.stderr
    for saved in Path(cli_env["CURSOR_AGENT_API_HOME"]).rglob("*"):
        if saved.is_file():
            assert KEY not in saved.read_text(errors="replace"), saved
