"""The last line of a worker declared lost (its row in the job queue deleted) is whole: it
ends with its remedy, whatever the worker's name (review 58: it was cut at 200 characters,
"…a worker that starts prunes one silent (WorkerLostError)", without "start it again")."""

from __future__ import annotations

import pytest

from cursor_agent_api.cli.worker import stopped_message
from cursor_agent_api.server.worker import WorkerLostError

URL = "postgresql+asyncpg://me:secret@db/app"


@pytest.mark.parametrize("name", ["build-1", "ip-10-20-30-40.eu-west-1.compute.internal-123456"])
def test_the_declared_lost_line_ends_with_its_remedy(name: str) -> None:
    line = stopped_message(WorkerLostError.for_worker(name), URL, started=True)
    assert line.startswith(f"the worker stopped: worker {name} was declared lost: "), line
    assert line.endswith("; start it again (WorkerLostError)"), line
    assert "secret" not in line
