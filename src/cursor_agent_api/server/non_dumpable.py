"""Keep the agent out of the server's memory: ``serve`` and ``worker`` are not dumpable.

The agent runs as the same user as the process that starts it. On Linux any process of a
user can read ``/proc/<pid>/environ`` (the environment the server started with: the token,
the database URL and its password, even after they are gone from ``os.environ``),
``/proc/<pid>/mem``, ``fd``, ``cwd`` and ``maps`` of that user's other processes, and
attach a debugger to them. So one shell command of the agent, ``tr '\\0' '\\n' <
/proc/$PPID/environ``, would show it the token its own environment was stripped of.

:func:`make_non_dumpable` — ``prctl(PR_SET_DUMPABLE, 0)`` — turns that off for the calling
process: those files then belong to root, no debugger attaches without ``CAP_SYS_PTRACE``,
and a crash writes no core file (it would hold the token). The process still reads its own
``/proc/self`` (except ``environ`` and ``io``, which become root's); ``stat``, ``status``
and ``cmdline`` stay readable by everyone, as they are for any process. A child's ``exec``
makes it dumpable again: the agent is an ordinary process. A process-wide policy: the
``serve`` and ``worker`` commands call it, the library never does (an application that
embeds :func:`~cursor_agent_api.server.create_app` may call it itself).

Elsewhere (macOS…) it does nothing, and says so in a debug log. Nor does it keep out an
agent of a server run as root (or with ``CAP_SYS_PTRACE``, ``CAP_SYS_ADMIN`` or
``CAP_PERFMON``), which reads any process.

Example:
    >>> import subprocess, sys
    >>> code = ("import ctypes; from cursor_agent_api.server.non_dumpable import make_non_dumpable; "
    ...         "print(make_non_dumpable(), ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))")  # GET
    >>> out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    >>> out.stdout == "True 0\\n" if sys.platform == "linux" else True
    True
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys

__all__ = ["make_non_dumpable"]

_PR_SET_DUMPABLE = 4
"""``<linux/prctl.h>``."""

log = logging.getLogger(__name__)


def make_non_dumpable() -> bool:
    """Make this process not dumpable (Linux): True if it now is, False where it cannot be.

    On Linux a failure (which the kernel does not give for this call) is a warning: the
    server then runs, as before, with its environment readable by its agents.
    """
    if not sys.platform.startswith("linux"):
        log.debug("not Linux (%s): the process stays dumpable", sys.platform)
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        failed = libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0
        errno = ctypes.get_errno()
    except (OSError, AttributeError) as exc:  # no C library to call, or no prctl in it
        failed, errno = True, getattr(exc, "errno", None) or 0
    if failed:
        log.warning("cannot make this process non-dumpable (prctl: %s): the agents can read "
                    "its environment (/proc/%d/environ)", os.strerror(errno), os.getpid())
        return False
    log.debug("this process is not dumpable: its agents cannot read its environment or memory")
    return True
