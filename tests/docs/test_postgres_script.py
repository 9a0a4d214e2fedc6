"""``scripts/postgres.sh`` without PostgreSQL or apt-get, and with a data directory whose path
has a space. Without PostgreSQL is made with a mount namespace (``unshare -m``, root) that
hides ``/usr/lib/postgresql``; PATH has no apt-get."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "postgres.sh"


def _without_postgresql(tmp_path: Path, args: str) -> subprocess.CompletedProcess[str]:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare(1) to hide the installed PostgreSQL")
    empty = tmp_path / "empty"
    empty.mkdir()
    bin_dir = tmp_path / "bin"  # the few commands the script needs, and no apt-get
    bin_dir.mkdir()
    for name in ("bash", "id", "ls", "sort", "tail", "cat", "env"):
        found = shutil.which(name)
        assert found
        (bin_dir / name).symlink_to(found)
    hide = f"mount --bind {empty} /usr/lib/postgresql 2>/dev/null || exit 77"
    done = subprocess.run(
        ["unshare", "-m", "bash", "-c",
         f"{hide}; PATH={bin_dir} PGDATA_DIR={tmp_path / 'pg'} bash {SCRIPT} {args}"],
        capture_output=True, text=True, timeout=60,
    )
    if done.returncode == 77:
        pytest.skip("cannot hide /usr/lib/postgresql here (no mount namespace)")
    return done


def test_stop_without_postgresql_installs_nothing(tmp_path: Path) -> None:
    done = _without_postgresql(tmp_path, "stop")
    assert done.returncode == 0, done.stderr
    assert "installing" not in done.stderr


def test_without_apt_get_it_says_what_to_do(tmp_path: Path) -> None:
    done = _without_postgresql(tmp_path, "")
    assert done.returncode == 1
    assert "no apt-get" in done.stderr
    assert "SKIP_POSTGRES=1" in done.stderr
    assert "command not found" not in done.stderr


def test_a_data_directory_with_a_space(tmp_path: Path) -> None:
    if not glob.glob("/usr/lib/postgresql/*/bin/initdb"):
        pytest.skip("PostgreSQL is not installed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # (not in tmp_path, which only its owner may enter: as root, the cluster runs as postgres)
    base = Path(tempfile.mkdtemp(prefix="cursor-agent-api-test-pg "))
    base.chmod(0o755)
    data = base / "pg dir"
    env = {**os.environ, "PGDATA_DIR": str(data), "PGPORT": str(port)}
    try:
        done = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True,
                              timeout=120)
        log = data / "server.log"  # (it failed twice under heavy load, without this log)
        assert done.returncode == 0, done.stderr + (log.read_text()[-3000:] if log.exists() else "")
        assert done.stdout.strip().endswith(f"@127.0.0.1:{port}/cursor_agent_api")
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop"], env=env, capture_output=True, timeout=120)
        shutil.rmtree(base, ignore_errors=True)
