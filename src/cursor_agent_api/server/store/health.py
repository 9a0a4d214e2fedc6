"""Whether the store's writes succeed (``GET /api/health``), and the faults tests inject.

Example:
    >>> StoreHealth().view()["status"]
    'ok'
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import StoreUnavailableError
from .ids import now_ms


class StoreFaults:
    """Fault injection for tests: make the store's writes fail as a flaky disk or network would.

    Each injected failure raises :class:`StoreUnavailableError` inside the write's
    transaction (so it is rolled back), counts as a transient failure and marks the
    store degraded, exactly like a real one.

    Example:
        >>> f = StoreFaults(); f.fail_writes(1)
        >>> f.check("events")
        Traceback (most recent call last):
        ...
        cursor_agent_api.server.store.errors.StoreUnavailableError: injected fault: write failed
        >>> f.check("events")
    """

    def __init__(self) -> None:
        self.writes = 0
        self.until = 0.0
        self.run_ends = 0
        self.after_commit: dict[str, int] = {}

    def fail_writes(self, n: int) -> None:
        """The next ``n`` write transactions fail."""
        self.writes = n

    def fail_for(self, seconds: float) -> None:
        """Every write fails for the next ``seconds`` seconds."""
        self.until = time.monotonic() + seconds

    def fail_run_end(self, n: int = 1) -> None:
        """The next ``n`` attempts to record the end of a run fail."""
        self.run_ends = n

    def fail_after_commit(self, purpose: str, n: int = 1) -> None:
        """The next ``n`` writes of ``purpose`` commit, then fail as if the connection had
        dropped during ``COMMIT`` (the writer cannot know whether they were stored)."""
        self.after_commit[purpose] = n

    def clear(self) -> None:
        """No more injected failures."""
        self.writes = self.run_ends = 0
        self.until = 0.0
        self.after_commit.clear()

    def check_committed(self, purpose: str) -> None:
        """After a commit: raise :class:`StoreUnavailableError` if :meth:`fail_after_commit`
        asked for it.

        Example:
            >>> f = StoreFaults(); f.fail_after_commit("events")
            >>> f.check_committed("run_end"); f.check_committed("events")  # doctest: +ELLIPSIS
            Traceback (most recent call last):
            ...
            cursor_agent_api.server.store.errors.StoreUnavailableError: injected fault: ...
            >>> f.check_committed("events")
        """
        left = self.after_commit.get(purpose, 0)
        if left > 0:
            self.after_commit[purpose] = left - 1
            raise StoreUnavailableError("injected fault: the connection dropped during COMMIT")

    def check(self, purpose: str) -> None:
        """Raise :class:`StoreUnavailableError` if a failure is due for a write of ``purpose``."""
        if purpose == "run_end" and self.run_ends > 0:
            self.run_ends -= 1
            raise StoreUnavailableError("injected fault: the run's end could not be written")
        if self.until and time.monotonic() < self.until:
            raise StoreUnavailableError("injected fault: the database is unavailable")
        if self.writes > 0:
            self.writes -= 1
            raise StoreUnavailableError("injected fault: write failed")


@dataclass(slots=True)
class StoreHealth:
    """Whether the last write succeeded; since when and why not (``GET /api/health``).

    ``probe``, when given, is asked at each look (it must be cheap): a reason it returns
    makes the store degraded even when no write was tried (the database file deleted).

    Example:
        >>> h = StoreHealth(); h.failed("database is locked"); h.view()["status"]
        'degraded'
        >>> h.succeeded(); h.view()["status"], h.view()["reason"]
        ('ok', None)
        >>> StoreHealth(probe=lambda: "the file is gone").view()["reason"]
        'the file is gone'

    A failure seen by two layers (the store's transaction, then the API's error handler)
    counts once when both pass the error:

        >>> e = OSError("disk I/O error"); h.failed("disk", e); h.failed("disk", e)
        >>> h.view()["failed_writes"]
        1
    """

    degraded_since_ms: int | None = None
    reason: str | None = None
    failures: int = 0
    probe: Callable[[], str | None] | None = None
    _counted: BaseException | None = field(default=None, repr=False)

    @property
    def degraded(self) -> bool:
        """True from a transient failure until the next write that succeeds (or while the
        ``probe`` finds something wrong)."""
        if self.probe is not None:
            why = self.probe()
            if why is not None:
                if self.degraded_since_ms is None:
                    self.degraded_since_ms = now_ms()
                self.reason = why
        return self.degraded_since_ms is not None

    def failed(self, reason: str, error: BaseException | None = None) -> None:
        """Note a transient failure (``error``: the exception, counted once however many
        layers note it)."""
        if self.degraded_since_ms is None:
            self.degraded_since_ms = now_ms()
        self.reason = reason
        if error is not None:
            if error is self._counted:
                return
            self._counted = error
        self.failures += 1

    def succeeded(self) -> None:
        """Note a write that went through."""
        self.degraded_since_ms = None
        self.reason = None
        self.failures = 0
        self._counted = None

    def view(self) -> dict[str, Any]:
        """The JSON form."""
        degraded = self.degraded
        return {
            "status": "degraded" if degraded else "ok",
            "degraded_since_ms": self.degraded_since_ms,
            "reason": self.reason,
            "failed_writes": self.failures,
        }
