"""Issue 11.5 on the client side: nothing of the agent's (or a request's) becomes an option,
and no secret appears in an error message."""

from __future__ import annotations

import pytest

from cursor_agent_api import AgentConfig, ConversationSession
from cursor_agent_api.config import is_chat_id
from cursor_agent_api.runtime import build_argv
from cursor_agent_api.runtime import process as process_module

CHAT = "8b72ae6d-ab42-4854-991e-6ecf580e66c2"
KEY = "sk-very-secret-key-0123456789"


@pytest.fixture
def argvs(monkeypatch):
    seen: list[list[str]] = []
    original = process_module.AgentProcess.spawn.__func__

    async def spawn(cls, argv, *args, **kwargs):
        seen.append(list(argv))
        return await original(cls, argv, *args, **kwargs)

    monkeypatch.setattr(process_module.AgentProcess, "spawn", classmethod(spawn))
    return seen


@pytest.mark.parametrize("fields", [
    {"api_key": KEY + "\n"},
    {"api_key": KEY + "\x00"},
    {"api_key": " "},
    {"env": {"TOKEN": KEY + "\x00"}},
    {"env": {"TOKEN": 12345}},
    {"headers": [f"Authorization Bearer {KEY}"]},
    {"headers": [f"Authorization: Bearer {KEY}\n"]},
    {"extra_args": [f"--api-key={KEY}\x00"]},
])
def test_no_secret_in_config_errors(fields):
    with pytest.raises((ValueError, TypeError)) as info:
        AgentConfig(**fields)
    message = str(info.value)
    assert KEY not in message and "12345" not in message
    assert "AgentConfig." in message  # still says which field


@pytest.mark.parametrize("fields", [
    {"resume": "--force"}, {"resume": "c1"}, {"resume": f"{CHAT} --force"},
    {"model": "-f"}, {"model": "--force"}, {"model": "gpt 5"}, {"model": "a\tb"},
    {"headers": ["--force: x"]},
])
def test_option_like_values_are_refused(fields):
    with pytest.raises(ValueError):
        AgentConfig(**fields)


def test_values_are_joined_to_their_options():
    argv = build_argv(AgentConfig(resume=CHAT, model="gpt-5", workspace="-odd dir",
                                  headers=["X-A: -1"]), binary="agent")
    assert argv[4:] == ["--model=gpt-5", "--workspace=-odd dir", f"--resume={CHAT}",
                        "--header=X-A: -1"]


def test_is_chat_id():
    assert is_chat_id(CHAT) and is_chat_id(CHAT.upper())
    assert not is_chat_id(CHAT + "\n") and not is_chat_id("--resume") and not is_chat_id(None)


def _script(tmp_path, session_id_json: str):
    # "\u002d" is "-" once decoded: the simulator's replay rewrites only the literal text of
    # the recorded id, so the agent really reports the id below (as a hostile agent would)
    lines = [
        '{"type":"system","subtype":"init","apiKeySource":"login","cwd":"/w",'
        f'"session_id":{session_id_json},"model":"Auto","permissionMode":"default"}}',
        '{"type":"assistant","message":{"role":"assistant","content":[{"type":"text",'
        f'"text":"ok"}}]}},"session_id":{session_id_json}}}',
        '{"type":"result","subtype":"success","is_error":false,"duration_ms":1,'
        f'"duration_api_ms":1,"result":"ok","session_id":{session_id_json},'
        '"request_id":"r1"}',
    ]
    path = tmp_path / "hostile.ndjson"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_agent_reported_session_id_never_becomes_an_option(sim, tmp_path, argvs):
    script = _script(tmp_path, '"\\u002d-force"')
    with ConversationSession(sim(script=script)) as session:
        r1 = session.send("hello")
        assert r1.success and r1.session_id == "--force"  # the data, as the agent wrote it
        assert session.session_id is None  # ...but not adopted as the chat id
        session.send("hello again")
    assert len(argvs) == 2
    for argv in argvs:
        assert "--force" not in argv
        assert not any(a == "--resume" for a in argv)
