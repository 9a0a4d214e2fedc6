"""How the web tests launch Chromium, shared by the module's browser (``conftest.py``) and the
tests that launch one of their own (``test_sign_out_channel.py``'s, with the back-forward cache
on): its arguments, its timeout, and the marker in its environment by which no process of it
may outlive its test. A module of its own: ``from conftest import`` in a test module finds
whichever ``conftest`` pytest imported first (``tests/server``'s, in a whole run).
"""

from __future__ import annotations

from pathlib import Path

BROWSER_MARKER_ENV = "CURSOR_AGENT_API_TEST_BROWSER"
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


def browser_processes(marker: str) -> list[int]:
    """Live processes whose environment holds ``marker`` (the browser and all its children)."""
    needle = f"{BROWSER_MARKER_ENV}={marker}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes():
                stat = (entry / "stat").read_text()
                if stat[stat.rfind(")") + 2 :].split()[0] not in ("Z", "X"):
                    found.append(int(entry.name))
        except OSError:
            continue
    return found
