"""A file that is not a saved session (not JSON, a wrong shape, a config the library refuses)
says so with its own remedy — not ``SessionError``'s about chat ids and running turns, which
fits a chat the agent refused, not a file. It is still a ``SessionError``."""

from __future__ import annotations

from pathlib import Path

import pytest

from cursor_agent_api import ConversationSession, SessionError, SessionFileError

CHAT = "8b72ae6d-ab42-4854-991e-6ecf580e66c2"


@pytest.mark.parametrize("content", [
    "{oops",                                             # not JSON
    "[1, 2]",                                            # not an object
    '{"version": 9}',                                    # a version this library cannot read
    '{"version": 2, "config": []}',                      # config not an object
    '{"version": 2, "chat_id": 5}',                      # a field of the wrong type
    '{"version": 2, "history": {}}',                     # history not a list
    '{"version": 2, "history": [{"prompt": 1}]}',        # a turn that is not one
    '{"version": 2, "config": {"timeout": -1}}',         # a setting AgentConfig refuses
], ids=["json", "object", "version", "config", "field", "history", "turn", "setting"])
def test_a_file_that_is_not_a_session_has_its_own_remedy(tmp_path: Path, content: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(SessionFileError) as caught:
        ConversationSession.load(path)
    err = caught.value
    assert isinstance(err, SessionError)  # what callers catch today still catches it
    assert str(path) in str(err)
    assert "not a saved session" in str(err)
    assert "running turn" not in str(err) and "chat id" not in str(err)
    assert "cursor-agent-api" in err.cli_message()


def test_a_refused_chat_keeps_sessions_remedy() -> None:
    assert "running turn" in str(SessionError("Chat may still be running"))
