"""Fixtures of the end-to-end ACP tests: the client against ``cursor-agent-sim acp`` (real
processes), behind a ``tee`` that records every frame both ways, and a check that no agent
process outlives its test."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the tests import acp_sim_harness
sys.path.insert(0, str(Path(__file__).parent.parent / "acp_mode"))  # and its frame rules

from acp_sim_harness import Sim, make_sim

from cursor_agent_api.runtime import groups
from cursor_agent_api.runtime import process as process_module


@pytest.fixture(autouse=True)
def spawned(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Process groups of every agent spawned in the test; none may be alive afterwards."""
    pgids: list[int] = []
    original = process_module.AgentProcess.spawn.__func__  # type: ignore[attr-defined]

    async def spawn(cls: Any, *args: Any, **kwargs: Any) -> Any:
        proc = await original(cls, *args, **kwargs)
        pgids.append(proc.pgid)
        return proc

    monkeypatch.setattr(process_module.AgentProcess, "spawn", classmethod(spawn))
    yield pgids
    alive = [p for p in pgids if groups.group_alive(p)]
    for pgid in alive:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, 9)
    assert not alive, f"agent process groups outlived the test: {alive}"


@pytest.fixture
def sim(tmp_path: Path) -> Sim:
    return make_sim(tmp_path)
