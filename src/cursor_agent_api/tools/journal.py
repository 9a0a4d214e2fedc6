"""The crash-safe journal both of a turn's changes outside the project use: the workspace's
``.cursor`` files (:mod:`.inject`) and the CLI's MCP approvals file (:mod:`.approvals`).

What lives here, written once for both:

* :class:`Journal` — one changed target's directory (mode 0700) with its ``state.json``
  (mode 0600, replaced at once after an ``fsync``) beside a ``lock`` taken with ``flock``. A
  state that is not JSON, or not of the shape its owner writes, is moved aside to
  ``state.bad.json`` with a warning and counts as none;
* holders: :func:`this_holder` (this process's pid and start time) and :func:`alive` (a pid
  reused by another process counts as dead);
* :func:`sweep` — at every turn's start, each journal under a root is locked and its dead
  holders released by its owner's function; a failure is one warning, never the turn's;
* a journal exists only while it lists holders: the last one out removes its directory
  (:meth:`Journal.delete`), and a sweep removes one that holds nothing;
* :data:`HELD` — what this process holds (files it changed, the relay's socket directories),
  released by an ``atexit`` hook on a normal exit.

What does not: what a state holds and how a target is restored (the two owners).

Example:
    >>> import tempfile
    >>> journal = Journal(Path(tempfile.mkdtemp()) / "j", what="example")
    >>> with journal.locked():
    ...     journal.save({"holders": {"t": this_holder()}})
    ...     state = journal.load()
    >>> alive(state["holders"]["t"]), journal.delete(), journal.load()
    (True, None, None)
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

from ..files import lock_file, replace_file
from ..runtime.groups import held_by_this_process, process_alive, start_time

__all__ = ["HELD", "Journal", "alive", "sweep", "this_holder"]

log = logging.getLogger("cursor_agent_api.tools")


def this_holder() -> dict[str, Any]:
    """This process as a journal's holder: its pid and its start time (``None`` without
    ``/proc``)."""
    return {"pid": os.getpid(), "start": start_time(os.getpid())}


def alive(holder: Mapping[str, Any]) -> bool:
    """Whether the holder's process still runs (the same process: its pid and start time;
    without ``/proc``, the pid alone: :func:`~cursor_agent_api.runtime.groups.process_alive`)."""
    pid, started = holder.get("pid"), holder.get("start")
    if not isinstance(pid, int) or not isinstance(started, (int, type(None))):
        return False
    return process_alive(pid, started)


def _is_dict(state: Any) -> bool:
    return isinstance(state, dict)


class Journal:
    """One target's journal: ``load``/``save``/``delete`` its state under :meth:`locked`.

    ``well_formed`` says whether a loaded state has the shape its owner writes; ``what``
    names the journal in warnings (``"injection"``, ``"approval"``).
    """

    def __init__(self, directory: Path, *, what: str,
                 well_formed: Callable[[Any], bool] = _is_dict) -> None:
        self.directory = directory
        self.path = directory / "state.json"
        self.what = what
        self.well_formed = well_formed

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the journal's ``flock`` (made with its directory, mode 0700, if needed).

        :meth:`delete` removes the directory, its ``lock`` with it: a process that was waiting
        on that file then holds a lock nobody else can find, so after locking, the path must
        still name the locked file; otherwise the lock is taken again on a new one (as
        :func:`~cursor_agent_api.files.lock_file` does).
        """
        while True:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            try:
                fd = lock_file(self.directory / "lock")  # the file now there, if it was removed
                break
            except FileNotFoundError:  # the directory was removed meanwhile
                continue
        try:
            yield
        finally:
            os.close(fd)  # releases the lock

    def load(self) -> dict[str, Any] | None:
        """The state; ``None`` when there is none, or when it was malformed (moved aside)."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return None
        try:
            state = json.loads(data)
        except ValueError:
            state = None
        if self.well_formed(state):
            return dict(state)
        log.warning("the %s journal %s is not in the shape this version writes: it is moved aside "
                    "to state.bad.json, and what it lists is left as it is", self.what, self.path)
        with contextlib.suppress(OSError):
            os.replace(self.path, self.directory / "state.bad.json")
        return None

    def save(self, state: dict[str, Any]) -> None:
        """Replace the state at once (mode 0600), after an ``fsync``."""
        replace_file(self.path, json.dumps(state).encode(), mode=0o600, tmp=self.path.with_suffix(".tmp"))

    def delete(self) -> None:
        """Remove the state, and the journal's directory with its ``lock`` (call it under
        :meth:`locked`): a journal is kept only while it lists holders, so that workspaces
        used once (a test's temporary directory) leave nothing behind for every later sweep
        to open. A directory that holds anything else (``state.bad.json``) stays."""
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        with contextlib.suppress(OSError):
            (self.directory / "lock").unlink()
        with contextlib.suppress(OSError):
            self.directory.rmdir()


def sweep(root: Path, release_dead: Callable[[Journal], None], journal: Callable[[Path], Journal]) -> None:
    """Lock each journal under ``root`` (``journal(directory)`` makes it) and let
    ``release_dead`` release the holders whose process died. A journal that cannot be cleaned
    is one warning: the turn that sweeps goes on.

    Example:
        >>> import tempfile
        >>> sweep(Path(tempfile.mkdtemp()), lambda j: None, lambda d: Journal(d, what="example"))
    """
    try:
        entries = list(root.iterdir())
    except FileNotFoundError:
        return
    for directory in entries:
        if not directory.is_dir():
            continue
        found = journal(directory)
        try:
            with found.locked():
                release_dead(found)
                if not found.path.exists():  # nothing held (left by a version that kept them)
                    found.delete()
        except Exception as e:  # OSError, InjectionError, or a bug: never the sweeping turn's
            log.warning("could not clean the %s journal %s (%s: %s)", found.what, directory,
                        type(e).__name__, e)


class _Exits(Protocol):
    def exit(self) -> None: ...


class HeldAtExit:
    """What this process holds (anything with ``exit()``), released at a normal exit (a
    forked child holds none of its parent's, and gets a lock of its own: one a thread of the
    parent held at the fork would never be released in the child)."""

    def __init__(self) -> None:
        self._held: dict[int, _Exits] = held_by_this_process({})
        self._lock = threading.Lock()
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._new_lock)
        atexit.register(self.release_all)

    def _new_lock(self) -> None:
        self._lock = threading.Lock()

    def hold(self, holder: _Exits) -> None:
        with self._lock:
            self._held[id(holder)] = holder

    def drop(self, holder: _Exits) -> None:
        with self._lock:
            self._held.pop(id(holder), None)

    def release_all(self) -> None:
        with self._lock:
            held = list(self._held.values())
        for holder in held:
            with contextlib.suppress(Exception):
                holder.exit()


HELD = HeldAtExit()
"""The injections and approval entries this process holds (and the relay's socket directories)."""
