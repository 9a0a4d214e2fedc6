"""A worker cut off (SIGSTOP) and declared lost (its last heartbeat made older than
``--stalled-after``: :meth:`Cluster.lose`): the sweep ends its run ``interrupted``. When the
worker comes back, the agent's output that waited in the pipe must not be stored after the
run's final record nor change the run (result, last_seq, turn): the batch's transaction
requires the run to be active, and the worker stops the agent at once (review of
2026-11-24, wave 11; before the fix, records 13..18 followed seq 12's end)."""

from __future__ import annotations

import signal

from cluster import LOST_WITHIN, Cluster
from server_helpers import alive, all_events, new_chat, poll


def test_a_lost_workers_late_records_are_not_stored_after_the_runs_end(one_server: Cluster) -> None:
    (server,) = one_server.servers
    worker = one_server.worker("late")
    command, gate = one_server.gate("late")  # the agent's command ends once the run is over
    try:
        with server.client() as c:
            chat = new_chat(c, force=True)
            run_id = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": f"run `{command}`"}).json()["id"]

            def started() -> int | None:  # the agent's pid, once it runs
                run = c.get(f"/api/runs/{run_id}").json()
                return int(run["pid"]) if run["status"] == "running" and run["pid"] else None

            agent_pid = poll(started, 60)
            # the agent has started its command: its tool call is stored
            poll(lambda: any(e["type"] == "tool-call-started" for e in all_events(c, chat["id"])), 60)
            worker.proc.send_signal(signal.SIGSTOP)
            try:
                one_server.lose(worker, run_id)
                poll(lambda: c.get(f"/api/runs/{run_id}").json()["status"] == "interrupted", LOST_WITHIN)
                # the command ends meanwhile, and the agent with it: its output waits in the pipe
                gate.touch()
                poll(lambda: not alive(agent_pid), 60)
            finally:
                worker.proc.send_signal(signal.SIGCONT)
            # the worker reads that output (refused: the run is over), stops the agent, and
            # its end of the run is not recorded either
            poll(lambda: b"its end is not recorded" in worker.log_path.read_bytes(), 60)
            events = all_events(c, chat["id"])
            end = next(e["seq"] for e in events if (e["type"], e["subtype"]) == ("run", "interrupted"))
            assert [(e["seq"], e["type"], e["subtype"]) for e in events if e["seq"] > end] == []
            run = c.get(f"/api/runs/{run_id}").json()
            assert run["status"] == "interrupted"
            assert run["error_type"] == "WorkerLost"
            assert run["result"] is None
            assert run["last_seq"] == end
    finally:
        worker.stop()
