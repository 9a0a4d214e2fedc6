"""An agent file whose ``#!`` interpreter is missing is not reported as missing itself (audit 4:
"'/path/agent' was not found" although the file is there): the message names the file as
existing and its interpreter as what cannot be found — the same error type as every binary
that cannot run (``AgentNotFoundError``), with the owner guard or without it, in both modes."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from cursor_agent_api import AgentNotFoundError, CursorAgentClient
from cursor_agent_api.runtime import process as process_module

GUARD = [True, False] if process_module.OWNER_GUARD else [False]


@pytest.fixture(params=GUARD, ids=lambda on: "guard" if on else "no-guard")
def guard(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    monkeypatch.setattr(process_module, "OWNER_GUARD", request.param)
    return bool(request.param)


@pytest.mark.parametrize("transport", ["print", "acp"])
def test_a_missing_interpreter_is_named(sim, guard, transport, tmp_path: Path) -> None:
    binary = tmp_path / "agent"
    binary.write_text("#!/nonexistent/interpreter --flag\necho hi\n")
    binary.chmod(0o755)
    with CursorAgentClient(sim(agent_binary=str(binary), transport=transport)) as client, \
            pytest.raises(AgentNotFoundError) as caught:
        client.query("hi")
    message = str(caught.value)
    assert f"{str(binary)!r} exists, but its interpreter '/nonexistent/interpreter' " \
           "(its #! line) was not found" in message, message
    assert "was not found (" not in message.split("interpreter")[0]  # not the file itself
    assert caught.value.errno == errno.ENOENT


def test_a_missing_file_is_still_not_found(sim, tmp_path: Path) -> None:
    with CursorAgentClient(sim(agent_binary=str(tmp_path / "absent"))) as client, \
            pytest.raises(AgentNotFoundError, match="absent' was not found"):
        client.query("hi")


@pytest.mark.parametrize("line", [b"#!/no/such\x1b[31mred\n", b"#!/no/" + b"x" * 200 + b"\n"],
                         ids=["escape", "long"])
def test_the_interpreter_line_is_data(sim, tmp_path: Path, line: bytes) -> None:
    """A #! line is the file's: shown quoted, control characters escaped, cut short."""
    binary = tmp_path / "agent"
    binary.write_bytes(line)
    binary.chmod(0o755)
    with CursorAgentClient(sim(agent_binary=str(binary))) as client, \
            pytest.raises(AgentNotFoundError) as caught:
        client.query("hi")
    message = str(caught.value)
    assert "exists, but its interpreter '/no/" in message, message
    assert "\x1b" not in message and "x" * 121 not in message


def test_a_crlf_interpreter_line_says_so(sim, tmp_path: Path) -> None:
    """A #! line ending in CRLF (a script saved on Windows): the kernel looks for the name with
    its \\r, so the interpreter is missing as named, and the remedy says why (review 38: the
    \\r was split off, and an interpreter that exists was named as missing)."""
    binary = tmp_path / "agent"
    binary.write_bytes(b"#!/bin/sh\r\necho hi\r\n")
    binary.chmod(0o755)
    with CursorAgentClient(sim(agent_binary=str(binary))) as client, \
            pytest.raises(AgentNotFoundError) as caught:
        client.query("hi")
    message = str(caught.value)
    assert "its interpreter '/bin/sh\\r' (its #! line) was not found" in message, message
    assert "line endings" in message, message


def test_a_missing_working_folder_is_not_blamed_on_the_interpreter(tmp_path: Path) -> None:
    """The folder the agent starts in is gone (removed after the workspace check): the
    kernel's ENOENT is about it, not the #! line's interpreter (review 38)."""
    binary = tmp_path / "agent"
    binary.write_text("#!/bin/sh\necho hi\n")
    binary.chmod(0o755)
    error = process_module._start_failure(str(binary), FileNotFoundError(errno.ENOENT, "No such file"),
                                          cwd=str(tmp_path / "gone"))
    assert "interpreter" not in str(error) and "loader" not in str(error), str(error)
