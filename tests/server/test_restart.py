"""Crash and shutdown safety: stored events survive, runs are marked, no process is left."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from server_helpers import _state, alive, all_events, new_chat, poll, write_script

from cursor_agent_api.server.procs import (
    group_members,
    identity_alive,
    process_start_time,
    server_identity,
    stop_recorded_group,
)


def _running(c: Any, run_id: str) -> dict[str, Any] | None:
    run = c.get(f"/api/runs/{run_id}").json()
    return run if run["pid"] and run["last_seq"] and run["last_seq"] >= 5 else None


def test_server_killed_mid_run_then_restarted(make_server: Any, tmp_path: Path) -> None:
    script = write_script(tmp_path / "script.ndjson", 10_000)
    env = {
        "CURSOR_AGENT_SIM_SCRIPT": str(script),
        "CURSOR_AGENT_SIM_FAULT": "slow",
        "CURSOR_AGENT_SIM_DELAY": "0.02",
    }
    server = make_server(sim_env=env)
    with server.client() as c:
        chat = new_chat(c, stream_partial_output=True)
        run_id = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "count"}).json()["id"]
        pid = poll(lambda: _running(c, run_id))["pid"]
        before = all_events(c, chat["id"])
    assert alive(pid)
    server.kill()  # SIGKILL: no shutdown code runs; the owner guard stops the agent's group
    poll(lambda: not alive(pid), 30.0)  # issue 11.6: no agent outlives its server

    again = make_server(sim_env=env)
    assert not alive(pid), "restart must stop the leftover process group"
    with again.client() as c:
        run = c.get(f"/api/runs/{run_id}").json()
        assert run["status"] == "interrupted"
        assert "server stopped" in run["error"]
        after = all_events(c, chat["id"])
        assert after[: len(before)] == before, "events stored before the crash are intact"
        seqs = [e["seq"] for e in after]
        assert seqs == list(range(1, len(seqs) + 1))
        last = after[-1]
        assert (last["type"], last["subtype"]) == ("run", "interrupted")
        assert c.get(f"/api/chats/{chat['id']}").json()["status"] == "interrupted"
        # The chat is usable again.
        r = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "count"})
        assert r.status_code == 202


def test_graceful_shutdown_stops_and_marks_every_run(make_server: Any) -> None:
    server = make_server(sim_env={"CURSOR_AGENT_SIM_FAULT": "silence"}, args=["--max-runs", "2"])
    with server.client() as c:
        chats = [new_chat(c) for _ in range(3)]
        runs = [c.post(f"/api/chats/{ch['id']}/runs", json={"prompt": "hi"}).json() for ch in chats]

        def pid_of(run_id: str) -> int:
            return int(poll(lambda: c.get(f"/api/runs/{run_id}").json()["pid"]))

        pids = [pid_of(r["id"]) for r in runs[:2]]
        assert c.get(f"/api/runs/{runs[2]['id']}").json()["status"] == "queued"
    assert server.stop() in (0, -signal.SIGTERM)  # uvicorn re-raises the signal it caught
    assert not any(alive(p) for p in pids)
    again = make_server()
    with again.client() as c:
        statuses = [c.get(f"/api/runs/{r['id']}").json() for r in runs]
        assert [s["status"] for s in statuses] == ["interrupted"] * 3
        assert all("shut down" in s["error"] for s in statuses)


def test_a_hang_up_shuts_down_as_sigterm_does(make_server: Any) -> None:
    # closing the terminal or the SSH session (SIGHUP) killed the server at once: its runs
    # stayed "running" until a next start marked them ("server stopped"); it now shuts down
    # as on SIGTERM, stopping and marking them itself
    server = make_server(sim_env={"CURSOR_AGENT_SIM_FAULT": "silence"})
    with server.client() as c:
        run = c.post(f"/api/chats/{new_chat(c)['id']}/runs", json={"prompt": "hi"}).json()
        pid = int(poll(lambda: c.get(f"/api/runs/{run['id']}").json()["pid"]))
    assert server.proc is not None
    server.proc.send_signal(signal.SIGHUP)
    assert server.proc.wait(60) in (0, -signal.SIGHUP)  # uvicorn re-raises the signal it caught
    poll(lambda: not alive(pid), 30)
    again = make_server()
    with again.client() as c:
        marked = c.get(f"/api/runs/{run['id']}").json()
        assert marked["status"] == "interrupted" and "shut down" in marked["error"], marked


def test_ignore_sigterm_agent_is_killed_on_shutdown(make_server: Any) -> None:
    server = make_server(sim_env={"CURSOR_AGENT_SIM_FAULT": "ignore-sigterm"})
    with server.client() as c:
        chat = new_chat(c)
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hi"}).json()
        pid = poll(lambda: c.get(f"/api/runs/{run['id']}").json()["pid"])
    assert server.stop() in (0, -signal.SIGTERM)  # uvicorn re-raises the signal it caught
    poll(lambda: not alive(pid), 30)


def test_a_reused_pid_is_never_signalled() -> None:
    """A process in the recorded group but started before the recorded leader is not ours."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    try:
        start = process_start_time(proc.pid)
        assert start is not None
        assert group_members(proc.pid, start) == [proc.pid]
        # Recorded start time later than the real one: someone else's process.
        assert asyncio.run(stop_recorded_group(proc.pid, start + 1)) == 0
        assert proc.poll() is None
        # Unknown start time: never signalled either.
        assert asyncio.run(stop_recorded_group(proc.pid, None)) == 0
        assert proc.poll() is None
        # The right start time: stopped.
        assert asyncio.run(stop_recorded_group(proc.pid, start)) == 1
        assert proc.wait(30) == -signal.SIGTERM
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()


def test_a_zombie_server_is_dead() -> None:
    """A server killed but not yet reaped by its parent (state Z) owns nothing any more."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        start = process_start_time(proc.pid)
        host = server_identity().split(":")[0]
        identity = f"{host}:{proc.pid}:{start}"
        assert identity_alive(identity) is True
        os.kill(proc.pid, signal.SIGKILL)  # not waited for: a zombie until proc.wait()
        poll(lambda: _state(proc.pid) == "Z", 30)
        assert identity_alive(identity) is False
    finally:
        proc.kill()
        proc.wait()


def test_restart_while_the_old_server_is_a_zombie(make_server: Any) -> None:
    """Killed and restarted before its parent reaped it: the run is interrupted, the chat usable."""
    # A PYTHON* variable the test launcher lacks: the server is exec'd as this process's
    # child, so after SIGKILL it stays a zombie until this test waits for it.
    first = make_server(sim_env={"CURSOR_AGENT_SIM_FAULT": "silence"},
                        server_env={"PYTHONNOUSERSITE": "1"})
    assert isinstance(first.proc, subprocess.Popen)
    with first.client() as c:
        chat = new_chat(c)
        run_id = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hi"}).json()["id"]
        pid = poll(lambda: c.get(f"/api/runs/{run_id}").json()["pid"])
    first.proc.send_signal(signal.SIGKILL)
    try:
        poll(lambda: _state(first.proc.pid) == "Z", 30)
        again = make_server()
        with again.client() as c:
            assert c.get(f"/api/runs/{run_id}").json()["status"] == "interrupted"
            r = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hi"})
            assert r.status_code == 202, r.text
        poll(lambda: not alive(pid), 30)
    finally:
        first.kill()


def test_a_second_server_leaves_a_live_servers_runs_alone(make_server: Any) -> None:
    first = make_server(sim_env={"CURSOR_AGENT_SIM_FAULT": "silence"})
    with first.client() as c:
        chat = new_chat(c)
        run_id = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hi"}).json()["id"]
        pid = poll(lambda: c.get(f"/api/runs/{run_id}").json()["pid"])
    second = make_server()  # same database; its start-up recovery runs now
    with second.client() as c2:
        assert c2.get(f"/api/runs/{run_id}").json()["status"] == "running"
    assert alive(pid)
    second.stop()
    with first.client() as c:
        assert c.post(f"/api/runs/{run_id}/cancel").json()["status"] == "cancelled"
    poll(lambda: not alive(pid), 30)


def test_shutdown_with_a_subscriber_attached(make_server: Any) -> None:
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    server = make_server(sim_env={"CURSOR_AGENT_SIM_FAULT": "silence"})
    with server.client() as c:
        chat = new_chat(c)
        run_id = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hi"}).json()["id"]
        pid = poll(lambda: c.get(f"/api/runs/{run_id}").json()["pid"])

    async def watch_then_stop() -> int | None:
        async with connect(server.ws_url(chat["id"])) as ws:
            while True:  # up to "live"
                if b'"op":"live"' in (await ws.recv()).encode():
                    break
            code = await asyncio.to_thread(server.stop)
            try:
                while True:
                    await ws.recv()
            except ConnectionClosed:
                pass
            return code

    assert asyncio.run(asyncio.wait_for(watch_then_stop(), 90)) in (0, -signal.SIGTERM)
    assert not alive(pid)
    again = make_server()
    with again.client() as c:
        assert c.get(f"/api/runs/{run_id}").json()["status"] == "interrupted"
