"""A session whose workspace path is not UTF-8 text (a folder name's byte decoded with
``surrogateescape``, as Python decodes paths) cannot be saved: a session file is JSON, which
holds text only. ``save`` said so with orjson's ``TypeError`` ("str is not valid UTF-8:
surrogates not allowed"), naming neither the path nor the cause; it now raises a
``ValueError`` that does (not a ``SessionError``, whose remedy is about resuming a chat), and
leaves the file it would have replaced as it was.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cursor_agent_api import AgentConfig
from cursor_agent_api.sessions import ConversationSession

CHAT = "8b72ae6d-ab42-4854-991e-6ecf580e66c2"


def test_a_workspace_whose_path_is_not_utf8_is_a_value_error_naming_it(tmp_path: Path) -> None:
    folder = os.fsdecode(bytes(tmp_path) + b"/caf\xe9")  # Latin-1 'café': not UTF-8
    session = ConversationSession(AgentConfig(workspace=folder), session_id=CHAT)
    path = tmp_path / "chat.json"
    ConversationSession(session_id=CHAT).save(path)
    before = path.read_bytes()
    with pytest.raises(ValueError) as raised:
        session.save(path)
    message = str(raised.value)
    assert "not UTF-8" in message
    assert "caf\\xe9" in message  # the path, shown inert
    assert str(path) in message
    assert "rename the folder" in message and "check the chat id" not in message
    assert path.read_bytes() == before


def test_a_surrogate_no_byte_decodes_to_is_named_too(tmp_path: Path) -> None:
    """A library caller's ``\\ud800`` (not a byte Python decoded): ``os.fsencode`` raised its own
    ``UnicodeEncodeError`` while the message was being made, naming no path."""
    session = ConversationSession(AgentConfig(workspace=f"{tmp_path}/a\ud800b"), session_id=CHAT)
    with pytest.raises(ValueError) as raised:
        session.save(tmp_path / "chat.json")
    assert "the workspace's path is not UTF-8 text" in str(raised.value)
    assert "a\\ud800b" in str(raised.value)
