"""``scripts/demo.sh``'s guards, run with stand-ins for what it starts (setup, the command line
and the server): a second demo, a busy port, a read-only clone, no writable directory."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# the command line's turn and list, then a server that says it runs (fifo served) and waits to
# be let go (fifo stop), as the real one serves until Ctrl-C
CLI = """#!/bin/sh
case "$1" in
  sessions) echo '{"chat_id": "0"}' ;;
  serve) [ -p "$ROOT/served" ] && { echo > "$ROOT/served"; cat "$ROOT/stop" > /dev/null; } ;;
esac
exit 0
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A clone with demo.sh, the demo workspace and stand-ins."""
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "demo.sh", root / "scripts" / "demo.sh")
    (root / "scripts" / "setup.sh").write_text("#!/bin/sh\nexit 0\n")
    (root / "scripts" / "setup.sh").chmod(0o755)
    shutil.copytree(REPO / "examples" / "demo-workspace", root / "examples" / "demo-workspace")
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / ".venv" / "bin" / "python").symlink_to(sys.executable)
    (root / ".venv" / "bin" / "cursor-agent-api").write_text(CLI)
    (root / ".venv" / "bin" / "cursor-agent-api").chmod(0o755)
    return root


def _env(root: Path, **more: str) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "ROOT": str(root), "PORT": "0", **more}


def _demo(root: Path, **more: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "scripts/demo.sh"], cwd=root, env=_env(root, **more),
                          capture_output=True, text=True, timeout=60)


@contextlib.contextmanager
def _running_demo(root: Path) -> Iterator[None]:
    os.mkfifo(root / "served")
    os.mkfifo(root / "stop")
    first = subprocess.Popen(["bash", "scripts/demo.sh"], cwd=root, env=_env(root),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        (root / "served").read_text()  # it serves
        yield
        (root / "stop").write_text("")
        assert first.wait(60) == 0
    finally:
        if first.poll() is None:
            first.kill()
        first.wait()


def test_a_second_demo_leaves_the_running_demos_workspace(repo: Path) -> None:
    with _running_demo(repo):
        work = repo / ".demo" / "workspace" / "important.txt"
        work.write_text("the user's work, from the web UI\n")
        second = _demo(repo)
        assert second.returncode == 1
        assert "a demo is running" in second.stderr
        assert "CURSOR_AGENT_API_DEMO_DIR=" in second.stderr
        assert work.read_text() == "the user's work, from the web UI\n"


def test_a_busy_port_is_refused_before_the_workspace_is_touched(repo: Path) -> None:
    assert _demo(repo).returncode == 0
    work = repo / ".demo" / "workspace" / "important.txt"
    work.write_text("kept\n")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        refused = _demo(repo, PORT=str(busy.getsockname()[1]))
    assert refused.returncode == 1
    assert "in use" in refused.stderr
    assert "PORT=0" in refused.stderr
    assert work.read_text() == "kept\n"


def test_a_read_only_clone_gives_a_writable_workspace(repo: Path) -> None:
    source = repo / "examples" / "demo-workspace"
    for path in [*source.rglob("*"), source]:
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        for _ in range(2):  # the second run replaces the first's copy
            done = _demo(repo)
            assert done.returncode == 0, done.stderr
        ws = repo / ".demo" / "workspace"
        for path in [ws, *ws.rglob("*")]:
            assert path.stat().st_mode & stat.S_IWUSR, path
    finally:
        for path in [source, *source.rglob("*")]:
            path.chmod(path.stat().st_mode | stat.S_IWUSR)


def test_no_writable_demo_directory_names_the_variable(repo: Path) -> None:
    (repo / ".demo").write_text("not a directory\n")
    done = _demo(repo)
    assert done.returncode == 1
    assert "CURSOR_AGENT_API_DEMO_DIR=" in done.stderr
    assert "Traceback" not in done.stderr
