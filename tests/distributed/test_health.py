"""``GET /api/health`` of ``serve --dispatch queue`` says what an operator of a cluster needs:
the relay's LISTEN connection (the workers' records reach this server's sockets through it:
while it is down they arrive only by the slow poll, if at all), and the workers, as of the
last sweep: alive, stalled (lost), and the runs this server marked ``interrupted`` for a lost
worker. Its ``status`` is ``degraded`` while the relay is down. It said nothing of either: a
relay that kept reconnecting, or a cluster without a live worker, looked ``ok``. It still
answers from memory (no query of its own)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
from cluster import pg_execute  # (puts tests/server on the path)
from inproc import InProcServer
from pg_proxy import proxied
from server_helpers import new_chat, poll

# (stalled_after: the worker inserted "alive" below must stay so until the count, however slow
# a loaded machine is to get there; 3 s was not always enough. The lost one is an hour old.)
QUICK = {"sweep_interval": 0.2, "notify_poll_interval": 0.5, "stalled_after": 60.0}


def _health(c: httpx.Client) -> dict[str, Any]:
    r = c.get("/api/health")
    assert r.status_code == 200, r.text
    return dict(r.json())


def _until(c: httpx.Client, ok: Any) -> dict[str, Any]:
    """The health, polled until ``ok(health)``."""
    seen: dict[str, Any] = {}

    def check() -> bool:
        seen.update(_health(c))
        return bool(ok(seen))

    poll(check, timeout=60)
    return seen


def test_health_says_when_the_relay_is_down_and_back(db_url: str, tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    with proxied(db_url) as (proxy, through):
        server = InProcServer(tmp_path, through, root, uuid.uuid4().hex, dispatch="queue",
                              **QUICK).start()
        try:
            with server.client() as c:
                up = _until(c, lambda h: h["workers"]["checked_ms"] is not None)
                assert up["status"] == "ok", up
                assert up["relay"] == {"connected": True, "down_since_ms": None, "reconnects": 0,
                                       "last_error": None}, up
                proxy.stop()  # its connections cut, new ones refused
                down = _until(c, lambda h: not h["relay"]["connected"])
                assert down["status"] == "degraded", down
                assert isinstance(down["relay"]["down_since_ms"], int), down
                assert down["relay"]["last_error"], down
                proxy.start()
                back = _until(c, lambda h: h["relay"]["connected"])
                assert back["relay"]["reconnects"] >= 1, back
                assert back["relay"]["down_since_ms"] is None, back
                assert back["relay"]["last_error"], "the last failure is kept"
                assert back["status"] == "ok", back
        finally:
            server.stop()


def test_health_counts_the_workers_and_the_runs_of_lost_ones(db_url: str, tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    server = InProcServer(tmp_path, db_url, root, uuid.uuid4().hex, dispatch="queue", **QUICK).start()
    try:
        with server.client() as c:
            none = _until(c, lambda h: h["workers"]["checked_ms"] is not None)
            assert none["workers"] | {"checked_ms": 0} == {
                "alive": 0, "stalled": 0, "checked_ms": 0, "lost_runs": 0, "last_lost": None}, none
            # a worker alive, and one silent for an hour that has a run: lost
            pg_execute(db_url, "INSERT INTO procrastinate_workers (last_heartbeat) VALUES (now())")
            (lost,) = pg_execute(db_url, "INSERT INTO procrastinate_workers (last_heartbeat) "
                                         "VALUES (now() - interval '1 hour') RETURNING id")
            chat = new_chat(c, workspace=str(root))
            run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hi"}).json()
            # the job taken and the run running at once, in one statement: as two, a sweep
            # between them (every 0.2 s; a loaded machine's gap) saw a stalled job of a run
            # still queued, failed the job, and the run was left to the 60 s abandoned check
            pg_execute(db_url, "WITH taken AS (UPDATE procrastinate_jobs SET status = 'doing', "
                               "worker_id = $1 WHERE id = (SELECT job_id FROM runs WHERE id = $2)) "
                               "UPDATE runs SET status = 'running', worker = 'w9', worker_id = $1 "
                               "WHERE id = $2", lost["id"], run["id"])
            counted = _until(c, lambda h: h["workers"]["lost_runs"] == 1)
            workers = counted["workers"]
            assert (workers["alive"], workers["stalled"]) == (1, 1), workers
            assert workers["last_lost"]["worker"] == "w9", workers
            assert isinstance(workers["last_lost"]["at_ms"], int), workers
            assert c.get(f"/api/runs/{run['id']}").json()["status"] == "interrupted"
    finally:
        server.stop()


def test_a_queue_server_does_not_claim_to_know_whether_agents_are_simulated(
        db_url: str, tmp_path: Path) -> None:
    """Audit 15: the workers run the agents, each with its own --simulate; the API server's
    own flag said "simulate": false beside simulating workers (and true beside real ones),
    and the page labelled the agents wrongly. It says null: not its to know."""
    root = tmp_path / "root"
    root.mkdir()
    for simulate in (False, True):
        server = InProcServer(tmp_path, db_url, root, uuid.uuid4().hex, dispatch="queue",
                              simulate=simulate, **QUICK).start()
        try:
            with server.client() as c:
                assert _health(c)["simulate"] is None
                assert c.get("/api/config").json()["simulate"] is None
        finally:
            server.stop()
