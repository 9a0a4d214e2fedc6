"""Fixtures for the web UI tests: a real server (``server_helpers.Server``, agents from the
simulator) and Debian's Chromium driven headless by Playwright through ``executable_path``.

Chromium comes from the OS packages (``scripts/browser.sh`` installs it when it is missing);
Playwright never downloads a browser. The tests skip, saying why, only when Chromium is
absent *and* cannot be installed. One browser serves a module's tests; every
test gets a fresh context in it (cookies, storage and permissions of its own, as a fresh
profile) and checks at the end that no server or agent process of its own is left; the
module checks that no browser process is left.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "server"))  # reuse the server harness
sys.path.insert(0, str(Path(__file__).parent))  # netproxy

from browser_launch import BROWSER_MARKER_ENV, CHROMIUM_ARGS, TIMEOUT_MS, browser_processes
from server_helpers import Server, stop_servers

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts" / "web"
CHROMIUM_ENV = "CURSOR_AGENT_API_CHROMIUM"

SCRIPT_FILE = (
    "<h1>not a heading</h1>\n"
    "<script>window.__pwned = 'script';</script>\n"
    "<img src=x onerror=\"window.__pwned = 'img'\">\n"
    "TODO: keep this inert\n"
)


@pytest.fixture(scope="session")
def chromium() -> str:
    """The path of the OS's Chromium, installed by scripts/browser.sh if need be."""
    path = os.environ.get(CHROMIUM_ENV, "/usr/bin/chromium")
    if os.access(path, os.X_OK):
        return path
    found = shutil.which("chromium")
    if found:
        return found
    try:
        out = subprocess.run(
            [str(REPO / "scripts" / "browser.sh")], capture_output=True, text=True, timeout=900
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        pytest.skip(f"Chromium is not installed and scripts/browser.sh could not run: {e}")
    if out.returncode != 0 or not os.access(out.stdout.strip() or path, os.X_OK):
        pytest.skip(
            "Chromium is not installed and cannot be installed here "
            f"(scripts/browser.sh: {out.stderr.strip()[-300:]})"
        )
    return out.stdout.strip() or path


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The allowed root, with a project holding a notes file and a file full of markup."""
    root = tmp_path / "root"
    (root / "project").mkdir(parents=True)
    (root / "project" / "notes.txt").write_text("hello\nTODO: write tests\n")
    (root / "project" / "evil.html").write_text(SCRIPT_FILE)
    return root.resolve()


@pytest.fixture
def make_server(tmp_path: Path, workspace: Path) -> Iterator[Callable[..., Server]]:
    """Start ``serve`` subprocesses (all stopped at the end); no agent may outlive the test."""
    marker = uuid.uuid4().hex
    db_url = f"sqlite+aiosqlite:///{tmp_path / 'server.sqlite3'}"
    servers: list[Server] = []

    def make(*, token: str | None = None, args: list[str] | None = None, **kwargs: Any) -> Server:
        # --simulate: the page is labelled, and serve runs the bundled simulator (the harness
        # then passes no --agent-binary: the pair is refused).
        server = Server(tmp_path, db_url, workspace, marker, args=["--simulate", *(args or [])],
                        **kwargs)
        if token is not None:
            server.token = token
        servers.append(server.start())
        return server

    yield make
    stop_servers(servers, marker)


@pytest.fixture(scope="module")
def chromium_browser(chromium: str) -> Iterator[Any]:
    """One headless Chromium for a module's tests: starting it is the slow part of a browser
    test. Each test gets a fresh context of its own (``browser``). At the end, no process of
    this browser (found by a marker in its environment) is left.

    Not for the whole session: Playwright's sync API runs an event loop in this thread while
    it is started, and ``asyncio.run`` fails under it, so no test of another module (which
    pytest-xdist may run next in the same worker) may run while it is up."""
    from playwright.sync_api import sync_playwright

    marker = uuid.uuid4().hex
    pw = sync_playwright().start()
    browser = None
    try:
        browser = pw.chromium.launch(
            executable_path=chromium, headless=True, args=CHROMIUM_ARGS, timeout=TIMEOUT_MS,
            env={**os.environ, BROWSER_MARKER_ENV: marker},
        )
        yield browser
    finally:
        if browser is not None:
            browser.close()
        pw.stop()
    leftover = browser_processes(marker)
    for pid in leftover:
        os.kill(pid, signal.SIGKILL)
    assert not leftover, f"browser processes outlived the module: {leftover}"


@pytest.fixture
def browser(chromium_browser: Any) -> Iterator[Any]:
    """A fresh browser context (its own cookies, storage, permissions and cache, as a new
    profile has), closed at the end with every page in it; its pages are checked closed."""
    from playwright.sync_api import expect

    expect.set_options(timeout=TIMEOUT_MS)
    context = chromium_browser.new_context(viewport={"width": 1100, "height": 800})
    context.set_default_timeout(TIMEOUT_MS)
    try:
        yield context
    finally:
        context.close()
    assert chromium_browser.is_connected(), "the browser died during the test"
    assert context not in chromium_browser.contexts


@pytest.fixture
def shot(request: pytest.FixtureRequest) -> Callable[[Any, str], Path]:
    """Save a screenshot of ``page`` as test-artifacts/web/<test>-<name>.png."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def take(page: Any, name: str) -> Path:
        path = ARTIFACTS / f"{request.node.name}-{name}.png"
        page.screenshot(path=str(path))
        return path

    return take


@pytest.fixture
def page(make_server: Any, browser: Any) -> Any:
    """A page of a new server, signed in with its token: for tests that drive the page's own
    modules (``/js/timeline.js``, ``/js/markdown.js``) rather than a chat."""
    server = make_server()
    page = browser.new_page()
    page.goto(f"{server.url}/?token={server.token}")
    return page
