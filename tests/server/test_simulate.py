"""``serve --simulate``: the bundled simulator, labelled as such for the page."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from server_helpers import SERVE, alive, new_chat, poll, wait_run


def test_simulate_runs_the_bundled_simulator(tmp_path: Path, db_url: str) -> None:
    root = tmp_path / "root"
    (root / "project").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CURSOR_AGENT_API_")}
    env["XDG_DATA_HOME"] = str(tmp_path / "data")  # the simulator's chats stay in tmp
    proc = subprocess.Popen(
        [*SERVE, "--simulate", "--port", "0", "--database-url", db_url],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        text=True,
    )
    pids: list[int] = []
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()
        assert "(simulated agents)" in banner
        open_url = proc.stdout.readline().strip().split("Open: ", 1)[1]
        base, code = open_url.split("/?code=")
        assert len(code) >= 32, "a one-time code of at least 128 bits"
        # (stdout a pipe: the line after Open: says how long the link works)
        token_line = next(x for x in iter(proc.stdout.readline, "") if x.startswith("Token: "))
        token = token_line.strip().split("Token: ", 1)[1].split()[0]
        assert len(token) >= 32, "a random token of at least 128 bits"
        import httpx

        with httpx.Client(base_url=base, headers={"Authorization": f"token {token}"}, timeout=60) as c:
            health = c.get("/api/health").json()
            assert health["simulate"] is True
            assert c.get("/api/config").json()["roots"] == [str(root.resolve())]
            chat = new_chat(c, "project")
            run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "what is 6 * 7"}).json()
            pids.append(poll(lambda: c.get(f"/api/runs/{run['id']}").json()["pid"]))
            final = wait_run(c, run["id"])
            assert final["status"] == "succeeded" and "42" in final["result"]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        if proc.stdout is not None:
            proc.stdout.close()
    assert not any(alive(p) for p in pids)
