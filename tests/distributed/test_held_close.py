"""A worker stopped (SIGTERM) while its PostgreSQL host does not answer (packets dropped: the
connections stay open) exits within seconds of its cleanup: its store's pooled connections are
closed within ``store_connect_timeout``, those unanswered dropped, in one line. It used to wait
for each connection's goodbye up to ``store_statement_timeout`` (60 s: up to 10 minutes for
the pool's 10), one "Exception closing connection" logged for each, the signals meanwhile only
said.

The worker is the real ``cursor-agent-api worker`` in a subprocess (its own signal handlers),
its database behind a :class:`PgProxy`. The child script sets the store's waits short (1 s to
connect, 2 s a statement: the CLI has no option for them), opens three pooled connections once
it has started, and sends no heartbeats of its own (a beat under the held host would use, then
drop, a pooled connection: the test counts the closes of a pool left as it was)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from cluster import until_taking_runs
from pg_proxy import proxied

EXITS_WITHIN = 120.0
"""A hang's limit only (the drain's queries and the cleanup each bounded by the short waits)."""
POOLED = 3

_CHILD = """
import contextlib, dataclasses, sys
from sqlalchemy import text
from cursor_agent_api.cli import main
from cursor_agent_api.server.worker import Worker

real_init, real_recover = Worker.__init__, Worker.recover

def init(self, settings):
    server = dataclasses.replace(settings.server, store_connect_timeout=1.0,
                                 store_statement_timeout=2.0)
    real_init(self, dataclasses.replace(settings, server=server))

async def recover(self):  # (at start) then {pooled} connections in the store's pool
    await real_recover(self)
    async with contextlib.AsyncExitStack() as stack:
        for _ in range({pooled}):
            conn = await stack.enter_async_context(self.store.connect())
            await conn.execute(text("SELECT 1"))

async def no_beat(self):
    pass

Worker.__init__, Worker.recover, Worker._beat = init, recover, no_beat
sys.argv = ["cursor-agent-api", "worker", "--simulate", "--name", "w-held-close",
            "--root", {root!r}, "--database-url", {url!r}, "--log-level", "warning"]
sys.exit(main())
"""


def test_a_worker_stopped_while_its_database_does_not_answer_drops_its_connections(
    db_url: str, tmp_path: Path
) -> None:
    log_path = tmp_path / "worker.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CURSOR_AGENT_API_")}
    with proxied(db_url) as (proxy, through):
        script = _CHILD.format(pooled=POOLED, root=str(tmp_path), url=through)
        with log_path.open("wb") as log:
            proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                                    stderr=log, stdin=subprocess.DEVNULL, cwd=tmp_path, env=env,
                                    start_new_session=True)

        def logged() -> str:
            return log_path.read_text(errors="replace")

        try:
            until_taking_runs(proc, logged)
            proxy.hold()  # the host stops answering
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(EXITS_WITHIN) is not None, logged()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)
            if proc.stdout is not None:
                proc.stdout.close()
    text = logged()
    assert "Exception closing connection" not in text, text  # the old code: one per connection
    dropped = re.findall(r"the database's connections did not close cleanly \(no answer within "
                         r"1 s, or the connection broke\): (\d+) connection\(s\) dropped", text)
    assert len(dropped) == 1 and int(dropped[0]) >= POOLED, text
    assert "Traceback" not in text, text
