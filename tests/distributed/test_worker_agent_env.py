"""A worker's database settings never reach its agents (audit 15): a worker given its
password as PGPASSWORD (its URL names none) passed it on to every agent it started, with
every other libpq variable (PGPASSFILE, PGSSLKEY, PGSERVICEFILE, …): ``run `env``` showed
the cluster's database password to the agent and its model. A variable the worker names with
``--pass-env`` or ``--agent-env`` is still passed (an agent that needs its own database)."""

from __future__ import annotations

import re

from cluster import Cluster
from server_helpers import all_events, new_chat, wait_run
from sqlalchemy.engine import make_url


def test_a_workers_agent_sees_none_of_its_libpq_variables(one_server: Cluster) -> None:
    url = make_url(one_server.db_url)
    password = str(url.password)
    worker = one_server.worker(
        "w-env", "--pass-env", "PGTZ", "--agent-env", "PGDATABASE=the-agents-own",
        db_url=url.set(password=None).render_as_string(hide_password=False),
        env={"PGPASSWORD": password, "PGAPPNAME": "libpq-canary-app",
             "PGPASSFILE": "/tmp/libpq-canary-passfile", "PGSSLKEY": "/tmp/libpq-canary-sslkey",
             "PGSERVICEFILE": "/tmp/libpq-canary-servicefile", "PGSSLMODE": "disable",
             "PGTZ": "UTC"})
    try:
        with one_server.servers[0].client() as client:
            chat = new_chat(client, force=True)
            r = client.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "run `env`"})
            assert r.status_code == 202, r.text
            run = wait_run(client, r.json()["id"])
            assert run["status"] == "succeeded" and run["worker"] == "w-env", (run, one_server.logs())
            text = "\n".join(str(e["payload"]) for e in all_events(client, chat["id"]))
    finally:
        worker.stop()
    assert "CURSOR_CONFIG_DIR=" in text  # the command ran and its output was stored
    names = set(re.findall(r"(?<![A-Z_])(PG[A-Z_]+)=", text))
    assert names == {"PGTZ", "PGDATABASE"}, names  # only those named explicitly
    assert "PGDATABASE=the-agents-own" in text
    assert password not in text
