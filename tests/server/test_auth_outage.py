"""Signing in and staying signed in while the database cannot be written (a full disk, an
SQLite lock held by another process): reads still work for a browser, as for a token."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from server_helpers import sqlite_write_lock
from starlette.testclient import TestClient

from cursor_agent_api.server import ServerSettings, create_app
from cursor_agent_api.server.auth import Auth

BASE = "http://127.0.0.1:8765"
START = 1_800_000_000.0


class Browser:
    """The app in a TestClient, its auth's wall clock under the test's control."""

    def __init__(self, client: TestClient, auth: Auth, now: list[float]) -> None:
        self.client, self.auth, self.now = client, auth, now
        self.store = auth.store
        self.cookie = ""

    def call(self, fn: Any, *args: Any) -> Any:
        return self.client.portal.call(fn, *args)  # type: ignore[union-attr]

    def sign_in(self, code: str | None = None) -> Any:
        """Open a sign-in link in a fresh browser (no cookie)."""
        self.client.cookies.clear()
        r = self.client.get("/", params={"code": code or self.auth.issue_code()}, follow_redirects=False)
        if "set-cookie" in r.headers:
            self.cookie = r.headers["set-cookie"].split(";")[0]
        return r

    def get(self, path: str) -> Any:
        self.client.cookies.clear()
        return self.client.get(path, headers={"Cookie": self.cookie})

    def last_used_ms(self) -> int:
        from cursor_agent_api.server.auth import _digest

        row = self.call(self.store.auth_session, _digest(self.cookie.split("=", 1)[1]))
        return int(row["last_used_ms"])


@contextlib.contextmanager
def _browser(db_url: str, tmp_path: Path) -> Iterator[Browser]:
    settings = ServerSettings(token="t" * 16, database_url=db_url, roots=(tmp_path,), simulate=True,
                              store_busy_timeout=5.0)
    app = create_app(settings)
    now = [START]
    app.state.auth.clock = lambda: now[0]
    with TestClient(app, base_url=BASE) as client:
        yield Browser(client, app.state.auth, now)


@pytest.fixture
def browser(db_url: str, tmp_path: Path) -> Iterator[Browser]:
    with _browser(db_url, tmp_path) as b:
        yield b


def test_a_session_works_while_its_use_cannot_be_written(browser: Browser) -> None:
    """Before: the sliding expiry's write (once a minute) failed the request with a 503."""
    assert browser.sign_in().status_code == 303
    browser.now[0] += 120  # the last use is two minutes old: this use is written
    browser.store.faults.fail_for(3600)
    # the page's WebSocket is let in (no such chat: it says so), and its requests too
    with browser.client.websocket_connect(BASE.replace("http", "ws") + "/api/chats/nope/stream",
                                          headers={"Cookie": browser.cookie}) as ws:
        assert ws.receive_json()["op"] in ("hello", "error")
    assert browser.get("/api/config").status_code == 200
    browser.call(browser.auth.touches_written)
    assert browser.last_used_ms() == START * 1000  # not written ...
    browser.store.faults.clear()
    browser.now[0] += 30  # ... yet the expiry slid here: not written again within the minute
    assert browser.get("/api/config").status_code == 200 and browser.auth.touches_pending == 0
    browser.now[0] += 60  # a later use writes it
    assert browser.get("/api/config").status_code == 200
    browser.call(browser.auth.touches_written)
    assert browser.last_used_ms() == (START + 210) * 1000


def test_a_request_does_not_wait_for_sqlites_lock_to_note_its_use(tmp_path: Path) -> None:
    """Before: the request waited for the busy timeout, then failed 503 (on SQLite, whatever
    the database of the other tests)."""
    path = tmp_path / "server.sqlite3"
    with _browser(f"sqlite+aiosqlite:///{path}", tmp_path) as browser:
        assert browser.sign_in().status_code == 303
        browser.now[0] += 120
        with sqlite_write_lock(str(path)):
            assert browser.get("/api/config").status_code == 200
            assert browser.auth.touches_pending == 1  # the write waits for the lock, not the request
        browser.call(browser.auth.touches_written)
        assert browser.last_used_ms() == (START + 120) * 1000


def test_a_sign_in_that_fails_on_the_database_leaves_the_code_good(browser: Browser) -> None:
    """Before: the code was spent by the request that failed 503, and the retry was refused."""
    code = browser.auth.issue_code()
    browser.store.faults.fail_writes(1)
    r = browser.sign_in(code)
    assert r.status_code == 503 and "retry shortly" in r.json()["detail"]
    r = browser.sign_in(code)
    assert r.status_code == 303 and r.headers["location"] == "/" and browser.cookie
    assert browser.get("/api/config").status_code == 200
    r = browser.sign_in(code)  # spent now
    assert r.headers["location"] == "/?signin=refused" and "set-cookie" not in r.headers


def test_a_wall_clock_step_neither_kills_nor_stretches_a_login_code() -> None:
    """Before: a step of +400 s killed a 5-minute code; one of -1 h gave it 65 minutes."""
    from cursor_agent_api.server.store import Store

    wall = [START]
    auth = Auth(ServerSettings(token="t" * 16), Store("sqlite+aiosqlite://"), clock=lambda: wall[0])
    code = auth.issue_code(300)
    wall[0] += 400  # NTP steps the wall clock, a second after the code was made
    assert auth.redeem_code(code)
    mono = [0.0]
    auth.code_clock = lambda: mono[0]
    code = auth.issue_code(300)
    wall[0] -= 3600
    mono[0] += 300  # 5 minutes pass
    assert not auth.redeem_code(code)


def test_a_login_codes_clock_counts_time_asleep(monkeypatch: pytest.MonkeyPatch) -> None:
    """Codes are timed by Linux's CLOCK_BOOTTIME, which counts a suspend (CLOCK_MONOTONIC
    stops during one: a code minted before a laptop slept stayed good after it woke; review
    of the merged change). The clock is faked here: a suspend cannot be made in a test."""
    import time as time_module

    from cursor_agent_api.server.store import Store

    if not hasattr(time_module, "CLOCK_BOOTTIME"):
        pytest.skip("CLOCK_BOOTTIME is Linux's")
    boot = [1000.0]
    real = time_module.clock_gettime
    monkeypatch.setattr(time_module, "clock_gettime",
                        lambda clk: boot[0] if clk == time_module.CLOCK_BOOTTIME else real(clk))
    auth = Auth(ServerSettings(token="t" * 16), Store("sqlite+aiosqlite://"))
    code = auth.issue_code(300)
    boot[0] += 3600  # an hour asleep: the monotonic clock did not move
    assert not auth.redeem_code(code)
