"""The agent starts with stdin, stdout and stderr and nothing else open (Linux, owner guard),
on asyncio's loop and on uvloop's: libuv's spawn closes no inherited descriptor and left copies
of the agent's own pipes in it (audit 4: an agent that closed its stdout still held it, so its
output never ended). Descriptors of this process must not leak into the agent either."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_api import AsyncCursorAgentClient
from cursor_agent_api.config import AgentConfig
from cursor_agent_api.runtime import process as process_module

pytestmark = pytest.mark.skipif(not process_module.OWNER_GUARD,
                                reason="the owner guard (Linux, /proc) closes them")

LISTER = """\
import json, os, sys
sys.stdin.read()
fds = sorted(int(fd) for fd in os.listdir("/proc/self/fd"))
print(json.dumps({"type": "result", "subtype": "success", "is_error": False,
                  "result": json.dumps(fds)}), flush=True)
"""


def _asyncio(main: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    return asyncio.run(main())


def _uvloop(main: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    uvloop = pytest.importorskip("uvloop")
    loop = uvloop.new_event_loop()
    try:
        return loop.run_until_complete(main())
    finally:
        loop.close()


@pytest.mark.parametrize("runner", [_asyncio, _uvloop], ids=["asyncio", "uvloop"])
def test_the_agent_holds_only_its_stdio(tmp_path: Path, runner: Any) -> None:
    agent = tmp_path / "lister"
    agent.write_text(f"#!{sys.executable}\n{LISTER}")
    agent.chmod(0o755)
    config = AgentConfig(agent_binary=str(agent), workspace=str(tmp_path))
    leak = os.open(os.devnull, os.O_RDONLY)
    os.set_inheritable(leak, True)  # an inheritable descriptor of the host
    try:
        result = runner(lambda: AsyncCursorAgentClient(config).query("hi"))
    finally:
        os.close(leak)
    assert result.success, result.error
    # (the listing's own descriptor is among them: one more than stdio)
    fds = [int(fd) for fd in result.result.strip("[]").split(",")]
    assert fds[:3] == [0, 1, 2] and len(fds) == 4, fds
