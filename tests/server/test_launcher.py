"""The test harness's launcher (``launcher.py``) starts ``cursor-agent-api`` as exec would."""

from __future__ import annotations

import contextlib
import errno
import os
import select
import signal
import socket
import subprocess
import uuid
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


def _until_eof(stdout: Any) -> bytes:
    """Read ``stdout`` (a server's pipe) to its end: its process has ended (60 s at most)."""
    out = b""
    while True:
        ready, _, _ = select.select([stdout], [], [], 60)
        assert ready, f"the process is still running: {out!r}"
        data = os.read(stdout.fileno(), 4096)
        if not data:
            return out
        out += data


def test_a_forked_server_ends_when_the_launcher_is_killed(
    make_server: Callable[..., Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test process killed (or interrupted) leaves no server listening for ever."""
    monkeypatch.delenv(launcher.EXEC_ENV, raising=False)
    own = launcher.Launcher()
    monkeypatch.setattr(launcher, "_launcher", own)
    server = make_server()
    assert isinstance(server.proc, launcher.Launched)
    try:
        own.proc.kill()
        own.proc.wait(30)
        _until_eof(server.proc.stdout)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(server.proc.pid, signal.SIGKILL)
        own.sock.close()
    server.proc.returncode = -signal.SIGTERM  # its launcher, which would have said so, is gone


def test_a_forked_server_ends_when_its_caller_goes(
    make_server: Callable[..., Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The launcher hears its caller go (end of file) and stops what it started."""
    monkeypatch.delenv(launcher.EXEC_ENV, raising=False)
    own = launcher.Launcher()
    monkeypatch.setattr(launcher, "_launcher", own)
    server = make_server()
    assert isinstance(server.proc, launcher.Launched)
    try:
        own.sock.shutdown(socket.SHUT_RDWR)
        assert own.proc.wait(60) == 0
        _until_eof(server.proc.stdout)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(server.proc.pid, signal.SIGKILL)
        own.sock.close()
    server.proc.returncode = -signal.SIGTERM


def test_a_start_interrupted_while_waiting_stops_its_server(
    tmp_path: Path, db_url: str, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while ``Server.start`` waits for the "Open:" line: the server it started is
    stopped before the KeyboardInterrupt goes on (the fixture never heard of it)."""
    started: list[Any] = []
    real_select = select.select

    def interrupted(rlist: Any, *args: Any) -> Any:
        started.append(rlist[0])
        raise KeyboardInterrupt

    monkeypatch.setattr(select, "select", interrupted)
    server = Server(tmp_path, db_url, workspace, uuid.uuid4().hex)
    try:
        with pytest.raises(KeyboardInterrupt):
            server.start()
        monkeypatch.setattr(select, "select", real_select)
        assert started
        assert server.proc.poll() is not None, "the server outlived its interrupted start"
    finally:
        monkeypatch.setattr(select, "select", real_select)
        if server.proc is not None and server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait(30)
