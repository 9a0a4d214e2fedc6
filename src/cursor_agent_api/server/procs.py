"""Process groups left behind by a crashed server: recognise ours, stop them.

A run records its agent's pid (== process group id) and the process's start
time (``/proc/<pid>/stat`` field 22, clock ticks since boot). After a crash,
:func:`stop_recorded_group` stops only processes of that group that started
no earlier than the recorded leader — so a pid or group id reused by someone
else's process is never signalled. (Linux does not reuse a pid while a
process group of that id still has members; a member that started before our
leader cannot be part of our group.)

Linux only (``/proc``); elsewhere the check finds nothing and signals nothing (a recorded
group id without a start time proves nothing: after pid reuse it may be a stranger's group),
while :func:`identity_alive` falls back to the pid alone.

Example:
    >>> import os
    >>> process_start_time(os.getpid()) is not None
    True
    >>> process_start_time(2**22 + 12345) is None
    True
"""

from __future__ import annotations

import asyncio
import os
import socket

from ..runtime import groups
from ..runtime.groups import pid_namespace, process_alive, start_time


def process_start_time(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot, or ``None`` if it is gone.

    Example:
        >>> isinstance(process_start_time(1), (int, type(None)))
        True
    """
    return start_time(pid)


def group_members(pgid: int, not_before: int) -> list[int]:
    """Live, non-zombie processes of group ``pgid`` started at or after ``not_before`` ticks.

    Example:
        >>> os.getpid() in group_members(os.getpgrp(), 0)
        True
    """
    return groups.group_members(pgid, not_before) or []


async def stop_recorded_group(
    pgid: int, not_before: int | None, *, grace: float = 3.0, poll: float = 0.05
) -> int:
    """Stop what is left of our process group: SIGTERM, then SIGKILL after ``grace``.

    Returns how many processes were found. With ``not_before`` unknown
    (``None``) nothing is signalled: we cannot prove the group is ours.
    (:func:`~cursor_agent_api.runtime.groups.stop_groups`, in a thread.)

    Example:
        >>> asyncio.run(stop_recorded_group(2**22 + 12345, 0))
        0
    """
    if not_before is None or pgid <= 1 or pgid == os.getpgrp():
        return 0
    return await asyncio.to_thread(
        groups.stop_groups, [pgid], grace=grace, not_before=not_before, poll=poll)


def server_identity() -> str:
    """Who owns a run: ``host:pid:start-time`` of this server process, with ``@namespace``
    (:func:`~cursor_agent_api.runtime.groups.pid_namespace`) after the start time where there
    is one.

    Example:
        >>> server_identity().split(":")[1] == str(os.getpid())
        True
    """
    pid = os.getpid()
    ns = pid_namespace()
    return f"{socket.gethostname()}:{pid}:{process_start_time(pid)}" + (f"@{ns}" if ns else "")


def identity_alive(identity: str, *, certain: bool = False) -> bool | None:
    """Is the server process named by :func:`server_identity` still running?

    ``None`` when it cannot be told: the identity is from another host (or malformed).
    A server that was killed but not yet reaped by its parent (a zombie) is not running:
    its pid and start time stay in ``/proc`` until then, but it owns nothing any more.
    Without ``/proc`` (macOS) the start time is ``None`` and the pid alone decides
    (:func:`~cursor_agent_api.runtime.groups.process_alive`): a dead server's pid taken by
    another process keeps its runs owned until that process ends.

    An identity of another PID namespace of this host (another container with the same host
    name), or one written without its namespace (an older server), is looked up in this one
    all the same: that is how a server restarted in a new container ends its previous
    process's runs. With ``certain``, such an identity cannot be told (``None``): what asks
    on its own, on a timer (:mod:`.dispatch.dead_owners`), must not take a live server of
    another namespace for a dead one.

    Example:
        >>> identity_alive(server_identity()), identity_alive(server_identity(), certain=True)
        (True, True)
        >>> identity_alive("another-host:1:1") is None
        True
        >>> host = socket.gethostname()
        >>> identity_alive(f"{host}:999999999:1@1"), identity_alive(f"{host}:999999999:1@1", certain=True)
        (False, None)
    """
    parts = identity.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    host, pid, start = parts
    start, _, ns = start.partition("@")
    if host != socket.gethostname() or not (start.isdigit() or start == "None"):
        return None
    if certain and ns != pid_namespace():
        return None
    return process_alive(int(pid), int(start) if start.isdigit() else None)
