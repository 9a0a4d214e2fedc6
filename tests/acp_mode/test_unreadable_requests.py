"""An agent request the codec cannot decode (nested deeper than its bound, a line over
``max_line_bytes``) whose ``id`` can still be read is answered at once with a JSON-RPC error,
so the agent moves on, and the turn keeps a RAW event saying so (audit 13: it was dropped as
noise and never answered; the agent waited for ever and ``permission_timeout`` never started)."""

from __future__ import annotations

from typing import Any

import pytest
from acp_fake import FakeAgent

from cursor_agent_api import CursorAgentClient, EventType
from cursor_agent_api.permissions import Deny
from cursor_agent_api.protocol.acp_codec import AcpDecoder, RpcNoise


@pytest.mark.parametrize(("prompt", "fields", "code"), [
    ("unreadable deep", {}, -32600),
    ("unreadable 20000", {"max_line_bytes": 4096}, -32700),
])
def test_an_unreadable_request_is_answered_with_an_error(
        fake: FakeAgent, prompt: str, fields: dict[str, Any], code: int) -> None:
    config = fake.config(can_use_tool=lambda request: Deny("no"), permission_timeout=2, **fields)
    with CursorAgentClient(config) as client:
        stream = client.query_stream(prompt)
        try:
            result = stream.wait(timeout=60)  # generous: unanswered, the turn never ends
        except TimeoutError:
            stream.cancel()
            stream.wait()
            pytest.fail("the agent's request was never answered: the turn did not end")
    assert result.success and result.result.endswith(f"answered {code}")
    raws = [e for e in result.events if e.type is EventType.RAW]
    assert len(raws) == 1 and "session/request_permission" in raws[0].data["reason"]
    assert f"answered with error {code}" in raws[0].data["reason"]


def test_the_id_of_a_line_too_long_is_read_from_its_head_only() -> None:
    # the agent writes "jsonrpc", "id", "method" before "params": they are in the line's head
    head = b'{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"x":"'
    decoder = AcpDecoder(max_line_bytes=200)
    [noise] = decoder.feed(head + b"y" * 1000 + b'"}}\n')
    assert isinstance(noise, RpcNoise)
    assert (noise.request_id, noise.method) == (7, "session/request_permission")
    # an id written after the huge params is past what is kept: it cannot be read
    [late] = decoder.feed(b'{"jsonrpc":"2.0","params":{"x":"' + b"y" * 1000
                          + b'"},"id":8,"method":"m"}\n')
    assert isinstance(late, RpcNoise) and late.request_id is None
    # a notification (no id) or a response is not a request: nothing to answer
    [note] = decoder.feed(b'{"jsonrpc":"2.0","method":"session/update","params":{"x":"'
                          + b"y" * 1000 + b'"}}\n')
    assert isinstance(note, RpcNoise) and note.request_id is None
    # a string inside a nested value that looks like an id is not the top level's
    [nested] = decoder.feed(b'{"jsonrpc":"2.0","params":{"id":9,"method":"m","x":"'
                            + b"y" * 1000 + b'"}}\n')
    assert isinstance(nested, RpcNoise) and nested.request_id is None
