"""A session file damaged by hand or by another program: ``SessionError`` (the documented
error) for what makes it unusable, a neutral value for what is only cosmetic."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_api import ConversationSession, SessionError
from cursor_agent_api.sessions import SessionTurn, read_session_file

CHAT = "8b72ae6d-ab42-4854-991e-6ecf580e66c2"


def session_file(tmp_path: Path, **changes: Any) -> Path:
    data: dict[str, Any] = {"version": 2, "chat_id": CHAT, "workspace": str(tmp_path),
                            "config": {}, "history": [
                                {"prompt": "hi", "result": "hello", "success": True,
                                 "session_id": CHAT, "timestamp": 1_700_000_000.5}]}
    data.update(changes)
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data))
    return path


# ---- 5. a timestamp no clock can show ------------------------------------------------------


@pytest.mark.parametrize("stamp", [1e300, -1e300, 1e18, -5.0, True])
def test_an_absurd_timestamp_is_read_as_unknown(stamp: object) -> None:
    turn = SessionTurn.from_dict({"prompt": "q", "result": "a", "timestamp": stamp})
    assert turn.timestamp == 0.0  # unknown, as in a version-1 file: the turn itself is kept


@pytest.mark.parametrize("stamp", [float("inf"), float("nan")])
def test_a_non_finite_timestamp_is_read_as_unknown(stamp: float) -> None:
    turn = SessionTurn.from_dict({"prompt": "q", "result": "a", "timestamp": stamp})
    assert turn.timestamp == 0.0 and math.isfinite(turn.timestamp)


def test_a_real_timestamp_is_kept(tmp_path: Path) -> None:
    (turn,) = read_session_file(session_file(tmp_path))["history"]
    assert turn.timestamp == 1_700_000_000.5


def test_a_file_with_an_absurd_timestamp_still_loads(tmp_path: Path) -> None:
    path = session_file(tmp_path, history=[{"prompt": "hi", "result": "hello", "success": True,
                                            "session_id": CHAT, "timestamp": 1e300}])
    session = ConversationSession.load(path)
    try:
        assert session.session_id == CHAT and session.history[0].prompt == "hi"
    finally:
        session.close()


# ---- 6. the names of the environment variables ---------------------------------------------


@pytest.mark.parametrize("key", ["env_set", "env_unset"])
@pytest.mark.parametrize("value", [5, 1e308, "HOME", {"A": 1}, [1], ["A", None]])
def test_env_names_not_a_list_of_strings_is_a_session_error(tmp_path: Path, key: str,
                                                            value: object) -> None:
    path = session_file(tmp_path, config={key: value})
    with pytest.raises(SessionError, match=f"config.{key} must be a list of strings"):
        read_session_file(path)
    with pytest.raises(SessionError, match=f"config.{key} must be a list of strings"):
        ConversationSession.load(path)


def test_env_names_as_saved_still_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAA_TEST_VAR", "v")
    path = session_file(tmp_path, config={"env_set": ["CAA_TEST_VAR"], "env_unset": ["X"]})
    session = ConversationSession.load(path)
    try:
        assert session.config.env == {"CAA_TEST_VAR": "v", "X": None}
    finally:
        session.close()


def test_a_version_that_is_a_boolean_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SessionError, match="version"):
        read_session_file(session_file(tmp_path, version=True))


def test_a_duration_that_is_a_boolean_is_unknown() -> None:
    turn = SessionTurn.from_dict({"prompt": "q", "result": "a", "duration_ms": True})
    assert turn.duration_ms is None
