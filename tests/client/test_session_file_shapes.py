"""What ``ConversationSession.load`` takes as a saved session: the shapes ``save()`` ever wrote
(read from the git history of ``sessions.py``), and nothing else.

Written, ever: version 1 (``91209e2``: ``version``, ``chat_id``, ``workspace`` — ``null`` or
as given, until ``3da2f71`` made it absolute —, ``model``, ``history``); version 2
(``f497997`` on: the same and ``config``, whose keys grew from 15 settings to today's 22,
plus ``env_set`` / ``env_unset``). Every one of them wrote ``version``. A JSON object without
it (``{}``, an ``AgentResult`` from ``run -o json``), with a key no version wrote
(``session_id`` instead of ``chat_id``), or with a field of the wrong type is not a saved
session: ``SessionFileError`` naming the file and the field, not a blank session that
starts a new chat.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_api import ConversationSession, SessionFileError

CHAT = "8b72ae6d-ab42-4854-991e-6ecf580e66c2"
TURN = {"prompt": "hi", "result": "hello", "success": True, "session_id": CHAT, "error": None,
        "cancelled": False, "duration_ms": 12, "timestamp": 1_700_000_000.5}

CONFIG_0D074C5 = {  # f497997..0d074c5: the first version-2 files, 15 settings
    "agent_binary": "agent", "trust": True, "force_approve": False, "approve_mcps": False,
    "headers": [], "output_format": "stream-json", "stream_partial_output": False,
    "extra_args": [], "timeout": None, "idle_timeout": None, "result_grace": 3.0,
    "kill_grace": 2.0, "max_line_bytes": 67108864, "keep_events": True,
    "stderr_tail_bytes": 65536, "env_set": [], "env_unset": []}
CONFIG_909B1BE = {**CONFIG_0D074C5, "keep_content": True}  # 16
CONFIG_8C18C35 = {**CONFIG_909B1BE, "transport": "print", "allowed_tools": [],  # 20 (ACP)
                  "denied_tools": [], "permission_timeout": None}
CONFIG_NOW = {**CONFIG_8C18C35, "session_mode": None, "permission_mode": "deny"}  # 22

WRITTEN = {
    "v1-91209e2-first": {"version": 1, "chat_id": None, "workspace": None, "model": None,
                         "history": []},
    "v1-91209e2": {"version": 1, "chat_id": CHAT, "workspace": None, "model": "gpt-5",
                   "history": [TURN]},
    "v1-3da2f71": {"version": 1, "chat_id": CHAT, "workspace": "/w", "model": None,
                   "history": [TURN]},
    "v2-f497997": {"version": 2, "chat_id": CHAT, "workspace": "/w", "model": None,
                   "config": CONFIG_0D074C5, "history": [TURN]},
    "v2-909b1be": {"version": 2, "chat_id": CHAT, "workspace": "/w", "model": "auto",
                   "config": CONFIG_909B1BE, "history": [TURN]},
    "v2-8c18c35": {"version": 2, "chat_id": None, "workspace": "/w", "model": None,
                   "config": CONFIG_8C18C35, "history": []},
    "v2-now": {"version": 2, "chat_id": CHAT, "workspace": "/w", "model": None,
               "config": CONFIG_NOW, "history": [TURN, {**TURN, "duration_ms": None}]},
}


def _write(tmp_path: Path, body: Any) -> Path:
    path = tmp_path / "s.json"
    path.write_text(body if isinstance(body, str) else json.dumps(body))
    return path


@pytest.mark.parametrize("name", sorted(WRITTEN))
def test_every_shape_save_ever_wrote_still_loads(tmp_path: Path, name: str) -> None:
    data = WRITTEN[name]
    with ConversationSession.load(_write(tmp_path, data)) as session:
        assert session.session_id == data["chat_id"]
        assert [t.prompt for t in session.history] == [t["prompt"] for t in data["history"]]
        assert session.config.model == data["model"]
        assert session.config.workspace == data["workspace"]


def test_what_save_writes_today_loads(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    ConversationSession(session_id=CHAT, workspace=str(tmp_path), trust=True).save(path)
    with ConversationSession.load(path) as session:
        assert session.session_id == CHAT and session.config.trust


AGENT_RESULT = {  # what `cursor-agent-api run -o json` prints: one turn's result
    "success": True, "result": "Noted.", "text": "Noted.", "session_id": CHAT,
    "request_id": "d987f2e1-9a4c-4d4c-8060-307a61b9ca5e", "duration_ms": 6,
    "duration_api_ms": 6, "error": None, "error_type": None, "exit_code": 0,
    "cancelled": False, "model": "Auto", "usage": {"input_tokens": 6011}, "tool_calls": [],
    "stderr": ""}


@pytest.mark.parametrize("body, says", [
    ({}, "no version"),
    ({"foo": 1}, "no version"),
    ({"history": []}, "no version"),
    (AGENT_RESULT, "one turn's result"),
    ({"version": None}, "version None"),
    ({"version": "2"}, "version '2'"),
    ({"version": True}, "version True"),
    ({"version": 1.0}, "version 1.0"),
    ({"version": 1, "session_id": 5}, "session_id"),
    ({"version": 2, "chat_id": CHAT, "foo": 1, "bar": 2}, "bar, foo"),
    ({"version": 1, "chat_id": CHAT, "config": {}}, "config"),  # version 1 had none
    ({"version": 2, "chat_id": "not-a-chat"}, "chat_id"),
    ({"version": 2, "workspace": 7}, "workspace"),
    ({"version": 2, "model": ["gpt-5"]}, "model"),
    ({"version": 2, "chat_id": CHAT, "history": [{**TURN, "success": "yes"}]}, "success"),
    ({"version": 2, "chat_id": CHAT, "history": [{**TURN, "cancelled": 1}]}, "cancelled"),
    ({"version": 2, "chat_id": CHAT, "history": [{**TURN, "session_id": 5}]}, "session_id"),
    ({"version": 2, "chat_id": None, "history": [{**TURN, "error": {"x": 1}}]}, "error"),
], ids=lambda v: v.replace(" ", "-") if isinstance(v, str) else "")
def test_a_json_object_that_is_not_a_saved_session_is_refused(
        tmp_path: Path, body: dict[str, Any], says: str) -> None:
    path = _write(tmp_path, body)
    with pytest.raises(SessionFileError) as caught:
        ConversationSession.load(path)
    message = str(caught.value)
    assert repr(str(path)) in message and says in message, message
    assert "not a saved session" in message


def test_what_a_newer_version_adds_is_read_past(tmp_path: Path) -> None:
    """A newer version of this library adds settings without a new file version (as
    ``transport`` and ``permission_mode`` were added): its files load here, the settings this
    version does not know left out (review 37: refusing them made every chat a newer install
    saved unreadable, and ``run --resume`` advised removing it). A setting never saved
    (``api_key``) is not taken from a file either."""
    path = tmp_path / "chat.json"
    ConversationSession(session_id=CHAT, workspace=str(tmp_path), trust=True).save(path)
    data = json.loads(path.read_text())
    data["config"].update({"sandbox": "enabled", "api_key": "k"})
    data["labels"] = ["later"]
    path.write_text(json.dumps(data))
    with ConversationSession.load(path) as session:
        assert session.session_id == CHAT and session.config.trust
        assert session.config.api_key is None
