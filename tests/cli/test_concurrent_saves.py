"""Two commands on one saved chat (a ``chat`` left open, a ``run --resume`` meanwhile): each
save adds its own turns to what the file holds, under a lock, so no turn is erased."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from pathlib import Path

from cursor_agent_api import ConversationSession
from cursor_agent_api.cli.saved_chats import SavedChats
from cursor_agent_api.sessions import SessionTurn

CLI = [sys.executable, "-m", "cursor_agent_api.cli"]
CHAT = "8b72ae6d-ab42-4854-991e-6ecf580e66c2"


def prompts(path: Path | str) -> list[str]:
    return [t["prompt"] for t in json.loads(Path(path).read_text())["history"]]


def test_a_chat_left_open_does_not_erase_a_turn_saved_meanwhile(cli_env: dict[str, str]) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=90,
                              cwd=cli_env["TEST_WS"], env=cli_env, check=False)

    assert cli("run", "--simulate", "--trust", "-o", "json", "first").returncode == 0
    (path,) = glob.glob(os.path.join(cli_env["CURSOR_AGENT_API_HOME"], "chats", "*.json"))
    chat = subprocess.Popen([*CLI, "chat", "--simulate", "--trust", "--resume", Path(path).stem],
                            cwd=cli_env["TEST_WS"], env=cli_env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert chat.stdout is not None and chat.stdin is not None
        seen = ""
        while "Ctrl-D leaves" not in seen:  # the chat has loaded the file and waits for a line
            line = chat.stdout.readline()
            assert line, chat.communicate(timeout=60)
            seen += line
        ran = cli("run", "--simulate", "--trust", "--resume", Path(path).stem, "-o", "json",
                  "from run")
        assert ran.returncode == 0, ran.stderr
        assert prompts(path) == ["first", "from run"]
        _out, err = chat.communicate("from chat\n", timeout=60)
        assert chat.returncode == 0, err
    finally:
        if chat.poll() is None:
            chat.kill()
            chat.wait()
    assert prompts(path) == ["first", "from run", "from chat"]


def session_with(*turns: str) -> ConversationSession:
    session = ConversationSession(session_id=CHAT)
    for n, prompt in enumerate(turns):
        session.history.append(SessionTurn(prompt, "ok", True, CHAT, timestamp=1000.0 + n))
    return session


def test_each_save_adds_only_the_turns_the_file_lacks(tmp_path: Path) -> None:
    saved = SavedChats(tmp_path / "chats")
    first = session_with("a")
    saved.save(first)
    mine = saved.load(CHAT, first.config)  # loaded: turn "a"
    theirs = saved.load(CHAT, first.config)
    theirs.history.append(SessionTurn("b", "ok", True, CHAT, timestamp=2000.0))
    saved.save(theirs)
    mine.history.append(SessionTurn("c", "ok", True, CHAT, timestamp=3000.0))
    saved.save(mine)
    assert prompts(saved.path(CHAT)) == ["a", "b", "c"]
    assert [t.prompt for t in mine.history] == ["a", "b", "c"]  # the session sees the file
    mine.history.append(SessionTurn("d", "ok", True, CHAT, timestamp=4000.0))
    saved.save(mine)  # saved again: nothing twice
    assert prompts(saved.path(CHAT)) == ["a", "b", "c", "d"]
    for s in (first, mine, theirs):
        s.close()


def test_a_turn_asked_twice_is_kept_twice(tmp_path: Path) -> None:
    saved = SavedChats(tmp_path / "chats")
    session = session_with("again", "again")  # the same prompt, two turns
    saved.save(session)
    saved.save(session)
    assert prompts(saved.path(CHAT)) == ["again", "again"]
    session.close()


def test_a_chat_removed_meanwhile_is_saved_whole(tmp_path: Path) -> None:
    saved = SavedChats(tmp_path / "chats")
    session = session_with("a", "b")
    saved.save(session)
    saved.remove(CHAT)
    session.history.append(SessionTurn("c", "ok", True, CHAT, timestamp=3000.0))
    saved.save(session)
    assert prompts(saved.path(CHAT)) == ["a", "b", "c"]
    session.close()
