"""How the simulator dies, like the real CLI: SIGINT -> ``Aborting operation...`` on stderr and
exit 130; SIGTERM -> exit 143, silently. Output already written stays; nothing more is written
(no ``result``), and the chat's run lock is dropped.

Also the ``ignore-sigterm`` fault (SIGTERM and SIGINT ignored, plus a child process in the
same process group that ignores them too, so only a SIGKILL of the group ends both), the
``close-output`` fault (:func:`close_output`) and :func:`wait_forever` for the faults that
never exit on their own.

Example:
    >>> exit_code_for(signal.SIGINT), exit_code_for(signal.SIGTERM)
    (130, 143)
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from types import FrameType

from .messages import ABORTING

ORPHAN_GRACE_S = 60.0
"""How long the ``ignore-sigterm`` child outlives its parent before it gives up by itself
(a safety net: a client that kills the process group ends it at once)."""

_CHILD_CODE = """
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGINT, signal.SIG_IGN)
parent = os.getppid()
orphaned_at = None
while True:
    time.sleep(0.2)
    if os.getppid() != parent:
        orphaned_at = orphaned_at or time.monotonic()
        if time.monotonic() - orphaned_at > float(sys.argv[1]):
            sys.exit(0)
"""


def exit_code_for(signum: int) -> int:
    """128 + the signal number: the shell convention the real CLI follows.

    Example:
        >>> exit_code_for(2)
        130
    """
    return 128 + int(signum)


def install(on_exit: Callable[[], None]) -> None:
    """SIGINT and SIGTERM handlers that run ``on_exit`` (e.g. release a lock) and leave at once.

    Example::

        signals.install(chat.release)   # SIGINT -> "Aborting operation...", exit 130
    """

    def handler(signum: int, frame: FrameType | None) -> None:
        try:
            on_exit()
        finally:
            if signum == signal.SIGINT:
                with contextlib.suppress(OSError):
                    os.write(2, (ABORTING + "\n").encode())
            os._exit(exit_code_for(signum))

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)


def ignore_termination() -> subprocess.Popen[bytes]:
    """The ``ignore-sigterm`` fault: ignore SIGTERM and SIGINT here, and start a child in
    this process group that ignores them too. Returns the child.

    Example::

        child = signals.ignore_termination()   # now only SIGKILL of the group ends both
    """
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return subprocess.Popen(
        [sys.executable, "-c", _CHILD_CODE, str(ORPHAN_GRACE_S)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def close_output() -> None:
    """The ``close-output`` fault: flush and close stdout and stderr (the descriptors, so no
    process holds them any more: the reader sees their end) while this process lives on.

    Example::

        writer.emit(init); signals.close_output(); signals.wait_forever()
    """
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    for fd in (1, 2):
        with contextlib.suppress(OSError):
            os.close(fd)


def wait_forever() -> None:
    """Block until a signal ends the process (the handlers exit; SIGKILL always does).

    Example::

        writer.emit(result); signals.wait_forever()   # hang-after-result
    """
    while True:
        time.sleep(3600)
