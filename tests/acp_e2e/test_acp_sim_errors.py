"""The simulator's refusals, as the client reports them: an invalid API key is an
``AuthenticationError`` saying so (ACP.md §2; review of ACP facts, 2026-11-24, finding 7)."""

from __future__ import annotations

from acp_sim_harness import Sim

from cursor_agent_api import CursorAgentClient
from cursor_agent_api.errors import AuthenticationError


def test_an_invalid_api_key_is_an_authentication_error(sim: Sim) -> None:
    config = sim.config(api_key="invalid-key-123", env={"CURSOR_API_KEY": None})
    with CursorAgentClient(config) as client:
        result = client.query("say hi")
    assert isinstance(result.exception, AuthenticationError), result.error
    assert "invalid API key" in (result.error or "") and "mode and model ids" not in (result.error or "")
