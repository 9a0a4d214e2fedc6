"""``session/cancel`` for a prompt that waits behind another session's turn (ACP.md §8: the
pending prompt answers ``cancelled`` at once; it never runs)."""

from __future__ import annotations

from pathlib import Path

from .acp_peer import Peer
from .conftest import Sim


def test_a_cancel_answers_a_prompt_queued_behind_another_sessions_turn(sim: Sim, ws: Path) -> None:
    peer = Peer.start(sim)
    peer.init()
    a, b = peer.new_session(ws), peer.new_session(ws)
    ra = peer.request("session/prompt", {"sessionId": a, "prompt": [{"type": "text", "text": "run `ls`"}]})
    ask = peer.until(ra, stop_on="session/request_permission")  # A's turn waits on the client
    rb = peer.request("session/prompt", {"sessionId": b, "prompt": [{"type": "text", "text": "say hi"}]})
    peer.notify("session/cancel", {"sessionId": b})
    # B's answer comes while A still waits for its permission answer
    assert peer.until(rb) == {"jsonrpc": "2.0", "id": rb, "result": {"stopReason": "cancelled"}}
    assert not peer.updates(b)[1:]  # nothing of B's turn was streamed (only the commands update)
    peer.answer(ask, {"result": {"outcome": {"outcome": "selected", "optionId": "reject-once"}}})
    assert peer.until(ra)["result"] == {"stopReason": "end_turn"}
    # B never ran: its prompt is not in its history, and B takes the next prompt as usual
    after = peer.request("session/prompt", {"sessionId": b, "prompt": [{"type": "text", "text": "say hi"}]})
    assert peer.until(after)["result"] == {"stopReason": "end_turn"}
    assert [f for f in peer.frames if f.get("id") == rb and "method" not in f] == [
        {"jsonrpc": "2.0", "id": rb, "result": {"stopReason": "cancelled"}}]  # answered once
    peer.close()
