"""The banner of ``serve --dispatch queue`` does not say whether the agents are simulated:
each worker's own ``--simulate`` decides, and the API server cannot tell (its ``/api/health``
says ``"simulate": null``). Review 58: with ``--simulate`` (scripts/cluster-demo.sh's command)
it still printed "server (simulated agents) dispatching to workers", and without it no label
beside simulating workers."""

from __future__ import annotations

from pathlib import Path

import pytest
from cluster import fresh_cluster


@pytest.mark.timeout(300)  # (a hang guard: two API servers started, loaded machine)
def test_a_queue_servers_banner_has_no_simulated_label(tmp_path: Path) -> None:
    with fresh_cluster(tmp_path) as c:
        for args in (["--simulate"], []):
            server = c.server(*args)
            banner = next(line for line in server.first_lines if " server" in line)
            assert " server dispatching to workers (queue 'runs') at http" in banner, (args, banner)
            assert "simulated" not in banner, (args, banner)
            with server.client() as client:
                assert client.get("/api/health").json()["simulate"] is None
