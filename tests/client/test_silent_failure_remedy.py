"""An agent that fails without a word on stderr gets a next step that applies.

The message said "... printed nothing on stderr — see the stderr tail in the error for the
agent's own explanation": there is no tail. With an empty stderr the remedy now names the
binary that was started and how to check it is Cursor's agent (its ``--version``), as the
output-closed case already did; a failure with something on stderr keeps pointing at it.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path

import pytest

from cursor_agent_api import AgentProcessError, CursorAgentClient
from cursor_agent_api.runtime.stderr import classify_failure

TAIL = "see the stderr tail"


@pytest.mark.parametrize(("body", "what"), [
    ("exit 2", "exited with code 2 and printed nothing on stderr"),
    ("exit 0", "exited with code 0 but the output ended without a result event"),
    ("echo '   ' >&2; exit 3", "exited with code 3 and printed nothing on stderr"),
], ids=["exit-2", "exit-0-no-result", "blank-stderr"])
def test_a_silent_failure_names_the_binary_to_check(
        stand_in_agent: Callable[..., Path], body: str, what: str) -> None:
    agent = str(stand_in_agent(body))
    with CursorAgentClient(agent_binary=agent, trust=True) as client:
        exc = client.query("hi").exception
    assert type(exc) is AgentProcessError and what in str(exc)
    for text in (str(exc), exc.cli_message()):
        assert TAIL not in text, text
        assert f"`{shlex.quote(agent)} --version`" in text and "Cursor's agent" in text, text


def test_a_failure_with_words_on_stderr_still_points_at_them(
        stand_in_agent: Callable[..., Path]) -> None:
    agent = str(stand_in_agent("echo 'Error: the disk is on fire' >&2; exit 2"))
    with CursorAgentClient(agent_binary=agent, trust=True) as client:
        exc = client.query("hi").exception
    assert type(exc) is AgentProcessError and "the disk is on fire" in str(exc)
    assert TAIL in str(exc) and "--version" not in str(exc)


def test_classify_failure_without_a_binary_gives_the_general_next_step() -> None:
    exc = classify_failure(2, "")
    assert TAIL not in str(exc) and "--version" in str(exc) and "Cursor's agent" in str(exc)
    assert TAIL in str(classify_failure(2, "boom\n"))


def test_an_agent_interrupted_in_silence_is_not_told_to_read_its_stderr(
        stand_in_agent: Callable[..., Path]) -> None:
    """Exit 143 (a kill from outside) with nothing on stderr said "see the stderr tail" too
    (review 47): there is no tail, and the binary is likely fine."""
    agent = str(stand_in_agent("kill -TERM $$"))
    with CursorAgentClient(agent_binary=agent, trust=True) as client:
        exc = client.query("hi").exception
    assert type(exc) is AgentProcessError and "interrupted (exit code 143)" in str(exc)
    assert TAIL not in str(exc) and "something outside stopped the agent" in str(exc)


def test_an_acp_agent_dying_in_silence_names_the_binary_to_check(tmp_path: Path) -> None:
    """The ACP transport's death said "see the stderr tail" with an empty stderr (review 47).
    (Not the stand-in fixture: it reads stdin to its end first, which ACP keeps open.)"""
    path = tmp_path / "agent.sh"
    path.write_text("#!/bin/sh\nexit 1\n")
    path.chmod(0o755)
    agent = str(path)
    with CursorAgentClient(agent_binary=agent, trust=True, transport="acp") as client:
        exc = client.query("hi").exception
    assert isinstance(exc, AgentProcessError) and "exited with code 1" in str(exc), exc
    assert TAIL not in str(exc) and f"`{shlex.quote(agent)} --version`" in str(exc), str(exc)
