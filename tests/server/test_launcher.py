"""The test harness's launcher (``launcher.py``) starts ``cursor-agent-api`` as exec would."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import launcher
import pytest
from server_helpers import SERVE, Server, poll


def _start(tmp_path: Path, args: list[str], name: str) -> tuple[Any, Path]:
    log = tmp_path / f"{name}.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CURSOR_AGENT_API_")}
    with log.open("ab") as stderr:
        proc = launcher.popen([*SERVE, *args], cwd=tmp_path, env=env, stderr=stderr)
    return proc, log


def test_a_refused_start_exits_as_the_console_script_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(launcher.EXEC_ENV, raising=False)
    args = ["--port", "0", "--token", "fifteen-chars15"]
    forked, forked_log = _start(tmp_path, args, "forked")
    monkeypatch.setenv(launcher.EXEC_ENV, "1")
    monkeypatch.setattr(launcher, "_launcher", None)
    execd, exec_log = _start(tmp_path, args, "exec")
    assert isinstance(execd, subprocess.Popen)
    assert isinstance(forked, launcher.Launched)
    assert forked.wait(60) == execd.wait(60) == 2
    assert forked.stdout.read() == execd.stdout.read() == b""
    assert forked_log.read_text() == exec_log.read_text()
    assert "at least 16 characters" in forked_log.read_text()
    forked.stdout.close()
    execd.stdout.close()


def test_a_forked_server_is_a_session_of_its_own(
    make_server: Callable[..., Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(launcher.EXEC_ENV, raising=False)
    server = make_server()
    proc = server.proc
    assert isinstance(proc, launcher.Launched)
    assert os.getsid(proc.pid) == proc.pid
    with server.client() as c:
        assert c.get("/api/chats").status_code == 200
    assert proc.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(0.1)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(30) == -signal.SIGKILL
    server.stop()


def test_a_forked_command_has_its_directory_and_standard_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen in ``/proc/PID`` of a command that stays readable there (``replay`` of a named
    pipe: it waits for a writer); ``serve`` and ``worker`` are not dumpable, and their
    ``cwd`` and ``fd`` are root's (``server/non_dumpable.py``)."""
    monkeypatch.delenv(launcher.EXEC_ENV, raising=False)
    fifo = tmp_path / "recording.jsonl"
    os.mkfifo(fifo)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CURSOR_AGENT_API_")}
    with (tmp_path / "replay.log").open("ab") as stderr:
        proc = launcher.popen([SERVE[0], "replay", str(fifo)], cwd=tmp_path, env=env,
                              stderr=stderr)
    assert isinstance(proc, launcher.Launched)

    def writer() -> int | None:  # opens once replay waits in its open() (ENXIO before)
        assert proc.poll() is None, (tmp_path / "replay.log").read_text()
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as e:
            if e.errno != errno.ENXIO:
                raise
            return None

    fd = poll(writer)
    try:
        assert os.getsid(proc.pid) == proc.pid
        assert Path(f"/proc/{proc.pid}/cwd").resolve() == tmp_path.resolve()
        assert os.readlink(f"/proc/{proc.pid}/fd/0") == os.devnull
        assert sorted(int(fd) for fd in os.listdir(f"/proc/{proc.pid}/fd"))[:3] == [0, 1, 2]
    finally:
        os.close(fd)  # it reads an empty recording, and ends
        assert proc.wait(60) == 1
        proc.stdout.close()
    assert "is not a stream-json recording (it is empty)" in (tmp_path / "replay.log").read_text()
