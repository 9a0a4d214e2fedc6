"""``FORCE_COLOR=1`` or ``TTY_COMPATIBLE=1`` (set workflow-wide by many CI setups) never make
a pipe a terminal: ``run`` prints plain text with no escape codes (README), never the live
view's spinner, and ``sessions list | cat`` is not cut to 80 columns."""

from __future__ import annotations

from collections.abc import Callable
from subprocess import CompletedProcess

import pytest

PROMPT = "list the files and tell me which of them is the longest one"


@pytest.mark.parametrize("forced", [{"FORCE_COLOR": "1"}, {"TTY_COMPATIBLE": "1"}])
def test_a_pipe_stays_plain_text(cli: Callable[..., CompletedProcess[str]],
                                 cli_env: dict[str, str], forced: dict[str, str]) -> None:
    cli_env.pop("NO_COLOR")
    proc = cli("run", "--simulate", "--trust", PROMPT, stdin="", extra_env=forced)
    assert proc.returncode == 0, proc.stderr
    assert "notes.txt" in proc.stdout
    for text in (proc.stdout, proc.stderr):
        assert "\x1b" not in text and "\r" not in text, repr(text[:300])
    listed = cli("sessions", "list", extra_env=forced)
    assert listed.returncode == 0, listed.stderr
    assert "\x1b" not in listed.stdout
    row = listed.stdout.splitlines()[1]  # whole, not cut to 80 columns
    assert cli_env["TEST_WS"] in row and PROMPT[:50] in row and row.rstrip().endswith(
        tuple("0123456789")), row
