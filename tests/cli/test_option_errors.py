"""A bad value of an option that ``run`` and ``chat`` pass on to :class:`AgentConfig` is said in
the command line's words: a usage error (exit 2) naming the option the user typed
(``--model``), never the library's field (``AgentConfig.model``) nor its Python remedies
(``None``, ``list_models()``); never a traceback.

``--model ''`` said "AgentConfig.model must not be empty (use None to leave it unset)", and
``--max-line-bytes 99999999999999999999`` ran the turn, then ended in a ``TypeError``
traceback when the chat was saved (a number past 64 bits).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cursor_agent_api.cli import main

LIBRARY_WORDS = ("AgentConfig", "None", "list_models", "transport=", "Traceback")


def _bad(tmp_path: Path) -> list[tuple[list[str], str]]:
    newline_dir = tmp_path / "a\nb"
    newline_dir.mkdir()
    return [
        (["--model", ""], "--model"),
        (["--model", "   "], "--model"),
        (["--model", "-x"], "--model"),
        (["--model", "gpt 5"], "--model"),
        (["-H", "no colon"], "--header"),
        (["-H", "X-Team: a\nb"], "--header"),
        (["--agent-binary", "a\nb"], "--agent-binary"),
        (["--workspace", str(newline_dir)], "--workspace"),
        (["--acp", "--allow", ""], "--allow"),
        (["--acp", "--deny", "zz"], "--deny"),
        (["--max-line-bytes", "99999999999999999999"], "--max-line-bytes"),
    ]


@pytest.mark.parametrize("command", ["run", "chat"])
def test_a_bad_agent_option_is_named_by_its_flag(command: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CURSOR_AGENT_API_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CURSOR_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.chdir(tmp_path)
    for args, flag in _bad(tmp_path):
        simulate = [] if "--agent-binary" in args else ["--simulate"]
        prompt = ["hi"] if command == "run" else []
        result = CliRunner().invoke(main, [command, *simulate, "--trust", *args, *prompt],
                                    input="")
        said = result.output
        assert result.exit_code == 2, (args, result.exit_code, said[-400:])
        (line,) = [x for x in said.splitlines() if x.startswith("Error:")]
        assert flag in line, (args, line)
        assert [w for w in LIBRARY_WORDS if w in said] == [], (args, line)


@pytest.mark.parametrize("command", ["run", "chat"])
def test_a_current_folder_that_cannot_be_the_workspace_is_not_blamed_on_the_flag(
        command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No --workspace given: the current folder is the workspace; a folder whose name holds
    a newline is refused, in words that say where it came from and what to do, not as an
    invalid value of a --workspace the user never typed."""
    monkeypatch.setenv("CURSOR_AGENT_API_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CURSOR_CONFIG_DIR", str(tmp_path / "config"))
    odd = tmp_path / "a\nb"
    odd.mkdir()
    monkeypatch.chdir(odd)
    prompt = ["hi"] if command == "run" else []
    result = CliRunner().invoke(main, [command, "--simulate", "--trust", *prompt], input="")
    assert result.exit_code == 2, result.output[-400:]
    assert "Invalid value for '--workspace'" not in result.output, result.output
    assert "the current folder is the workspace when --workspace is not given" in result.output
    assert "cd to another folder, or pass --workspace" in result.output
    assert [w for w in LIBRARY_WORDS if w in result.output] == [], result.output
