"""``sessions list`` and ``sessions show`` say each saved chat's transport (print or ACP):
``--resume`` depends on it (an ACP chat resumes over ACP; ``--acp`` on a print chat is
refused), so the user sees it before resuming. A file that records none (version 1) shows as
print."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

Run = Callable[..., subprocess.CompletedProcess[str]]

ACP = "aaaaaaaa-0000-4000-8000-000000000001"
PRINT = "bbbbbbbb-0000-4000-8000-000000000002"
OLD = "cccccccc-0000-4000-8000-000000000003"  # a file of version 1: no transport recorded


@pytest.fixture
def home(cli_env: dict[str, str]) -> Path:
    from cursor_agent_api import AgentConfig, ConversationSession
    from cursor_agent_api.sessions import SessionTurn

    path = Path(cli_env["CURSOR_AGENT_API_HOME"])
    (path / "chats").mkdir(parents=True)
    for chat_id, transport in ((ACP, "acp"), (PRINT, "print"), (OLD, "print")):
        session = ConversationSession(AgentConfig(transport=transport), session_id=chat_id)
        try:
            session.history.append(SessionTurn("hello", "hi", True, chat_id))
            session.save(path / "chats" / f"{chat_id}.json")
        finally:
            session.close()
    old = path / "chats" / f"{OLD}.json"
    data = orjson.loads(old.read_bytes())
    data["version"] = 1
    del data["config"]
    old.write_bytes(orjson.dumps(data))
    return path


def test_list_has_a_transport_column(cli: Run, home: Path) -> None:
    proc = cli("sessions", "list")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "transport" in lines[0], proc.stdout
    rows = {line.split()[0]: line for line in lines[1:] if line.strip()}
    assert re.search(r"\bacp\b", rows[ACP]), proc.stdout
    for chat_id in (PRINT, OLD):
        assert re.search(r"\bprint\b", rows[chat_id]) and "acp" not in rows[chat_id], proc.stdout


def test_list_json_has_the_transport(cli: Run, home: Path) -> None:
    proc = cli("sessions", "list", "--json")
    assert proc.returncode == 0, proc.stderr
    got = {o["chat_id"]: o["transport"] for o in map(orjson.loads, proc.stdout.splitlines())}
    assert got == {ACP: "acp", PRINT: "print", OLD: "print"}


@pytest.mark.parametrize(("chat_id", "transport"), [(ACP, "acp"), (PRINT, "print"),
                                                     (OLD, "print")])
def test_show_has_a_transport_line(cli: Run, home: Path, chat_id: str, transport: str) -> None:
    proc = cli("sessions", "show", chat_id)
    assert proc.returncode == 0, proc.stderr
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith("transport:")]
    assert line.split()[1] == transport, proc.stdout
