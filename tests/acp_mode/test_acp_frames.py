"""Every standard ACP frame the client writes validates against the ``agent-client-protocol``
package's schema models (and loses nothing in the round trip: no misspelt field)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from acp import schema  # the agent-client-protocol package (a test dependency)
from acp_fake import FakeAgent

from cursor_agent_api import CursorAgentClient, EventType
from cursor_agent_api.permissions import Allow, Deny, PermissionRequest

REQUESTS: dict[str, Any] = {
    "initialize": schema.InitializeRequest,
    "authenticate": schema.AuthenticateRequest,
    "session/new": schema.NewSessionRequest,
    "session/load": schema.LoadSessionRequest,
    "session/prompt": schema.PromptRequest,
    "session/set_mode": schema.SetSessionModeRequest,
    "session/set_config_option": schema.SetSessionConfigOptionSelectRequest,
    "session/list": schema.ListSessionsRequest,
}
NOTIFICATIONS: dict[str, Any] = {"session/cancel": schema.CancelNotification}
ANSWERS: dict[str, Any] = {"session/request_permission": schema.RequestPermissionResponse}


def _covers(dumped: Any, sent: Any, where: str = "") -> None:
    """Everything sent is in the model's dump, unchanged (the model may add its defaults)."""
    if isinstance(sent, dict):
        assert isinstance(dumped, dict), where
        for key, value in sent.items():
            assert key in dumped, f"{where}.{key} is not a field of the schema"
            _covers(dumped[key], value, f"{where}.{key}")
    elif isinstance(sent, list):
        assert isinstance(dumped, list) and len(dumped) == len(sent), where
        for i, (d, v) in enumerate(zip(dumped, sent, strict=True)):
            _covers(d, v, f"{where}[{i}]")
    else:
        assert dumped == sent, where


def _same(model: Any, params: dict[str, Any]) -> None:
    parsed = model.model_validate(params)
    _covers(parsed.model_dump(by_alias=True, exclude_none=True, mode="json"), params, model.__name__)


def validate_frames(fake: FakeAgent) -> dict[str, int]:
    """Validate what the fake agent received; the count of frames per kind."""
    sent = {}
    sent_log = fake.log.with_name(fake.log.name + ".sent")
    if sent_log.exists():
        for line in sent_log.read_text().splitlines():
            item = json.loads(line)
            sent[item["id"]] = item["method"]
    counts: dict[str, int] = {}
    for line in fake.received():
        frame = json.loads(line)
        assert frame["jsonrpc"] == "2.0"
        method = frame.get("method")
        if method is not None:
            if "id" in frame:
                assert isinstance(frame["id"], int)
                model = REQUESTS[method]  # the client sends no request outside this table
            else:
                model = NOTIFICATIONS[method]
            _same(model, frame["params"])
            counts[method] = counts.get(method, 0) + 1
            continue
        # an answer to one of the agent's requests
        asked = sent[frame["id"]]
        assert ("result" in frame) != ("error" in frame)
        if "error" in frame:
            assert isinstance(frame["error"]["code"], int) and frame["error"]["message"]
            counts[f"{asked}:error"] = counts.get(f"{asked}:error", 0) + 1
        elif asked in ANSWERS:
            _same(ANSWERS[asked], frame["result"])
            outcome = frame["result"]["outcome"]["outcome"]
            counts[f"{asked}:{outcome}"] = counts.get(f"{asked}:{outcome}", 0) + 1
        else:  # Cursor's own cursor/* methods: not in the ACP schema
            assert asked.startswith("cursor/"), asked
            assert isinstance(frame["result"], dict)
    return counts


def test_every_standard_frame_validates(fake: FakeAgent, tmp_path: Any) -> None:
    image = tmp_path / "a.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\n")
    hang = asyncio.Event()

    async def can_use_tool(request: PermissionRequest) -> Allow | Deny:
        if request.command == "hang":
            await hang.wait()  # until the turn is cancelled
        return Allow() if request.command == "ls" else Deny("no")

    config = fake.config(can_use_tool=can_use_tool, kill_grace=5.0)
    with CursorAgentClient(config) as client:
        first = client.query("run ls", images=[str(image)])
        client.query("run rm x", resume=first.session_id)
        client.set_session_mode(first.session_id, "plan")
        client.set_session_option(first.session_id, "model", "default[]")
        client.query("unknown", resume=first.session_id)
        client.query("todos", resume=first.session_id)
        stream = client.query_stream("run hang", resume=first.session_id)
        for event in stream:
            if event.type is EventType.INTERACTION_QUERY and event.subtype == "request":
                stream.cancel()
        cancelled = stream.wait()
    # a second process loads the session
    with CursorAgentClient(config) as client:
        client.query("say again", resume=first.session_id)
    assert cancelled.cancelled
    counts = validate_frames(fake)
    for kind in ("initialize", "session/new", "session/load", "session/prompt", "session/cancel",
                 "session/set_mode", "session/set_config_option",
                 "session/request_permission:selected", "session/request_permission:cancelled",
                 "cursor/brand_new_thing:error"):
        assert counts.get(kind), (kind, counts)
    assert "authenticate" not in counts  # a headless client never starts a browser login


def test_the_check_catches_a_misspelt_or_malformed_field() -> None:
    with pytest.raises(AssertionError, match="mcpServer"):
        _same(schema.NewSessionRequest, {"cwd": "/w", "mcpServers": [], "mcpServer": []})
    with pytest.raises(Exception, match="validation error"):
        _same(schema.RequestPermissionResponse, {"outcome": {"outcome": "selected"}})
