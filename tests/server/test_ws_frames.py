"""Client frames the WebSocket protocol has no use for get its ``error`` answer, not a
traceback: a binary frame, and a ping whose nonce cannot be echoed (found by a review)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from server_helpers import Server, new_chat

from cursor_agent_api.server.websocket import MAX_CLIENT_MESSAGE, answer

DOCS = Path(__file__).parents[2] / "docs" / "websocket.md"

DEEP_NONCE = '{"op":"ping","nonce":' + "[" * 300 + "]" * 300 + "}"


async def _exchange(server: Server, chat_id: str, frames: list[Any]) -> list[dict[str, Any]]:
    """Send each frame and read one answer to it (after the hello and the live)."""
    from websockets.asyncio.client import connect

    got: list[dict[str, Any]] = []
    async with connect(server.ws_url(chat_id)) as ws:
        for expected in ("hello", "live"):
            msg = json.loads(await asyncio.wait_for(ws.recv(), 30))
            assert msg["op"] == expected, msg
        for frame in frames:
            await ws.send(frame)
            got.append(json.loads(await asyncio.wait_for(ws.recv(), 30)))
    return got


@pytest.mark.parametrize(
    "frame", [b"\x00binary frame", DEEP_NONCE], ids=["binary", "deep-nonce"]
)
def test_unusable_frame_is_answered_with_error_and_the_socket_stays(server: Server, frame: Any) -> None:
    with server.client() as c:
        chat = new_chat(c)
    # the bad frame, then a ping on the same socket: errors are recoverable
    got = asyncio.run(_exchange(server, chat["id"], [frame, '{"op":"ping","nonce":7}']))
    assert got[0]["op"] == "error" and got[0]["detail"], got
    assert got[1] == {"op": "pong", "seq": 0, "nonce": 7}, got
    log = server.log_text()
    assert "Exception in ASGI application" not in log and "Traceback" not in log, log[-2000:]


def test_answer_to_each_kind_of_client_message() -> None:
    pong = json.loads(answer('{"op":"ping","nonce":{"a":[1,"x"]}}', 5))
    assert pong == {"op": "pong", "seq": 5, "nonce": {"a": [1, "x"]}}
    for text, words in [
        (DEEP_NONCE, "nested"),
        ("not json", "not valid JSON"),
        ('{"op":"subscribe"}', "unknown message"),
        ("[1]", "unknown message"),
    ]:
        err = json.loads(answer(text, 5))
        assert err["op"] == "error" and err["seq"] == 5 and words in err["detail"], (text, err)


def test_unknown_chat_with_a_long_non_ascii_id_is_refused_without_traceback(server: Server) -> None:
    """The close frame's reason (at most 123 bytes) was the detail cut at 120 characters: 60
    euro signs in the id made it 180 bytes, and the refusal a ProtocolError."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    async def go() -> tuple[list[str], int | None]:
        got: list[str] = []
        async with connect(server.ws_url("%E2%82%AC" * 60)) as ws:
            try:
                while True:
                    got.append(str(await asyncio.wait_for(ws.recv(), 30)))
            except ConnectionClosed:
                return got, ws.close_code

    got, code = asyncio.run(go())
    assert code == 4404, (code, got)
    assert json.loads(got[0])["op"] == "error", got
    assert "Traceback" not in server.log_text(), server.log_text()[-2000:]


def test_a_client_message_over_the_limit_closes_the_socket_as_documented(server: Server) -> None:
    """A message up to the limit is read (a ping is answered); one byte more closes the socket
    with 1009 and no ``error`` (the WebSocket layer refuses it unread): docs/websocket.md says so."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    def ping(size: int) -> str:
        head = '{"op":"ping","nonce":"'
        return head + "x" * (size - len(head) - 2) + '"}'

    with server.client() as c:
        chat = new_chat(c)

    async def main() -> tuple[dict[str, Any], int | None, list[str]]:
        async with connect(server.ws_url(chat["id"]), max_size=None) as ws:
            for _ in ("hello", "live"):
                await asyncio.wait_for(ws.recv(), 30)
            await ws.send(ping(MAX_CLIENT_MESSAGE))
            pong = json.loads(await asyncio.wait_for(ws.recv(), 30))
            await ws.send(ping(MAX_CLIENT_MESSAGE + 1))
            after: list[str] = []
            try:
                while True:
                    after.append(str(await asyncio.wait_for(ws.recv(), 30)))
            except ConnectionClosed as closed:
                code = closed.rcvd.code if closed.rcvd is not None else None
            return pong, code, after

    pong, code, after = asyncio.run(main())
    assert pong["op"] == "pong" and len(pong["nonce"]) > 60_000
    assert (code, after) == (1009, [])
    docs = DOCS.read_text()
    assert f"{MAX_CLIENT_MESSAGE // 1024} KiB" in docs and "**1009**" in docs


@pytest.mark.parametrize("nonce", ["123456789012345678901234567890", '"cut emoji \\ud83d"',
                                   '["\\udc00", -99999999999999999999999, 1.5]'])
def test_a_ping_nonce_is_echoed_unchanged(nonce: str) -> None:
    # orjson read an integer past 64 bits as a float (the pong had 1.2345678901234568e+29) and
    # refused a lone surrogate escape ("\ud83d", valid JSON: a cut emoji) as invalid_json
    pong = json.loads(answer('{"op":"ping","nonce":' + nonce + "}", 5))
    assert pong == {"op": "pong", "seq": 5, "nonce": json.loads(nonce)}, pong
    assert isinstance(pong["nonce"], type(json.loads(nonce)))


def test_what_is_not_json_to_orjson_stays_refused() -> None:
    # the lenient reading takes what orjson would not only for big integers and lone surrogates
    for text in ('{"op":"ping","nonce":NaN}', '{"op":"ping","nonce":Infinity}',
                 '{"op":"ping","nonce":' + "[" * 5000 + "]" * 5000 + "}"):
        err = json.loads(answer(text, 5))
        assert err["op"] == "error" and err["code"] in ("invalid_json", "nonce_too_deep"), err
