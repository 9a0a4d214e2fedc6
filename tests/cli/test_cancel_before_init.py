"""A resumed chat's turn stopped (SIGTERM, Ctrl-C) before the agent's first event still says
its chat id and how to continue it, as README promises ("the turn saved, its chat id said"):
the id came from the agent's ``init`` event only, and a turn stopped before it (a slow start)
said none although the chat was known all along (audit 12). The signal is sent from a trace
hook as the turn reaches the point under test: nothing is timed."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_api.cli.console import make_console
from cursor_agent_api.cli.saved_chats import SavedChats
from cursor_agent_api.cli.turns import Recorder, run_turn
from cursor_agent_api.cli.views import make_view
from cursor_agent_api.client import CursorAgentClient, StreamingResponse
from cursor_agent_api.sessions import ConversationSession
from cursor_agent_api.signal_exit import SignalExit


@pytest.fixture
def chat_id(make_cursor_sim_config: Any, tmp_path: Path) -> str:
    with ConversationSession(make_cursor_sim_config()) as session:
        assert session.send("remember the codeword heron").success
        assert session.session_id is not None
        SavedChats(tmp_path / "chats").save(session)
        return session.session_id


@pytest.mark.parametrize("where", ["starting", "before init"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_resumed_chat_stopped_before_the_agents_first_event_says_its_id(
        make_cursor_sim_config: Any, tmp_path: Path, chat_id: str, where: str, sig: int,
        capsys: pytest.CaptureFixture[str]) -> None:
    # "starting": as send_stream() starts the agent; "before init": the agent runs (its
    # start slowed by a minute) and the command waits for its first event
    point = (CursorAgentClient.query_stream if where == "starting"
             else StreamingResponse.with_changes).__code__
    sent: list[bool] = []

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if event == "call" and frame.f_code is point and not sent:
            sent.append(True)
            os.kill(os.getpid(), sig)
        return None

    config = make_cursor_sim_config("slow-start", delay=60, trust=True)
    saved = SavedChats(tmp_path / "chats")
    with ConversationSession(config, session_id=chat_id) as session:
        view = make_view("text", make_console(), err=make_console(stderr=True))
        sys.settrace(tracer)
        try:
            outcome = run_turn(session, "what did I ask you to remember?", view, Recorder(None),
                               saved=saved, simulated=True)
        except SignalExit as exc:
            assert exc.signum == sig == signal.SIGTERM
        else:
            assert outcome.interrupted and sig == signal.SIGINT
        finally:
            sys.settrace(None)
    assert sent
    shown = capsys.readouterr()
    said = shown.out + shown.err
    assert f"chat {chat_id} · continue: cursor-agent-api chat --resume {chat_id}" in said, said
