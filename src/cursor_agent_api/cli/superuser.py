"""The warning ``serve`` and ``worker`` give when their agents can read their secrets anyway.

Both make themselves not dumpable (:mod:`cursor_agent_api.server.non_dumpable`): an agent
of the same user then cannot read their environment (the token, the database URL and its
password) in ``/proc/PID/environ``, nor their memory. A process with ``CAP_SYS_PTRACE``
(or ``CAP_SYS_ADMIN``, ``CAP_PERFMON``) reads any process all the same, and the agents get
those capabilities when the command runs as root (a child of root has every capability of
the bounding set) or holds them as ambient capabilities. Then the command says so, once,
at start: the remedy is to run it as an ordinary user. Root in a container that withholds
those capabilities (Docker's default) is not warned: its agents cannot read it.

Example:
    >>> status = "CapBnd:\\t000001ffffffffff\\nCapAmb:\\t0000000000000000\\n"
    >>> print(agents_read_secrets_warning("its token", euid=0, status=status))
    ... # doctest: +NORMALIZE_WHITESPACE
    warning: running as root: the agents it starts run as root too and can read its token
    (/proc/PID/environ, its memory) whatever it does; run it as an ordinary user
    >>> agents_read_secrets_warning("its token", euid=1000, status=status) is None
    True
"""

from __future__ import annotations

import os

__all__ = ["agents_read_secrets_warning"]

_BYPASSING = {"CAP_SYS_PTRACE": 19, "CAP_SYS_ADMIN": 21, "CAP_PERFMON": 38}
"""The capabilities that read any process's ``/proc/PID/environ``, dumpable or not."""


def _capabilities(status: str, field: str) -> int | None:
    for line in status.splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1], 16)
    return None


def _own_status() -> str:
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            return f.read()
    except OSError:  # not Linux: nothing says what a child of root may not do
        return ""


def agents_read_secrets_warning(secrets: str, *, euid: int | None = None,
                                status: str | None = None) -> str | None:
    """The one-line warning when the agents this process starts could read ``secrets``
    (its words: "its token and database URL"), else ``None``. ``euid`` and ``status``
    (``/proc/self/status``'s text) default to this process's.

    Example:
        >>> ambient = "CapBnd:\\t000001ffffffffff\\nCapAmb:\\t0000000000080000\\n"  # bit 19
        >>> agents_read_secrets_warning("its token", euid=1000, status=ambient)
        ... # doctest: +ELLIPSIS
        'warning: running with CAP_SYS_PTRACE (ambient): the agents it starts have it too ...'
        >>> docker = "CapBnd:\\t00000000a80425fb\\nCapAmb:\\t0000000000000000\\n"
        >>> agents_read_secrets_warning("its token", euid=0, status=docker) is None
        True
    """
    euid = os.geteuid() if euid is None else euid
    status = _own_status() if status is None else status
    given = _capabilities(status, "CapBnd" if euid == 0 else "CapAmb")
    if given is None:  # unknown: root's children may do anything; a user's, what they do
        given = -1 if euid == 0 else 0
    held = [name for name, bit in _BYPASSING.items() if given >> bit & 1]
    if not held:
        return None
    where = f"{secrets} (/proc/PID/environ, its memory) whatever it does"
    if euid == 0:
        return (f"warning: running as root: the agents it starts run as root too and can read "
                f"{where}; run it as an ordinary user")
    return (f"warning: running with {', '.join(held)} (ambient): the agents it starts have it "
            f"too and can read {where}; start it without")
