"""What a server's agent can read of the server's ``/proc``: the pieces of the tests of
``server/non_dumpable.py`` (``serve`` here, ``worker`` in ``tests/distributed``).

The agent is the same user as its server. A test run as root would prove nothing (root reads
every process): :func:`exec_with_secret_in_env` starts the server without the capabilities
that read any process, so the server and its agent are what an ordinary user's are.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

_PR_CAPBSET_DROP = 24
_BYPASSING_CAPS = {"CAP_SYS_PTRACE": 19, "CAP_SYS_ADMIN": 21, "CAP_PERFMON": 38}
"""What lets a process read any other's ``/proc/PID/environ``, dumpable or not."""


def _as_an_ordinary_user() -> None:  # pragma: no cover - runs in the child, before exec
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in _BYPASSING_CAPS.values():
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != 22:
            raise OSError(ctypes.get_errno(), "PR_CAPBSET_DROP")  # 22: a kernel without it


def _can_drop_capabilities() -> bool:
    """Not root, or root with ``CAP_SETPCAP`` (a container may withhold it): what
    :func:`_as_an_ordinary_user` needs."""
    if os.geteuid() != 0:
        return True
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) >> 8 & 1)  # CAP_SETPCAP is bit 8
    return False


def exec_with_secret_in_env(option: str, variable: str) -> Callable[..., subprocess.Popen[bytes]]:
    """A stand-in for ``launcher.popen``: the command exec'd (so ``/proc/PID/environ`` is its
    own, not the launcher's), the value of ``option`` given in the environment as
    ``variable`` instead (an argument is public: ``/proc/PID/cmdline``), and, as root,
    without the capabilities that read any process."""

    if not _can_drop_capabilities():
        import pytest

        pytest.skip("root without CAP_SETPCAP: the server cannot be started as an ordinary "
                    "user here, and root reads every process's environment")

    def popen(argv: list[str], *, cwd: Path, env: dict[str, str],
              stderr: Any) -> subprocess.Popen[bytes]:
        at = argv.index(option)
        value = argv[at + 1]
        return subprocess.Popen(argv[:at] + argv[at + 2:], stdout=subprocess.PIPE,
                                stderr=stderr, cwd=cwd, env={**env, variable: value},
                                start_new_session=True, preexec_fn=_as_an_ordinary_user)

    return popen


def read_environ_prompt(pid: int) -> str:
    """A prompt that has the simulated agent run a shell command printing ``pid``'s stat
    (readable by every user: the control that the command ran, on that process), then its
    environment, or ``refused-42`` (computed, so the prompt itself never holds it)."""
    return (f"run `echo STAT=$(cut -d' ' -f1 /proc/{pid}/stat); "
            f"tr '\\0' '\\n' < /proc/{pid}/environ 2>&1 || echo refused-$((6 * 7))`")


def assert_environ_refused(text: str, pid: int, secret: str) -> None:
    """The agent's output ``text`` (its chat's records) shows that the command of
    :func:`read_environ_prompt` ran, could not read the environment, and that ``secret``
    is not in it."""
    assert f"STAT={pid}" in text, text
    assert "refused-42" in text and "Permission denied" in text, text
    assert secret not in text
