"""The owner guard: no agent outlives the process that started it (Linux).

This file is run as a script (``python -I -S _guard.py …``), never imported by the
package: it must start fast and depend on nothing but the standard library and
``groups.py`` beside it (the one /proc reader and group stopper, loaded by its path).

``run OWNER OWNER_START GRACE STATUS_FD -- ARGV…`` — what the runtime starts instead of the
agent (in a new session, so its pid is the agent's process group). It starts the watcher
(below), then ``exec``\\ s the agent in place: the agent keeps this pid, this process group,
the pipes, and its exit status reaches the runtime unchanged. ``STATUS_FD`` is the write end
of a pipe, close-on-exec here: a successful ``exec`` closes it with nothing written; when
the watcher or the agent cannot be started, the guard writes ``STEP ERRNO`` there (``watch``
or ``exec``) and exits 127 without running the agent, so the runtime raises what it raises
without the guard (the classic status-pipe pattern; see :func:`run`).

``watch OWNER OWNER_START PGID PGID_START GRACE`` — the watcher, a fresh interpreter in a
session of its own (outside the agent's group, so stopping the group never stops it; its
command line and environment mention nothing of the agent's). It waits, at no cost, on a
pidfd of the owner and one of the agent. When the owner is gone first (SIGKILL, SIGTERM,
a crash — anything), it sends SIGTERM to the agent's process group, waits GRACE seconds,
then SIGKILL. When the agent exits first, it waits until the group has no live member
(the runtime stops what is left) and exits. A pidfd watches the owner *process*, so the
parent-death-signal pitfall (``PR_SET_PDEATHSIG`` fires when the forking *thread* exits)
does not apply. Identities are checked by start time, so a reused pid is never taken for
the owner or the agent.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time
from importlib.machinery import SourceFileLoader
from types import ModuleType

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NoReturn


def _load_groups() -> ModuleType:
    """``groups.py`` beside this file (the package's one /proc reader and group stopper,
    standard library only), loaded by its path: ``-I`` keeps the package off ``sys.path``."""
    name = "_cursor_agent_api_groups"
    loader = SourceFileLoader(name, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                 "groups.py"))
    module = ModuleType(name)
    module.__file__ = loader.path
    loader.exec_module(module)
    return module


groups = _load_groups()
start_time: Callable[[int | str], int | None] = groups.start_time
group_alive: Callable[[int], bool] = groups.group_alive


def _pidfd(pid: int, start: int) -> int | None:
    """A pidfd of ``pid`` if it is still the process that started at ``start``; else None
    (gone). Raises ``OSError`` when pidfds are not available (then the caller polls)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return None
    if start_time(pid) != start:  # checked after opening: the fd now pins that process
        os.close(fd)
        return None
    return fd


def _alive(pid: int, start: int) -> bool:
    return start_time(pid) == start


def _stop_group(pgid: int, grace: float) -> None:
    groups.stop_groups([pgid], grace=grace, poll=0.05)


def watch(owner: int, owner_start: int, pgid: int, pgid_start: int, grace: float) -> None:
    """The watcher's loop (see the module's text)."""
    try:
        owner_fd = _pidfd(owner, owner_start)
        agent_fd = _pidfd(pgid, pgid_start)
        pidfds = True
    except (OSError, AttributeError):  # no pidfd_open (kernel < 5.3): poll
        owner_fd = agent_fd = None
        pidfds = False
    if (pidfds and owner_fd is None) or (not pidfds and not _alive(owner, owner_start)):
        _stop_group(pgid, grace)
        return
    if pidfds and agent_fd is not None:
        assert owner_fd is not None
        poller = select.poll()
        poller.register(owner_fd, select.POLLIN)
        poller.register(agent_fd, select.POLLIN)
        ready = {fd for fd, _ in poller.poll()}
        if owner_fd in ready:
            _stop_group(pgid, grace)
            return
    elif not pidfds:
        while _alive(pgid, pgid_start):
            if not _alive(owner, owner_start):
                _stop_group(pgid, grace)
                return
            time.sleep(0.25)
    # the agent has exited: wait until its group is empty, unless the owner goes first
    delay = 0.02
    while group_alive(pgid):
        if owner_fd is not None:
            owner_gone = bool(select.select([owner_fd], [], [], delay)[0])
        else:
            time.sleep(delay)
            owner_gone = not _alive(owner, owner_start)
        if owner_gone:
            _stop_group(pgid, grace)
            return
        delay = min(delay * 2, 0.5)


def _start_watcher(owner: str, owner_start: str, me: int, my_start: int | None,
                   grace: str) -> None:
    """Start the watcher (detached, through an intermediate that exits at once); raise
    ``OSError`` if it could not start (a fork, or its interpreter's ``exec``, failed)."""
    status_r, status_w = os.pipe()  # close-on-exec: EOF once the watcher's exec succeeded
    try:
        child = os.fork()
    except OSError:
        os.close(status_r)
        os.close(status_w)
        raise
    if child == 0:
        try:
            os.close(status_r)
            if os.fork() == 0:
                os.setsid()
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                os.closerange(3, status_w)
                os.closerange(status_w + 1, 1 << 16)
                os.execve(sys.executable, [sys.executable, "-I", "-S", os.path.abspath(__file__),
                                           "watch", owner, owner_start, str(me), str(my_start),
                                           grace], {})
        except OSError as exc:
            os.write(status_w, str(exc.errno or 0).encode())
        finally:
            os._exit(0)
    os.close(status_w)
    report = b""
    while chunk := os.read(status_r, 64):
        report += chunk
    os.close(status_r)
    os.waitpid(child, 0)
    if report:
        code = int(report)
        raise OSError(code, os.strerror(code))


def _fail(status_fd: int, step: str, exc: OSError) -> NoReturn:
    """Report a failed ``step`` to the runtime (``STEP ERRNO``) and exit without the agent."""
    os.write(status_fd, f"{step} {exc.errno or 0}".encode())
    os._exit(127)


def run(owner: str, owner_start: str, grace: str, status: str, argv: list[str]) -> None:
    """Start the watcher, then exec the agent in place; a failure of either is written to
    the status pipe (``STATUS_FD``) instead of running the agent without its watcher."""
    status_fd = int(status)
    os.set_inheritable(status_fd, False)  # the agent's exec closes it: EOF means "started"
    me = os.getpid()
    try:
        _start_watcher(owner, owner_start, me, start_time(me), grace)
    except OSError as exc:
        _fail(status_fd, "watch", exc)
    for name in ("SIGPIPE", "SIGXFSZ", "SIGXFZ"):  # Python ignores these; exec would keep that
        sig = getattr(signal, name, None)
        if sig is not None:
            signal.signal(sig, signal.SIG_DFL)
    _close_others(status_fd)
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        _fail(status_fd, "exec", exc)


def _close_others(keep: int) -> None:
    """Close every descriptor but stdio and ``keep`` before the agent's ``exec``: what
    ``subprocess``'s ``close_fds`` does, and libuv's spawn (uvloop's, under uvicorn) does not.
    There the agent inherited its parent's inheritable descriptors, and copies of its own
    stdin, stdout and stderr: an agent that closed its stdout still held it, and the runtime
    never saw the end of its output (audit 4)."""
    for name in os.listdir("/proc/self/fd"):  # (the guard runs where /proc is)
        fd = int(name)
        if fd > 2 and fd != keep:
            with contextlib.suppress(OSError):  # the listing's own one: closed already
                os.close(fd)


def main(args: list[str]) -> None:
    # a host that ignores SIGCHLD (a daemon's idiom) passes that on through exec: children
    # would be reaped by the kernel, and waitpid fail (ECHILD); the agent starts with it too
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a SIGINT now ends us quietly, as the agent
    if len(args) >= 7 and args[0] == "run" and args[5] == "--":
        run(args[1], args[2], args[3], args[4], args[6:])
    elif len(args) == 6 and args[0] == "watch":
        watch(int(args[1]), int(args[2]), int(args[3]), int(args[4]), float(args[5]))
    else:
        os.write(2, b"usage: _guard.py run OWNER START GRACE STATUS_FD -- ARGV... | watch ...\n")
        os._exit(2)


if __name__ == "__main__":
    main(sys.argv[1:])
