"""Fixtures for the web UI tests: a real server (``server_helpers.Server``, agents from the
simulator) and Debian's Chromium driven headless by Playwright through ``executable_path``.

Chromium comes from the OS packages (``scripts/browser.sh`` installs it when it is missing);
Playwright never downloads a browser. The tests skip, saying why, only when Chromium is
absent *and* cannot be installed. Every test starts its own browser with a fresh profile and
checks at the end that no browser, server or agent process of its own is left.
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

from server_helpers import Server, stop_servers

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts" / "web"
CHROMIUM_ENV = "CURSOR_AGENT_API_CHROMIUM"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]
TIMEOUT_MS = 60_000

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
        # --simulate labels the page; --agent-binary (the harness's) points at the same simulator.
        server = Server(tmp_path, db_url, workspace, marker, args=["--simulate", *(args or [])],
                        **kwargs)
        if token is not None:
            server.token = token
        servers.append(server.start())
        return server

    yield make
    stop_servers(servers, marker)


def _browser_processes(profile: Path) -> list[int]:
    needle = str(profile).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "cmdline").read_bytes():
                stat = (entry / "stat").read_text()
                if stat[stat.rfind(")") + 2 :].split()[0] not in ("Z", "X"):
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.fixture
def browser(chromium: str, tmp_path: Path) -> Iterator[Any]:
    """A headless Chromium context with a fresh profile (closed, and checked gone, at the end)."""
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=TIMEOUT_MS)
    profile = tmp_path / "chromium-profile"
    profile.mkdir()
    pw = sync_playwright().start()
    context = None
    try:
        context = pw.chromium.launch_persistent_context(
            str(profile), executable_path=chromium, headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1100, "height": 800}, timeout=TIMEOUT_MS,
        )
        context.set_default_timeout(TIMEOUT_MS)
        yield context
    finally:
        if context is not None:
            context.close()
        pw.stop()
    leftover = _browser_processes(profile)
    for pid in leftover:
        os.kill(pid, signal.SIGKILL)
    assert not leftover, f"browser processes outlived the test: {leftover}"


@pytest.fixture
def shot(request: pytest.FixtureRequest) -> Callable[[Any, str], Path]:
    """Save a screenshot of ``page`` as test-artifacts/web/<test>-<name>.png."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def take(page: Any, name: str) -> Path:
        path = ARTIFACTS / f"{request.node.name}-{name}.png"
        page.screenshot(path=str(path))
        return path

    return take
