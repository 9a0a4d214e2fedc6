"""Review 60: a turn whose session could not be loaded again on a new process (``_reopen``:
``session/load`` answered "unloadable", so a new session) is named by two session states: the
old session's (an older process's) and the new one's. A ``cursor/*`` request (no
``sessionId``) counted the turn as running twice, so one whose ``toolCallId`` the turn had not
seen went to no turn (the between-turns answers: not the turn's ``on_question``, no events);
a noise line was delivered to it twice. Only the current process's sessions count, each turn
once."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from cursor_agent_api import AgentConfig
from cursor_agent_api.errors import AcpRequestError
from cursor_agent_api.protocol.acp_codec import RpcNoise
from cursor_agent_api.runtime import acp_transport as T


class _Turn(SimpleNamespace):
    """A running turn as the transport sees it (hashable, as an ``AcpTurn`` is)."""

    done = False
    __hash__ = object.__hash__


OLD = "11111111-1111-4111-8111-111111111111"
NEW = "22222222-2222-4222-8222-222222222222"


def test_a_cursor_request_reaches_the_only_running_turn_after_an_unloadable_reload() -> None:
    async def main() -> Any:
        tr = T.AcpTransport(AgentConfig())
        turn = _Turn(waiting_for=None,
                     mapper=SimpleNamespace(knows=lambda cid: False,
                                            note=lambda *a, **k: SimpleNamespace(data={})))

        async def connect(*a: Any, **k: Any) -> None:
            return None

        async def load(*a: Any, **k: Any) -> Any:
            raise AcpRequestError("no such session", method="session/load", code=T.INVALID_PARAMS)

        async def new_session(config: Any, *, bounded: bool = True) -> str:
            tr._remember(NEW, "/w", {}, ())
            return NEW

        tr.connect = connect  # type: ignore[method-assign]
        tr._load = load  # type: ignore[method-assign]
        tr.new_session = new_session  # type: ignore[method-assign]
        # generation 1: the turn opened s-old; then a cancelled turn's fallback stopped the
        # process, and a new one (generation 2) runs: _reopen calls open_session again
        tr._generation = 1
        tr._remember(OLD, "/w", {}, ())
        tr._sessions[OLD].turn = turn
        tr._generation = 2
        notes: list[Any] = []
        sid = await tr.open_session(AgentConfig(resume=OLD), turn, notes)  # type: ignore[arg-type]
        assert sid == NEW
        return tr._turn_for({"toolCallId": "call-q", "title": "Choose"}), turn

    got, turn = asyncio.run(main())
    assert got is turn, f"cursor/* request of the only running turn routed to {got!r}"


def test_a_noise_line_is_the_turns_once_after_an_unloadable_reload() -> None:
    """The turn named by its old session's state (older process) and its new one's gets a
    line of stdout noise once, not once per state."""
    delivered: list[Any] = []
    turn = _Turn(deliver=delivered.extend)
    tr = T.AcpTransport(AgentConfig())
    tr._generation = 1
    tr._remember(OLD, "/w", {}, ())
    tr._sessions[OLD].turn = turn
    tr._generation = 2
    tr._remember(NEW, "/w", {}, ())
    tr._sessions[NEW].turn = turn
    tr._on_noise(RpcNoise(b"a banner", "not JSON"))
    assert [e.data.get("reason") for e in delivered] == ["not JSON"]
