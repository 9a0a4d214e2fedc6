"""``serve --dispatch queue`` whose PostgreSQL host goes silent during its start, after its
store opened (the migrations done), at the step that opens a given connection: the
sign-outs' LISTEN, the job queue's pool, the relay's LISTEN. Each ends as a database that
cannot be opened does: one line naming the step that failed and what to do, exit 1, no
traceback. The relay's used to end with uvicorn's start-up traceback and exit 3, the job
queue's pool left open; the queue's pool, held for psycopg's 30 s, the same way.

The real ``cursor-agent-api serve`` runs in a subprocess, its database behind a
:class:`PgProxy` that stops answering (:meth:`PgProxy.hold`) as soon as a connection's
start-up message names the step's connection (:meth:`PgProxy.hold_on`: the LISTEN
connections' ``application_name``, the job queue's ``-c statement_timeout`` option, which
only psycopg's connections send). The child script sets the store's waits short (1 s to
connect, 2 s a statement: the CLI has no option for them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pg_proxy import proxied

EXITS_WITHIN = 120.0
"""A hang's limit only (each step is bounded by the short waits)."""

_CHILD = """
import dataclasses, sys
import cursor_agent_api.server as server
from cursor_agent_api.cli import main

real_create_app = server.create_app

def create_app(settings):
    return real_create_app(dataclasses.replace(settings, store_connect_timeout=1.0,
                                               store_statement_timeout=2.0))

server.create_app = create_app
sys.argv = ["cursor-agent-api", "serve", "--simulate", "--port", "0", "--dispatch", "queue",
            "--root", {root!r}]
sys.exit(main())
"""

STEPS = {
    # what the silent host holds: (the bytes that make it silent, what the error names)
    "sign-outs' LISTEN, then the job queue": (b"cursor-agent-api-sessions", "the job queue"),
    "job queue's pool": (b"-c statement_timeout", "the job queue"),
    "relay's LISTEN": (b"cursor-agent-api-listen", "the LISTEN connection"),
}


@pytest.mark.parametrize("step", list(STEPS))
def test_a_host_silent_at_a_step_of_the_start_ends_serve_with_one_line(
    db_url: str, tmp_path: Path, step: str
) -> None:
    marker, named = STEPS[step]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CURSOR_AGENT_API_")}
    env["CURSOR_AGENT_API_TOKEN"] = "t" * 32
    log_path = tmp_path / "serve.log"
    with proxied(db_url) as (proxy, through):
        proxy.hold_on(marker)
        env["CURSOR_AGENT_API_DATABASE_URL"] = through
        script = _CHILD.format(root=str(tmp_path))
        with log_path.open("wb") as log:
            proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                                    stderr=log, stdin=subprocess.DEVNULL, cwd=tmp_path, env=env,
                                    start_new_session=True)
        try:
            try:
                out, _ = proc.communicate(timeout=EXITS_WITHIN)
            except subprocess.TimeoutExpired:
                pytest.fail(f"serve still starts {EXITS_WITHIN:g} s after its host went silent")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate(timeout=30)
        assert proxy.holding, "the host never went silent: the marker was not sent"
    text = log_path.read_text(errors="replace")
    assert proc.returncode == 1, text
    assert "Traceback" not in text, text
    assert "Application startup failed" not in text, text
    assert b"server" not in out and b"Open:" not in out, out  # never announced
    last = text.splitlines()[-1]
    assert last.startswith("Error: cannot start the server: "), text
    assert named in last, last
    assert "start it again once the database answers" in last, last
    assert "postgresql+asyncpg://" in last, last  # which database (its password hidden)
