"""A worker that drains (SIGTERM or Ctrl-C, ``--shutdown-grace``) is still the owner of its
runs: it keeps sending heartbeats and taking cancels, so that no API server declares it
lost (which would free the chat while its agent runs); a second signal stops its runs at
once; and a worker whose run was ended elsewhere (declared lost) stops its agent. One API
server and workers of each test's own."""

from __future__ import annotations

import signal
from typing import Any

import httpx
import pytest
from cluster import Cluster, pg_execute
from server_helpers import alive, all_events, new_chat, poll, wait_run

DRAINING = "stopping:"
"""What a worker logs when a first signal starts its drain."""


def _post(c: httpx.Client, chat_id: str, prompt: str) -> httpx.Response:
    return c.post(f"/api/chats/{chat_id}/runs", json={"prompt": prompt})


def _running(c: httpx.Client, run_id: str) -> dict[str, Any] | None:
    run = c.get(f"/api/runs/{run_id}").json()
    return run if run["status"] == "running" and run["pid"] else None


def _start(c: httpx.Client, chat_id: str, prompt: str) -> dict[str, Any]:
    r = _post(c, chat_id, prompt)
    assert r.status_code == 202, r.text
    run = poll(lambda: _running(c, r.json()["id"]), 60)
    return dict(run)


def _heartbeat(db_url: str, run_id: str) -> Any:
    """The last heartbeat of the worker that runs ``run_id``, as the API servers' sweep sees
    it; ``None`` once that worker is no longer registered."""
    rows = pg_execute(db_url, "SELECT w.last_heartbeat FROM procrastinate_workers w "
                              "JOIN runs r ON r.worker_id = w.id WHERE r.id = $1", run_id)
    return rows[0][0] if rows else None


def test_a_draining_worker_keeps_its_run_and_its_chat_until_the_run_ends(one_server: Cluster) -> None:
    """Its heartbeats go on while it drains: seen in the database, where the sweep reads
    them (not by waiting for the sweep: a loaded machine may delay a live worker's heartbeats
    for seconds, so the API servers' --stalled-after is a minute, longer than this test)."""
    (server,) = one_server.servers
    w1 = one_server.worker("d1", "--shutdown-grace", "60")
    command, gate = one_server.gate("drain")  # the run goes on until the test says
    with server.client() as c:
        chat = new_chat(c, force=True)
        run = _start(c, chat["id"], f"run `{command}`")
        w2 = one_server.worker("d2")  # could take a second run of the chat, were the chat freed
        w1.proc.send_signal(signal.SIGTERM)
        poll(lambda: DRAINING in w1.log_text(), 30)
        # Three heartbeats after the drain began (Procrastinate's own stop with its stop: one
        # of them may have been under way); the chat takes no other prompt meanwhile.
        beats = [_heartbeat(one_server.db_url, run["id"])]

        def a_later_heartbeat() -> Any:
            beat = _heartbeat(one_server.db_url, run["id"])
            return beat if beat is not None and beat > beats[-1] else None

        while len(beats) < 4:
            r = _post(c, chat["id"], "reply with exactly: too early")
            assert r.status_code == 409, (r.status_code, r.text, one_server.logs())
            beats.append(poll(a_later_heartbeat, 20))
        gate.touch()
        done = wait_run(c, run["id"], 60)
        assert done["status"] == "succeeded", (done, one_server.logs())
        assert done["error"] is None
        kinds = [(e["type"], e["subtype"]) for e in all_events(c, chat["id"])]
        assert ("worker", "lost") not in kinds, kinds
        assert [sub for kind, sub in kinds if kind == "run"] == ["queued", "running", "succeeded"]
        poll(lambda: w1.proc.poll() is not None, 30)
        assert w1.proc.returncode == -signal.SIGTERM, w1.log_text()
    w2.stop()


def test_cancels_reach_a_draining_worker(one_server: Cluster) -> None:
    """Each cancel, not only the first (the worker's poll of cancels once stopping must not
    end at the first: a run not marked at once is no error there)."""
    (server,) = one_server.servers
    w = one_server.worker("d3", "--shutdown-grace", "120")  # two runs at once (cluster.py)
    with server.client() as c:
        runs = [_start(c, new_chat(c, force=True)["id"], "run `sleep 60`") for _ in range(2)]
        w.proc.send_signal(signal.SIGTERM)
        poll(lambda: DRAINING in w.log_text(), 30)
        for run in runs:
            r = c.post(f"/api/runs/{run['id']}/cancel")
            assert r.status_code == 200, (r.text, one_server.logs())
            assert r.json()["status"] == "cancelled", (r.json(), one_server.logs())
            poll(lambda run=run: not alive(run["pid"]), 30)
        poll(lambda: w.proc.poll() is not None, 60)  # nothing left to wait for: it exits
        assert w.proc.returncode == -signal.SIGTERM, w.log_text()
        assert [wait_run(c, run["id"])["status"] for run in runs] == ["cancelled"] * 2


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_second_signal_stops_a_draining_worker_at_once(one_server: Cluster, signum: int) -> None:
    (server,) = one_server.servers
    name = f"d-twice-{signum}"
    w = one_server.worker(name, "--shutdown-grace", "3600")
    with server.client() as c:
        chat = new_chat(c, force=True)
        run = _start(c, chat["id"], "run `sleep 600`")
        w.proc.send_signal(signum)
        poll(lambda: DRAINING in w.log_text(), 30)
        assert alive(run["pid"])
        w.proc.send_signal(signum)
        poll(lambda: w.proc.poll() is not None, 60)  # not the grace's hour
        assert w.proc.returncode == -signum, w.log_text()
        done = wait_run(c, run["id"], 30)
        assert done["status"] == "interrupted", (done, one_server.logs())
        assert "worker shut down" in done["error"]
        assert not alive(run["pid"])
        kinds = [(e["type"], e["subtype"]) for e in all_events(c, chat["id"])]
        assert ("worker", "lost") not in kinds, kinds


def test_a_worker_stops_the_agent_of_a_run_ended_elsewhere(one_server: Cluster) -> None:
    (server,) = one_server.servers
    w = one_server.worker("d-cut")
    with server.client() as c:
        chat = new_chat(c, force=True)
        run = _start(c, chat["id"], "run `sleep 600`")
        # As an API server's sweep does when this worker's heartbeats did not reach the
        # database for --stalled-after seconds: the run is over, the chat is free.
        pg_execute(
            one_server.db_url,
            "UPDATE runs SET status = 'interrupted', error = 'worker d-cut was lost' WHERE id = $1",
            run["id"],
        )
        poll(lambda: not alive(run["pid"]), 60)  # no second agent on the chat beside another
        # said by the heartbeat's check, or by the first batch the store refused (whichever
        # came first: the agent may write nothing while its command sleeps)
        poll(lambda: "marked interrupted elsewhere" in w.log_text()
             or "is already interrupted (ended by another process)" in w.log_text(), 30)
        after = c.get(f"/api/runs/{run['id']}").json()
        assert (after["status"], after["error"]) == ("interrupted", "worker d-cut was lost")
        kinds = [(e["type"], e["subtype"]) for e in all_events(c, chat["id"])]
        assert ("run", "cancelled") not in kinds, "the first end stays the only one"
        nxt = _post(c, chat["id"], "reply with exactly: still working")  # the worker goes on
        assert nxt.status_code == 202, nxt.text
        assert wait_run(c, nxt.json()["id"])["status"] == "succeeded"
    w.stop()


def test_sighup_drains_a_worker_as_sigterm_does(one_server: Cluster) -> None:
    """Its terminal or SSH session closed: the worker stops as on SIGTERM (it died at once,
    without its exit line, its runs left to the API servers' sweep), as ``serve`` does."""
    w = one_server.worker("d4", "--shutdown-grace", "60")
    (server,) = one_server.servers
    command, gate = one_server.gate("sighup")  # the run goes on until the drain began
    with server.client() as c:
        run = _start(c, new_chat(c, force=True)["id"], f"run `{command}`")
    w.proc.send_signal(signal.SIGHUP)
    poll(lambda: DRAINING in w.log_text(), 30)
    gate.touch()
    poll(lambda: w.proc.poll() is not None, 60)
    assert w.proc.returncode == -signal.SIGHUP, w.log_text()
    with server.client() as c:
        assert wait_run(c, run["id"], 30)["status"] == "succeeded", one_server.logs()
