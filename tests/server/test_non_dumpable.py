"""The agent cannot read the server's environment (``server/non_dumpable.py``; Linux)."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import launcher
import pytest
from server_helpers import Server, all_events, new_chat, wait_run

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")

_PR_CAPBSET_DROP = 24
_BYPASSING_CAPS = {"CAP_SYS_PTRACE": 19, "CAP_SYS_ADMIN": 21, "CAP_PERFMON": 38}
"""What lets a process read any other's ``/proc/PID/environ``, dumpable or not. Root has
them (the agent of a server run as root reads anything): a test run as root drops them from
the server's bounding set, so the server and its agent are root without them."""


def _as_an_ordinary_user() -> None:  # pragma: no cover - runs in the child, before exec
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in _BYPASSING_CAPS.values():
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != 22:
            raise OSError(ctypes.get_errno(), "PR_CAPBSET_DROP")  # 22: a kernel without it


def _exec_with_token_in_env(argv: list[str], *, cwd: Path, env: dict[str, str],
                            stderr: Any) -> subprocess.Popen[bytes]:
    """``serve`` exec'd (so ``/proc/PID/environ`` is its own, not the launcher's), with the
    token in ``CURSOR_AGENT_API_TOKEN`` instead of ``--token`` (whose argv is public)."""
    at = argv.index("--token")
    token = argv[at + 1]
    argv = argv[:at] + argv[at + 2:]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=stderr, cwd=cwd,
                            env={**env, "CURSOR_AGENT_API_TOKEN": token},
                            start_new_session=True, preexec_fn=_as_an_ordinary_user)


def test_the_agent_cannot_read_the_servers_environment(
    make_server: Callable[..., Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(launcher, "popen", _exec_with_token_in_env)
    server = make_server()
    pid = server.proc.pid
    assert isinstance(server.proc, subprocess.Popen)
    with server.client() as c:
        chat = new_chat(c, force=True)
        # what the agent can read of the server: its stat (a control: the command ran, on
        # the right process); what it cannot: the environment it was started with
        command = (f"echo STAT=$(cut -d' ' -f1 /proc/{pid}/stat); "
                   f"tr '\\0' '\\n' < /proc/{pid}/environ 2>&1 || echo refused-$((6 * 7))")
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": f"run `{command}`"})
        assert run.status_code == 202, run.text
        assert wait_run(c, run.json()["id"])["status"] == "succeeded"
        text = repr(all_events(c, chat["id"]))
    assert f"STAT={pid}" in text, text
    assert "refused-42" in text and "Permission denied" in text, text
    assert server.token not in text
