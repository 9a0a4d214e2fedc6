"""Processes and process groups on this machine: the one ``/proc`` reader, and one way to stop.

Everything that reads ``/proc/<pid>/stat`` (start times, process-group membership, zombie
state) or stops a process group ("the signal, a grace period, then SIGKILL") uses this
module: the runtime (:mod:`.process`, :mod:`.run`'s exit handler), the server
(:mod:`cursor_agent_api.server.procs`) and the owner guard.

Standard library only, and no import from the package: the owner guard (``_guard.py``,
run as ``python -I -S``, which cannot import the package) loads this file by its path.

Without ``/proc`` (macOS), membership is unknown (``None``) and liveness falls back to
``killpg(pgid, 0)``.

Example:
    >>> import os
    >>> start_time(os.getpid()) == start_time(os.getpid()) is not None
    True
    >>> group_alive(os.getpgrp()), signal_group(2 ** 22 + 12345, 0)
    (True, False)
"""

from __future__ import annotations

import errno
import os
import signal
import time

TYPE_CHECKING = False  # typing is not imported: the owner guard loads this file at startup
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Protocol, TypeVar

    class _HasClear(Protocol):
        def clear(self) -> None: ...

    _Clearable = TypeVar("_Clearable", bound=_HasClear)

__all__ = [
    "HAVE_PROC",
    "group_alive",
    "group_members",
    "held_by_this_process",
    "live_start_time",
    "pid_namespace",
    "process_alive",
    "signal_group",
    "start_time",
    "stat_fields",
    "stop_groups",
]

HAVE_PROC = os.path.isdir("/proc/self")
"""True where ``/proc`` can be read (Linux)."""

_DEAD = (b"Z", b"X")
"""States (field 3) of a process that has exited: a zombie not yet reaped, or dead."""


def pid_namespace() -> str:
    """This process's PID namespace: the inode of ``/proc/self/ns/pid`` (``""`` without
    ``/proc``). Two processes of one host see each other's pids only if they share it (two
    containers on the host's network, with one host name, do not).

    Example:
        >>> pid_namespace() == (str(os.stat("/proc/self/ns/pid").st_ino) if HAVE_PROC else "")
        True
    """
    if not HAVE_PROC:
        return ""
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return ""


def stat_fields(pid: int | str) -> list[bytes] | None:
    """The fields of ``/proc/PID/stat`` after the command name, ``None`` if it is gone.

    Index 0 is field 3 (the state: ``R``, ``S``, ``Z``…), index 2 the process group,
    index 19 the start time. The command name (field 2) may hold spaces and parentheses,
    so the split starts after its last ``)``.

    Example:
        >>> fields = stat_fields(os.getpid())
        >>> int(fields[2]) == os.getpgrp() if fields is not None else True
        True
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except (OSError, ValueError):
        return None
    end = stat.rfind(b")")
    if end < 0:
        return None
    return stat[end + 2:].split()


def start_time(pid: int | str) -> int | None:
    """Start time of ``pid`` (field 22, clock ticks since boot), ``None`` if it is gone.

    Example:
        >>> start_time(2 ** 22 + 12345) is None
        True
    """
    fields = stat_fields(pid)
    try:
        return int(fields[19]) if fields is not None else None
    except (IndexError, ValueError):
        return None


def live_start_time(pid: int | str) -> int | None:
    """Start time of ``pid`` while it runs: ``None`` if it is gone or has exited and
    waits to be reaped (a zombie, which keeps its pid and start time until then).

    Example:
        >>> live_start_time(os.getpid()) == start_time(os.getpid()) is not None
        True
        >>> live_start_time(2 ** 22 + 12345) is None
        True
    """
    fields = stat_fields(pid)
    if fields is None or fields[0] in _DEAD:
        return None
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def process_alive(pid: int, started: int | None) -> bool:
    """Whether ``pid`` still runs as the process that started at ``started`` (clock ticks).

    With ``/proc``: the pid runs (not a zombie) with that start time (any, if ``started`` is
    ``None``). Without ``/proc`` (macOS), no start time can be read: the pid alone decides
    (``kill(pid, 0)``), so a pid reused by another process counts as alive — a run stays
    owned until that process ends too.

    Example:
        >>> process_alive(os.getpid(), start_time(os.getpid())), process_alive(2 ** 22 + 12345, None)
        (True, False)
    """
    if pid <= 0:
        return False
    now = live_start_time(pid)
    if now is not None:
        return started is None or now == started
    if HAVE_PROC:
        return False
    try:
        os.kill(pid, 0)
    except PermissionError:
        return True
    except OSError:  # ProcessLookupError: gone
        return False
    return True


def group_members(pgid: int, not_before: int | None = None) -> list[int] | None:
    """Pids of the live (non-zombie) processes of group ``pgid``; ``None`` without ``/proc``.

    With ``not_before`` (clock ticks since boot), only processes that started then or later.

    Example:
        >>> os.getpid() in (group_members(os.getpgrp()) or [os.getpid()])
        True
    """
    if not HAVE_PROC:
        return None
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    wanted = str(pgid).encode()
    members: list[int] = []
    for entry in entries:
        if not entry.isdigit():
            continue
        fields = stat_fields(entry)
        if fields is None or len(fields) < 20 or fields[2] != wanted or fields[0] in _DEAD:
            continue
        if not_before is not None and int(fields[19]) < not_before:
            continue
        members.append(int(entry))
    return members


def group_alive(pgid: int) -> bool:
    """True while any live process is in group ``pgid`` (a zombie does not count).

    Example:
        >>> group_alive(2 ** 22 + 12345)
        False
    """
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    members = group_members(pgid)
    return True if members is None else bool(members)


def signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to every process of group ``pgid``; False if the group is gone.

    Example:
        >>> signal_group(2 ** 22 + 12345, 0)
        False
    """
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except OSError as exc:  # pragma: no cover - EPERM on a reused id
        if exc.errno == errno.EPERM:
            return False
        raise
    return True


def _send(pgid: int, sig: int, not_before: int | None) -> int:
    """``sig`` to the group (or, with ``not_before``, to each of its members that started
    then or later); how many processes it reached (1 per group where that is unknown)."""
    if not_before is None:
        members = group_members(pgid)
        if not signal_group(pgid, sig):
            return 0
        return 1 if members is None else max(len(members), 1)
    sent = 0
    for pid in group_members(pgid, not_before) or []:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            continue
        sent += 1
    return sent


def _alive(pgid: int, not_before: int | None) -> bool:
    if not_before is None:
        return group_alive(pgid)
    return bool(group_members(pgid, not_before))


def stop_groups(
    pgids: Iterable[int],
    *,
    grace: float,
    sig: int = signal.SIGTERM,
    not_before: int | None = None,
    poll: float = 0.02,
    sleep: Callable[[float], object] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """Stop process groups: ``sig`` to each, up to ``grace`` seconds for all to go, then
    SIGKILL to what is left and up to ``grace`` seconds more. Blocks (from async code:
    ``await asyncio.to_thread(stop_groups, …)``).

    With ``not_before`` (a start time, clock ticks since boot) only the members that started
    then or later are signalled, one by one: a group id reused by someone else's processes
    is never touched. Returns how many processes the first signal reached (0: nothing was
    left to stop).

    Example:
        >>> import subprocess, sys
        >>> p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
        ...                      start_new_session=True)
        >>> stop_groups([p.pid], grace=2.0), p.wait()
        (1, -15)
        >>> stop_groups([p.pid], grace=2.0)
        0
    """
    groups = list(pgids)
    found = sum(_send(pgid, sig, not_before) for pgid in groups)
    if not found:
        return 0
    for then in (signal.SIGKILL, None):
        deadline = clock() + grace
        while True:
            left = [pgid for pgid in groups if _alive(pgid, not_before)]
            if not left:
                return found
            if clock() >= deadline:
                break
            sleep(poll)
        if then is not None:
            for pgid in left:
                _send(pgid, then, not_before)
    return found


def held_by_this_process(registry: _Clearable) -> _Clearable:
    """``registry`` (what this process stops or releases at its exit: running agents, files
    it changed) emptied in a child it forks without ``exec``: what the parent holds is the
    parent's, and the child's normal exit must not stop it. Returns ``registry``.

    Example:
        >>> live = held_by_this_process(set())
        >>> live.add(1)
        >>> child = os.fork()
        >>> if child == 0:
        ...     os._exit(len(live))  # (empty here)
        >>> os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]), live
        (0, {1})
    """
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=registry.clear)
    return registry

