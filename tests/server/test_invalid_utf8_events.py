"""The server's runs read the agent's lines with the client's reader: an event holding bytes
that are not UTF-8 is stored as its event (U+FFFD for the bytes), not as RAW
(tests/protocol/test_invalid_utf8.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .server_helpers import Server, all_events, new_chat, wait_run


def test_an_assistant_line_with_a_latin1_byte_is_stored_as_its_event(
    make_server: Callable[..., Server], stand_in_agent: Callable[..., Path]
) -> None:
    chat_id = "8b72ae6d-ab42-4854-991e-6ecf580e66c2"
    agent = stand_in_agent(
        f"printf '%s\\n' '{{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"{chat_id}\"}}'\n"
        "printf '{\"type\":\"assistant\",\"message\":{\"role\":\"assistant\",\"content\":"
        "[{\"type\":\"text\",\"text\":\"caf\\351 ok\"}]}}\\n'\n"
        f"printf '%s\\n' '{{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,"
        f"\"result\":\"done\",\"session_id\":\"{chat_id}\"}}'")
    server = make_server(args=["--agent-binary", str(agent)])
    with server.client() as client:
        chat = new_chat(client)
        run = client.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hi"}).json()
        assert wait_run(client, run["id"])["status"] == "succeeded"
        events = all_events(client, chat["id"])
    types = [e.get("payload", {}).get("type") for e in events if e.get("source") == "agent"]
    assert "raw" not in types and "assistant" in types, types
    assistant = next(e for e in events if e.get("payload", {}).get("type") == "assistant")
    assert assistant["payload"]["text"] == "caf\ufffd ok", assistant
