"""``agent --force acp`` runs every tool call without asking (ACP.md §6), so a client setting
that would stop a call is never consulted: ``AgentConfig(transport="acp", force_approve=True)``
with ``can_use_tool``, ``denied_tools`` or ``permission_mode`` ``"ask"``/``"read-only"`` is a
``ValueError`` naming both fields, and ``run``/``chat --acp --force --deny …`` exits 2 with one
line (audit 6, F2: a denied ``rm -rf`` ran). Settings that widen nothing ``--force`` does not
(``allowed_tools``, ``permission_mode="allow"``) or steer what the agent still asks (questions,
plans, their timeout) keep working."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from acp_fake import FakeAgent
from rich.console import Console

from cursor_agent_api.cli import run as cli_run
from cursor_agent_api.config import AgentConfig
from cursor_agent_api.permissions import Accept, Allow, Skip

_REFUSED = [
    ("can_use_tool", {"can_use_tool": lambda request: Allow()}),
    ("denied_tools", {"denied_tools": ["Shell(rm)"]}),
    ("permission_mode", {"permission_mode": "read-only"}),
    ("can_use_tool", {"permission_mode": "ask", "can_use_tool": lambda request: Allow()}),
]


@pytest.mark.parametrize(("field", "fields"), _REFUSED)
def test_force_with_a_setting_it_ignores_is_refused(field: str, fields: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=rf"^AgentConfig\.force_approve and AgentConfig\.{field} "
                                         r"cannot go together in ACP mode: .*never be consulted"):
        AgentConfig(transport="acp", force_approve=True, **fields)


@pytest.mark.parametrize(("field", "fields"), _REFUSED)
def test_an_override_adding_force_is_refused_too(field: str, fields: dict[str, Any]) -> None:
    config = AgentConfig(transport="acp", **fields)
    with pytest.raises(ValueError, match=rf"AgentConfig\.{field} cannot go together"):
        config.with_overrides(force_approve=True)


def test_force_with_what_it_does_not_contradict_is_accepted() -> None:
    config = AgentConfig(transport="acp", force_approve=True, allowed_tools=["Shell(ls)"],
                         permission_mode="allow", on_question=lambda q: Skip(),
                         on_plan=lambda p: Accept(), permission_timeout=30)
    assert config.force_approve and config.allowed_tools == ["Shell(ls)"]
    assert AgentConfig(transport="acp", force_approve=True).permission_mode == "deny"
    # without --force, or in print mode with --force alone, nothing changes
    assert AgentConfig(transport="acp", denied_tools=["Shell(rm)"]).denied_tools == ["Shell(rm)"]
    assert AgentConfig(force_approve=True).force_approve


@pytest.mark.parametrize("command", ["run", "chat"])
def test_the_cli_refuses_force_with_deny_in_one_line(command: str, fake: FakeAgent,
                                                     tmp_path: Path) -> None:
    env = {**os.environ, "FAKE_ACP_DIR": str(fake.state), "FAKE_ACP_LOG": str(fake.log),
           "CURSOR_AGENT_API_HOME": str(tmp_path / "home"), "NO_COLOR": "1"}
    args = [sys.executable, "-m", "cursor_agent_api.cli", command, "--acp", "--force",
            "--deny", "Shell(rm)", "--agent-binary", str(fake.binary)]
    done = subprocess.run([*args, *(["run rm -rf build"] if command == "run" else [])], env=env,
                          cwd=fake.workspace, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        "Error: --force and --deny cannot go together with --acp: with --force the agent runs "
        "every tool call without asking, so --deny would never be consulted (a denied call "
        "would run); drop --force to steer"]
    assert done.stdout == "" and not fake.received(), "nothing ran"


def test_a_terminal_with_force_is_asked_questions_and_plans_only(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_run, "is_terminal", lambda stream: True)
    err = Console(file=io.StringIO())
    config, steering = cli_run.acp_steering(AgentConfig(transport="acp", force_approve=True), err)
    assert steering is not None
    assert config.can_use_tool is None and config.on_question is not None \
        and config.on_plan is not None


@pytest.mark.parametrize("saved", [{"denied_tools": ["Shell(rm)"]}, {"permission_mode": "read-only"}])
def test_a_session_saved_with_force_and_rules_loads_with_one_dropped(
        tmp_path: Path, saved: dict[str, Any]) -> None:
    """A file saved before the combination was refused (``chat --acp --force --deny`` wrote
    such files): ``load(path)`` says what to drop, and ``load(path, force_approve=False)`` (or
    the rule dropped) loads it (review 42: the overrides came after the file's fields were
    checked, so nothing but a base config could load it)."""
    from cursor_agent_api import ConversationSession
    from cursor_agent_api.errors import SessionFileError

    path = tmp_path / "chat.json"
    path.write_text(json.dumps({
        "version": 2, "chat_id": "11111111-2222-3333-4444-555555555555",
        "workspace": str(tmp_path), "model": None, "history": [],
        "config": {"transport": "acp", "force_approve": True, "trust": True, **saved}}))
    with pytest.raises(SessionFileError, match="force_approve"):
        ConversationSession.load(path)
    unforced = ConversationSession.load(path, force_approve=False)
    assert not unforced.config.force_approve and unforced.config.transport == "acp"
    dropped = {name: ([] if name == "denied_tools" else "allow") for name in saved}
    assert ConversationSession.load(path, **dropped).config.force_approve
