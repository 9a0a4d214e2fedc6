"""A ``--model`` past the 200 characters a model id may have is refused naming that limit
and the length given; it said only the slug rule (letters, digits, …), which the value met."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cursor_agent_api.cli import main
from cursor_agent_api.config import AgentConfig


@pytest.mark.parametrize("command", ["run", "chat"])
def test_a_model_one_character_too_long_names_the_limit(command: str, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CURSOR_AGENT_API_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CURSOR_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.chdir(tmp_path)
    prompt = ["hi"] if command == "run" else []
    result = CliRunner().invoke(main, [command, "--simulate", "--trust", "--model", "m" * 201,
                                       *prompt], input="")
    assert result.exit_code == 2, result.output[-400:]
    (line,) = [x for x in result.output.splitlines() if x.startswith("Error:")]
    assert "'--model'" in line and "at most 200 characters" in line and "201" in line, line
    assert "letters, digits" not in line and "AgentConfig" not in line, line


def test_the_library_names_it_too() -> None:
    with pytest.raises(ValueError, match=r"^AgentConfig\.model must be at most 200 characters"):
        AgentConfig(model="m" * 201)
    assert AgentConfig(model="m" * 200).model == "m" * 200
    with pytest.raises(ValueError, match="letters, digits"):  # the rule, when that is what failed
        AgentConfig(model="m " * 101)
