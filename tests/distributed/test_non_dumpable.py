"""A worker's agent cannot read the worker's environment, the database URL and its password
(``server/non_dumpable.py``; Linux)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import launcher
import pytest
from cluster import fresh_cluster
from proc_probe import assert_environ_refused, exec_with_secret_in_env, read_environ_prompt
from server_helpers import all_events, new_chat, wait_run

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")


def test_the_agent_cannot_read_the_workers_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with fresh_cluster(tmp_path) as c:
        server = c.server()
        monkeypatch.setattr(launcher, "popen", exec_with_secret_in_env(
            "--database-url", "CURSOR_AGENT_API_DATABASE_URL"))
        worker = c.worker("w1")
        assert isinstance(worker.proc, subprocess.Popen)
        pid = worker.proc.pid
        with server.client() as client:
            chat = new_chat(client, force=True)
            run = client.post(f"/api/chats/{chat['id']}/runs",
                              json={"prompt": read_environ_prompt(pid)})
            assert run.status_code == 202, run.text
            assert wait_run(client, run.json()["id"])["status"] == "succeeded"
            text = repr(all_events(client, chat["id"]))
        assert_environ_refused(text, pid, c.db_url)
