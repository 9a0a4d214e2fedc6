"""A client's ``agent acp`` holds a bounded number of idle sessions: one-off queries do not
grow it; a session it let go is ``session/load``ed by the next turn on it, its earlier turns
still there. Against ``cursor-agent-sim acp``."""

from __future__ import annotations

from acp_sim_harness import Sim

from cursor_agent_api import CursorAgentClient


def test_one_off_queries_keep_only_the_latest_idle_sessions(sim: Sim, spawned: list[int]) -> None:
    with CursorAgentClient(sim.config(permission_mode="allow")) as client:
        first = client.query("Remember the number 42")
        assert first.success, first.error
        (transport,) = client._acp.transports.values()
        transport.max_idle_sessions = 2
        ids = [first.session_id] + [client.query("what is 6 * 7").session_id for _ in range(4)]
        assert len(set(ids)) == 5
        assert list(transport._sessions) == ids[-2:]  # (every session was kept)
        assert set(transport.session_setup) == set(ids[-2:])
        assert client.session_setup(ids[0]) == {}
        again = client.query("What number did I ask you to remember?", resume=ids[0])
        assert again.success, again.error
        assert again.session_id == ids[0]
        assert not [e for e in again.events if e.data.get("type") == "acp:context_reset"]
        assert list(transport._sessions) == [ids[-1], ids[0]]
        assert client.session_setup(ids[0])["modes"]
    loads = [f for f in sim.client_frames() if f.get("method") == "session/load"]
    assert [f["params"]["sessionId"] for f in loads] == [ids[0]]
