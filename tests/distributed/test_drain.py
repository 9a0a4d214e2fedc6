"""A worker that drains (SIGTERM or Ctrl-C, ``--shutdown-grace``) is still the owner of its
runs: it keeps sending heartbeats and taking cancels, so that no API server declares it
lost (which would free the chat while its agent runs); a second signal stops its runs at
once; and a worker whose run was ended elsewhere (declared lost) stops its agent. One API
server (``--stalled-after 3``) and workers of each test's own."""

from __future__ import annotations

import signal
import time
from typing import Any

import httpx
import pytest
from cluster import STALLED_AFTER, Cluster, pg_execute
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


def test_a_draining_worker_keeps_its_run_and_its_chat_until_the_run_ends(one_server: Cluster) -> None:
    (server,) = one_server.servers
    w1 = one_server.worker("d1", "--shutdown-grace", "60")
    with server.client() as c:
        chat = new_chat(c, force=True)
        # Longer than the API server's --stalled-after: its sweep would have declared w1 lost.
        run = _start(c, chat["id"], f"run `sleep {STALLED_AFTER * 3:.0f}`")
        w2 = one_server.worker("d2")  # could take a second run of the chat, were the chat freed
        w1.proc.send_signal(signal.SIGTERM)
        refused = 0
        while alive(run["pid"]):  # the chat takes no other prompt while its agent runs
            r = _post(c, chat["id"], "reply with exactly: too early")
            assert r.status_code == 409, (r.status_code, r.text, one_server.logs())
            refused += 1
            time.sleep(0.5)
        assert refused > 0
        done = wait_run(c, run["id"], 30)
        assert done["status"] == "succeeded", (done, one_server.logs())
        assert done["error"] is None
        kinds = [(e["type"], e["subtype"]) for e in all_events(c, chat["id"])]
        assert ("worker", "lost") not in kinds, kinds
        assert [sub for kind, sub in kinds if kind == "run"] == ["queued", "running", "succeeded"]
        poll(lambda: w1.proc.poll() is not None, 30)
        assert w1.proc.returncode == 0, w1.log_text()
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
        assert w.proc.returncode == 0, w.log_text()
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
        assert w.proc.returncode == 0, w.log_text()
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
        nxt = _start(c, chat["id"], "run `sleep 1`")  # the worker goes on
        assert wait_run(c, nxt["id"])["status"] == "succeeded"
    w.stop()


def test_sighup_drains_a_worker_as_sigterm_does(one_server: Cluster) -> None:
    """Its terminal or SSH session closed: the worker stops as on SIGTERM (it died at once,
    without its exit line, its runs left to the API servers' sweep), as ``serve`` does."""
    w = one_server.worker("d4")
    (server,) = one_server.servers
    with server.client() as c:
        run = _start(c, new_chat(c, force=True)["id"], "run `sleep 3`")
    w.proc.send_signal(signal.SIGHUP)
    poll(lambda: w.proc.poll() is not None, 60)
    assert DRAINING in w.log_text(), w.log_text()
    assert w.proc.returncode == 0, w.log_text()
    with server.client() as c:
        assert wait_run(c, run["id"], 30)["status"] == "succeeded", one_server.logs()
