"""Issue 12.3: sessions that restore whole — ``ConversationSession.load(path)`` alone resumes
the same way (agent, trust, force, headers, ...), env values and the API key never saved."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cursor_agent_api import AsyncConversationSession, ConversationSession, SessionError
from cursor_agent_api.testing import sim_binary

KEY = "sk-never-saved-0123456789"


def test_load_alone_resumes_the_same_way(sim, tmp_path, argvs, monkeypatch):
    config = sim(force_approve=True, approve_mcps=True, headers=["X-Team: infra"],
                 model="gpt-5", api_key=KEY, extra_args=["--api-key", KEY], timeout=77.0)
    config.env["CAA_SECRET_VALUE"] = "value-never-saved"
    path = tmp_path / "chat.json"
    with ConversationSession(config) as session:
        assert session.send("Remember that the deploy target is eu-west-1").success
        session.save(path)
    text = path.read_text()
    assert KEY not in text and "value-never-saved" not in text
    assert str(config.env["CURSOR_CONFIG_DIR"]) not in text  # names only
    saved = json.loads(text)
    assert saved["version"] == 2 and saved["config"]["trust"] is True
    assert "CAA_SECRET_VALUE" in saved["config"]["env_set"]
    assert "CURSOR_API_KEY" in saved["config"]["env_unset"]

    # the values are not in the file: without them, a clear error, not a silent new chat
    with pytest.raises(SessionError, match="CAA_SECRET_VALUE") as info:
        ConversationSession.load(path)
    assert "CURSOR_CONFIG_DIR" in str(info.value)

    monkeypatch.setenv("CURSOR_CONFIG_DIR", config.env["CURSOR_CONFIG_DIR"])
    monkeypatch.setenv("CAA_SECRET_VALUE", "from-the-environment")
    later = ConversationSession.load(path)  # alone
    with later:
        c = later.config
        assert (c.agent_binary, c.trust, c.force_approve, c.approve_mcps, c.headers, c.model,
                c.timeout) == (config.agent_binary, True, True, True, ["X-Team: infra"],
                               "gpt-5", 77.0)
        assert c.workspace == config.workspace and c.api_key is None
        assert c.env["CURSOR_API_KEY"] is None and c.env["CAA_SECRET_VALUE"] == "from-the-environment"
        r = later.send("What did I ask you to remember?")
    assert r.success and "eu-west-1" in r.result, r.error
    assert r.session_id == saved["chat_id"]
    last = argvs[-1]
    assert "--trust" in last and "--force" in last and "--approve-mcps" in last
    assert f"--resume={saved['chat_id']}" in last and "--header=X-Team: infra" in last
    assert KEY not in " ".join(last)


def test_env_values_can_be_passed_to_load(sim, tmp_path):
    config = sim()
    path = tmp_path / "chat.json"
    with ConversationSession(config) as session:
        session.send("Remember the number 42")
        session.save(path)
    later = AsyncConversationSession.load(path, env={"CURSOR_CONFIG_DIR":
                                                     config.env["CURSOR_CONFIG_DIR"]})
    assert later.config.trust and later.session_id == session.session_id
    import asyncio

    r = asyncio.run(later.send("What did I ask you to remember?"))
    assert r.success and "42" in r.result


def test_a_config_given_to_load_wins_but_workspace_and_model(sim, tmp_path):
    path = tmp_path / "chat.json"
    ConversationSession(sim(model="gpt-5"), session_id="8b72ae6d-ab42-4854-991e-6ecf580e66c2"
                        ).save(path)
    other = sim(trust=False, force_approve=True, model="auto", workspace=str(tmp_path))
    later = ConversationSession.load(path, other)
    assert later.config.force_approve and not later.config.trust
    assert later.config.model == "gpt-5" and later.config.workspace != str(tmp_path)


def test_version_1_files_are_still_read(tmp_path, monkeypatch):
    path = tmp_path / "old.json"
    path.write_text(json.dumps({
        "version": 1, "chat_id": "8b72ae6d-ab42-4854-991e-6ecf580e66c2", "workspace": "/w",
        "model": "gpt-5", "history": [{"prompt": "hi", "result": "hello", "success": True,
                                        "session_id": None}]}))
    session = ConversationSession.load(path)
    assert session.session_id == "8b72ae6d-ab42-4854-991e-6ecf580e66c2"
    assert session.config.model == "gpt-5" and session.config.workspace == "/w"
    assert [t.result for t in session.history] == ["hello"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"version": 2, "chat_id": None, "history": [], "config": {"trust": "yes"}}))
    with pytest.raises(SessionError, match="trust"):
        ConversationSession.load(bad)


def _readme_example() -> str:
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    return next(b for b in blocks if "ConversationSession.load" in b)


def test_readme_save_load_example_runs_on_the_simulator(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "agent").symlink_to(sim_binary())
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("CURSOR_AGENT_SIM_") and k != "CURSOR_API_KEY"}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
               CURSOR_CONFIG_DIR=str(tmp_path / "cfg"))
    proc = subprocess.run([sys.executable, "-c", _readme_example()], cwd=ws, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "eu-west-1" in proc.stdout
