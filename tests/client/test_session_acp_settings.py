"""``save()`` records every setting needed to resume the same way (docs/client.md): an ACP
session's mode and permission mode too (a plan-mode session came back editing files); and a
bad argument to ``load(path, **fields)`` is the caller's error, not a damaged file."""

from __future__ import annotations

from pathlib import Path

import pytest

from cursor_agent_api import AgentConfig, ConversationSession
from cursor_agent_api.errors import SessionError, SessionFileError
from cursor_agent_api.testing import sim_binary


def _saved(tmp_path: Path, **fields: object) -> Path:
    config = AgentConfig(agent_binary=sim_binary(), trust=True, workspace=str(tmp_path), transport="acp",
                         **fields)  # type: ignore[arg-type]
    path = tmp_path / "chat.json"
    ConversationSession(config).save(path)
    return path


def test_the_session_mode_and_permission_mode_come_back(tmp_path: Path) -> None:
    path = _saved(tmp_path, session_mode="plan", permission_mode="read-only")
    config = ConversationSession.load(path).config
    assert (config.transport, config.session_mode, config.permission_mode) == ("acp", "plan", "read-only")


def test_a_session_saved_asking_needs_its_callback_again(tmp_path: Path) -> None:
    path = _saved(tmp_path, permission_mode="ask", can_use_tool=lambda *a: None)
    with pytest.raises(SessionError, match="can_use_tool") as raised:
        ConversationSession.load(path)
    assert not isinstance(raised.value, SessionFileError)
    assert ConversationSession.load(path, can_use_tool=lambda *a: None).config.permission_mode == "ask"
    assert ConversationSession.load(path, permission_mode="deny").config.permission_mode == "deny"


@pytest.mark.parametrize(("fields", "error"), [({"timeout": -1}, ValueError), ({"modle": "x"}, TypeError)])
def test_a_bad_argument_to_load_is_the_callers_error(tmp_path: Path, fields: dict[str, object],
                                                     error: type[Exception]) -> None:
    path = _saved(tmp_path)
    with pytest.raises(error) as raised:
        ConversationSession.load(path, **fields)
    assert not isinstance(raised.value, SessionFileError)
