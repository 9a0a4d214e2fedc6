"""A worker silent for a while is not pruned by another that starts; one whose row is gone
says so (audit 15).

Procrastinate deletes, as each worker starts, the workers whose heartbeat is older than its
``stalled_worker_timeout``: a fixed 30 s here, whatever the API servers' ``--stalled-after``.
(a) A worker paused for 35 s (a VM snapshot, a debugger) was deleted by any worker that
started meanwhile, and the API servers' sweep, which counts a missing row as lost at once,
interrupted its run long before ``--stalled-after 120``. (b) The resumed worker, its row
gone, went on unregistered and died at its next job with a ForeignKeyViolation that said
nothing useful. Now a worker prunes only those silent for longer than any ``--stalled-after``
(an hour), and one whose row is gone stops, saying it was declared lost."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cluster import Cluster, fresh_cluster, pg_execute
from server_helpers import new_chat, poll, wait_run

SERVERS_STALLED_AFTER = 600
"""The API servers' ``--stalled-after`` here: far beyond the 40 s the test makes a worker
silent, and any start of another worker on a loaded machine."""


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with fresh_cluster(tmp_path) as c:
        c.server("--stalled-after", str(SERVERS_STALLED_AFTER))
        yield c


def _running_on(client: httpx.Client, worker: str, command: str) -> str:
    chat = new_chat(client, force=True)
    r = client.post(f"/api/chats/{chat['id']}/runs", json={"prompt": f"run `{command}`"})
    assert r.status_code == 202, r.text
    run_id = str(r.json()["id"])

    def running() -> bool:
        run = client.get(f"/api/runs/{run_id}").json()
        return bool(run["status"] == "running" and run["pid"])

    poll(running, 120)
    assert client.get(f"/api/runs/{run_id}").json()["worker"] == worker
    return run_id


def _row_count(cluster: Cluster, run_id: str, *, others: bool = False) -> int:
    """The rows of ``procrastinate_workers`` of the worker that runs ``run_id`` (``others``:
    of the other workers)."""
    rows = pg_execute(cluster.db_url, "SELECT count(*) FROM procrastinate_workers WHERE id "
                      f"{'<>' if others else '='} (SELECT worker_id FROM runs WHERE id = $1)",
                      run_id)
    return int(rows[0][0])


@pytest.mark.timeout(300)  # (a hang guard: a cluster, two workers and a run, loaded machine)
def test_a_worker_silent_for_40_s_is_not_pruned_by_one_that_starts(cluster: Cluster) -> None:
    a = cluster.worker("A")
    command, gate = cluster.gate("pruned")
    with cluster.servers[0].client() as client:
        run_id = _running_on(client, "A", command)
        a.proc.send_signal(signal.SIGSTOP)
        try:
            # silent for 40 s (as if paused that long), far under the servers' --stalled-after
            cluster.set_worker_row(
                a, run_id,
                "UPDATE procrastinate_workers SET last_heartbeat = now() - interval '40 seconds' "
                "WHERE id = (SELECT worker_id FROM runs WHERE id = $1) RETURNING id")
            cluster.worker("B")  # its start prunes the stalled workers
            # ... then registers B: "taking runs" comes before either (review 58), so wait
            # for B's row (the prune is done then) before counting A's
            poll(lambda: _row_count(cluster, run_id, others=True) == 1, 120)
            assert _row_count(cluster, run_id) == 1, "worker A was pruned"
        finally:
            a.proc.send_signal(signal.SIGCONT)
        gate.touch()
        run = wait_run(client, run_id)
    assert run["status"] == "succeeded", (run, cluster.logs())


@pytest.mark.timeout(300)  # (a hang guard)
def test_a_worker_whose_row_is_gone_stops_saying_it_was_declared_lost(cluster: Cluster) -> None:
    a = cluster.worker("A")
    command, gate = cluster.gate("gone")
    with cluster.servers[0].client() as client:
        run_id = _running_on(client, "A", command)
        a.proc.send_signal(signal.SIGSTOP)
        try:
            # as a prune would: by an older version's worker (30 s), or after an hour
            cluster.set_worker_row(
                a, run_id,
                "DELETE FROM procrastinate_workers "
                "WHERE id = (SELECT worker_id FROM runs WHERE id = $1) RETURNING id")
            run = wait_run(client, run_id)  # the sweep: a worker without a row is lost
            assert run["status"] == "interrupted", run
        finally:
            a.proc.send_signal(signal.SIGCONT)
        gate.touch()
    # no job needed: its next heartbeat finds its row gone, and it stops, saying why
    try:
        code = a.proc.wait(120)
    finally:
        a.kill()
    log = a.log_text()
    assert code == 1, (code, log)
    last = log.strip().splitlines()[-1]
    assert "declared lost" in last and "ForeignKeyViolation" not in log, log
    assert last.endswith("; start it again (WorkerLostError)"), last  # (review 58: it was cut)
