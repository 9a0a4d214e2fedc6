"""Helpers for the simulator's tests: run the real ``cursor-agent-sim`` process in its own
process group, and make sure no process of that group outlives the test."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from cursor_agent_api.protocol import Transcript
from cursor_agent_api.testing import sim_binary

SIM = sim_binary()
TIMEOUT = 120.0


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (Linux /proc; a zombie is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def group_members(pgid: int) -> list[int]:
    """Pids whose process group is ``pgid`` (Linux /proc), zombies excluded."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            out.append(int(entry))
    return out


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group, reap the leader, wait until no member is left."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=TIMEOUT)
    deadline = time.monotonic() + 30
    while group_members(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not group_members(proc.pid), "a process of the simulator's group outlived the test"


@dataclass
class SimRun:
    returncode: int
    stdout: bytes
    stderr: bytes

    @property
    def transcript(self) -> Transcript:
        return Transcript.from_bytes(self.stdout)

    @property
    def err(self) -> str:
        return self.stderr.decode("utf-8", "replace")


@dataclass
class Sim:
    """Runs ``cursor-agent-sim`` in a workspace with a private config dir."""

    workspace: Path
    config_dir: Path
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("CURSOR_AGENT_SIM_", "CURSOR_API_KEY"))
        }
        env["CURSOR_CONFIG_DIR"] = str(self.config_dir)
        env.update(extra)
        return env

    def start(
        self, *args: str, env: dict[str, str] | None = None, stdin: bytes | None = None
    ) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [SIM, *args],
            cwd=self.workspace,
            env=self.env(**(env or {})),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self.procs.append(proc)
        if stdin is not None:
            assert proc.stdin is not None
            proc.stdin.write(stdin)
            proc.stdin.close()
        return proc

    def run(self, *args: str, env: dict[str, str] | None = None, timeout: float = TIMEOUT) -> SimRun:
        proc = self.start(*args, env=env)
        try:
            out, err = proc.communicate(timeout=timeout)
        finally:
            kill_group(proc)
        return SimRun(proc.returncode, out, err)

    def run_stdin(self, *args: str, stdin: bytes, env: dict[str, str] | None = None) -> SimRun:
        proc = subprocess.Popen(
            [SIM, *args],
            cwd=self.workspace,
            env=self.env(**(env or {})),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self.procs.append(proc)
        try:
            out, err = proc.communicate(stdin, timeout=TIMEOUT)
        finally:
            kill_group(proc)
        return SimRun(proc.returncode, out, err)

    def stream(self, *args: str, env: dict[str, str] | None = None) -> SimRun:
        """A trusted stream-json print run."""
        return self.run("-p", "--trust", "--output-format", "stream-json", *args, env=env)

    def close(self) -> None:
        for proc in self.procs:
            kill_group(proc)


def read_line(proc: subprocess.Popen[bytes]) -> bytes:
    """The next stdout line (blocking; the tests' timeout bounds it)."""
    assert proc.stdout is not None
    return proc.stdout.readline()


def read_until(proc: subprocess.Popen[bytes], needle: bytes) -> list[bytes]:
    lines = []
    while True:
        line = read_line(proc)
        if not line:
            raise AssertionError(f"stdout ended before {needle!r}: {lines[-3:]!r}")
        lines.append(line)
        if needle in line:
            return lines


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    (path / "notes.txt").write_text("alpha\nbeta\n")
    (path / "src").mkdir()
    (path / "src" / "app.py").write_text("def main():\n    return 1  # TODO: more\n")
    (path / "README.md").write_text("# Demo\n\nA demo workspace.\n")
    return path


@pytest.fixture
def sim(ws: Path, tmp_path: Path) -> Iterator[Sim]:
    s = Sim(ws, tmp_path / "config")
    try:
        yield s
    finally:
        s.close()
