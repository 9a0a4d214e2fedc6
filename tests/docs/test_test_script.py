"""``scripts/test.sh`` sharing the PostgreSQL cluster: run with stand-ins for everything it
starts (setup, browser, linters, pytest, ``postgres.sh``), so that only its own logic runs."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# postgres.sh: a listener on $PGPORT stands for the cluster; starts and stops are logged
POSTGRES = f"""#!/bin/sh
cd "$(dirname "$0")/.."
if [ "$1" = stop ]; then
  echo stop >> pg.log
  kill "$(cat listener.pid)"
  exit 0
fi
if [ ! -e listener.pid ] || ! kill -0 "$(cat listener.pid)" 2>/dev/null; then
  echo start >> pg.log
  {sys.executable} -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); print(flush=True); time.sleep(3600)' \\
    "$PGPORT" > listener.ready 2>/dev/null </dev/null &
  echo $! > listener.pid
  until [ -s listener.ready ]; do :; done
fi
echo "postgresql+asyncpg://u:p@127.0.0.1:$PGPORT/db"
"""
# the PostgreSQL pass says it runs (fifo ready-$RUN), then waits to be let go (fifo go-$RUN)
PYTHON = """#!/bin/sh
case "$2" in
  *sched_getaffinity*) echo 1 ;;
  *pytest.main*) echo > "$ROOT/ready-$RUN"; cat "$ROOT/go-$RUN" > /dev/null ;;
esac
exit 0
"""


def _script(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


def test_a_run_does_not_stop_the_cluster_another_run_uses(tmp_path: Path) -> None:
    """Two test.sh at once: the one that started the cluster ends first and must leave it
    running for the other; the last one stops it."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "test.sh", tmp_path / "scripts" / "test.sh")
    for name in ("setup.sh", "browser.sh"):
        _script(tmp_path / "scripts" / name, "#!/bin/sh\nexit 0\n")
    _script(tmp_path / "scripts" / "postgres.sh", POSTGRES)
    for name in ("ruff", "mypy"):
        _script(tmp_path / ".venv" / "bin" / name, "#!/bin/sh\nexit 0\n")
    _script(tmp_path / ".venv" / "bin" / "python", PYTHON)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for run in "AB":
        os.mkfifo(tmp_path / f"ready-{run}")
        os.mkfifo(tmp_path / f"go-{run}")
    env = {
        "PATH": os.environ["PATH"], "ROOT": str(tmp_path), "PGPORT": str(port),
        "PGDATA_DIR": str(tmp_path / "pg"),
    }
    runs = {}
    try:
        for run in "AB":  # A starts the cluster; B finds it running
            runs[run] = subprocess.Popen(
                ["bash", "scripts/test.sh"], cwd=tmp_path, env={**env, "RUN": run},
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            )
            (tmp_path / f"ready-{run}").read_text()
        (tmp_path / "go-A").write_text("")
        assert runs["A"].wait(60) == 0, runs["A"].stderr and runs["A"].stderr.read()
        assert (tmp_path / "pg.log").read_text().split() == ["start"]
        (tmp_path / "go-B").write_text("")
        assert runs["B"].wait(60) == 0, runs["B"].stderr and runs["B"].stderr.read()
        assert (tmp_path / "pg.log").read_text().split() == ["start", "stop"]
    finally:
        for proc in runs.values():
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            assert proc.stderr is not None
            proc.stderr.close()
        pid_file = tmp_path / "listener.pid"
        if pid_file.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
