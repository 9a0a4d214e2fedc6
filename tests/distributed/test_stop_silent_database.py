"""A worker stopped (SIGTERM) while its PostgreSQL host does not answer (packets dropped: the
connections stay open, nothing comes back) ends, its run's end that could not be recorded said
in one line (no traceback): each query of the job queue from its stop on waits
:data:`~cursor_agent_api.server.worker.STOP_WAIT` seconds at most, those in flight too, the
store's its own bound; every query one second once a second signal stops its runs at once. It
used to wait for each query's whole bound: the run's end record up to
``store_statement_timeout`` (a minute by default), Procrastinate's unregistration up to the
queue's 70 s, a second and a third SIGTERM only said (audit 7: alive 150 s, then a 90-line
traceback).

The worker is the real ``cursor-agent-api worker`` in a subprocess (its own signal handlers),
its database behind a :class:`PgProxy` (the API server's is not); its statement timeout is set
(the CLI has no option for it) to ten minutes for the second signal, so that the old code's
wait is far beyond this test's hang limit whatever the machine's load, and to 10 s for one
signal (the job queue's 70 s per query is beyond it)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cluster import Cluster, until_taking_runs
from pg_proxy import proxied
from server_helpers import new_chat, poll

EXITS_WITHIN = 150.0
"""A hang's limit only (the old code waited the statement timeout below, or 70 s per query
of the job queue)."""

_CHILD = """
import dataclasses, sys
from cursor_agent_api.cli import main
from cursor_agent_api.server.worker import Worker

real_init = Worker.__init__

def init(self, settings):
    server = dataclasses.replace(settings.server, store_statement_timeout={statement!r})
    real_init(self, dataclasses.replace(settings, server=server))

Worker.__init__ = init
sys.argv = ["cursor-agent-api", "worker", "--simulate", "--name", {name!r}, "--root", {root!r},
            "--database-url", {url!r}, "--log-level", "warning", "--heartbeat", "0.5",
            "--shutdown-grace", {grace!r}]
sys.exit(main())
"""


@pytest.mark.timeout(300)  # (a hang guard: a cluster, a worker and a run under a loaded machine)
@pytest.mark.parametrize("signals", [1, 2], ids=["grace-over", "second-signal"])
def test_a_worker_stopped_while_its_database_does_not_answer_ends_within_seconds(
    one_server: Cluster, tmp_path: Path, signals: int
) -> None:
    (server,) = one_server.servers
    name = f"w-silent-{signals}"
    log_path = tmp_path / "worker.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CURSOR_AGENT_API_")}
    grace = "1" if signals == 1 else "3600"  # (the second signal: not the grace's hour)
    # one signal: the store's statements keep their own bound (a database merely slow still
    # records the run's end: test_stop_slow_database), 10 s here; the job queue's 70 s per
    # query (what the old code waited) is beyond the hang limit. Two: ten minutes, cut to 1 s.
    statement = 10.0 if signals == 1 else 600.0
    with proxied(one_server.db_url) as (proxy, through), server.client() as c:
        script = _CHILD.format(name=name, root=str(one_server.root), url=through, grace=grace,
                               statement=statement)
        with log_path.open("wb") as log:
            proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                                    stderr=log, stdin=subprocess.DEVNULL, cwd=one_server.root,
                                    env=env, start_new_session=True)

        def logged() -> str:
            return log_path.read_text(errors="replace")

        try:
            until_taking_runs(proc, logged)
            chat = new_chat(c, force=True)
            r = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "run `sleep 600`"})
            assert r.status_code == 202, r.text
            run_id = r.json()["id"]

            def running() -> bool:
                run = c.get(f"/api/runs/{run_id}").json()
                return bool(run["status"] == "running" and run["pid"])

            poll(running, 60)
            proxy.hold()  # the host stops answering
            proc.send_signal(signal.SIGTERM)
            if signals == 2:
                poll(lambda: "stopping:" in logged(), 30)
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(EXITS_WITHIN)
            except subprocess.TimeoutExpired:
                raise AssertionError(f"the worker did not end:\n{logged()}") from None
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)
            if proc.stdout is not None:
                proc.stdout.close()
            proxy.release()
    text = logged()
    assert proc.returncode in (-signal.SIGTERM, 128 + signal.SIGTERM), text  # (main(): 143)
    assert "Traceback" not in text, text
    said = [line for line in text.splitlines() if run_id in line]  # (also its events, if any
    assert said and "was not recorded" in said[-1], text  # were waiting: one line for them)
