"""A ``@tool`` called in a plain ``client.query`` turn is no callback of a session's turn
(review 59): a sync ``ConversationSession`` whose first turn started the client's tool
server left its mark in the server's tasks for the client's life, so every later tool call
counted as "a callback of this session's turn" and could not ``send()`` on it (and the
server held the session)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp_sim_harness import make_sim

from cursor_agent_api import ConversationSession, CursorAgentClient
from cursor_agent_api.tools import tool


def test_a_tool_call_after_the_sessions_turn_may_send_on_it(tmp_path: Path) -> None:
    sim = make_sim(tmp_path)
    seen: list[object] = []
    holder: list[ConversationSession] = []

    @tool
    def lookup_order(order_id: str) -> dict[str, Any]:
        """Look up an order by its id."""
        try:
            holder[0]._not_from_own_turn()  # what send() checks first
            seen.append("send allowed")
        except Exception as exc:  # (what the check raised is the finding)
            seen.append(exc)
        return {"id": order_id, "status": "shipped"}

    with CursorAgentClient(sim.config(), tools=[lookup_order]) as client:
        session = ConversationSession(client)
        holder.append(session)
        assert session.send("hello").success  # starts the tool server, in the session's turn
        result = client.query('lookup_order {"order_id": "A1"}')  # no session's turn
        assert result.success, result.error
    assert seen == ["send allowed"]
