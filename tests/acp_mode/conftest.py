"""Fixtures of the ACP tests: a fake ``agent acp`` (``fake_agent.py``, a real subprocess) and
a check that no agent process outlives its test."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the tests import acp_fake

from acp_fake import FakeAgent

from cursor_agent_api.config import AgentConfig
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
def fake(tmp_path: Path) -> FakeAgent:
    return FakeAgent(tmp_path)


@pytest.fixture
def make_config(fake: FakeAgent) -> Callable[..., AgentConfig]:
    return fake.config
