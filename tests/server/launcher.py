"""Start ``cursor-agent-api`` processes for the tests without paying Python's imports each time.

A server test starts one or more ``cursor-agent-api serve`` (or ``worker``) processes, and
most of each start is the interpreter importing FastAPI, SQLAlchemy, uvicorn and the
package (about 1.5 s of CPU, of 2 s to the "Open:" line). So each test process keeps one
*launcher*: a child Python process that imports those modules once, then, for every start,
forks. The forked child becomes what the console script would have been: a new session,
its own stdin (``/dev/null``), stdout and stderr (the caller's pipe and log file), working
directory, ``sys.argv`` and environment (``os.environ`` replaced), then
the console script's ``main()`` with Python's own shutdown (a command a signal stopped dies
from it, as the program does); only the
interpreter's start and the imports are shared. The launcher reaps its children and
reports each exit status; its children end with it (SIGTERM), and it ends, stopping them,
when its caller goes (a test run interrupted or killed leaves no server behind).
:class:`Launched` has the part of ``Popen`` that the harness uses (``pid``, ``stdout``,
``poll``, ``wait``, ``send_signal``, ``terminate``, ``kill``, ``returncode``).

The console script itself is started as a real program by the CLI and docs tests. To run
the server tests that way too, set ``CURSOR_AGENT_API_TEST_EXEC=1``; a start whose
environment differs from the launcher's in a variable read at interpreter start
(``PYTHON*``) is exec'd as well.

This file is also the launcher's program: ``python launcher.py FD`` (FD: its end of a
``SOCK_SEQPACKET`` socket pair). Requests and replies are JSON messages; a request
carries the child's three standard file descriptors (``SCM_RIGHTS``).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

EXEC_ENV = "CURSOR_AGENT_API_TEST_EXEC"
ENTRY = "cursor_agent_api.console_script:main"
"""What ``cursor-agent-api`` runs (its console script, ``[project.scripts]``)."""
WARM = (
    "cursor_agent_api.cli",
    "cursor_agent_api.cli.serve",
    "cursor_agent_api.cli.worker",
    "cursor_agent_api.server.app",
    "cursor_agent_api.server.worker",
    "uvicorn",
    "uvicorn.config",
    "uvicorn.lifespan.on",
    "uvicorn.protocols.http.auto",
    "uvicorn.protocols.http.httptools_impl",
    "uvicorn.protocols.websockets.auto",
    "uvicorn.protocols.websockets.websockets_sansio_impl",
    "alembic.command",
    "alembic.config",
    "alembic.runtime.migration",
    "sqlalchemy.dialects.sqlite.aiosqlite",
    "sqlalchemy.dialects.postgresql.asyncpg",
)
"""Imported once by the launcher (a module missing here is imported by each child)."""
MAX_MESSAGE = 1 << 20
_LINUX = sys.platform.startswith("linux")


# --- the launcher's side ---------------------------------------------------------------


def _warm() -> None:
    for name in WARM:
        with contextlib.suppress(ImportError):  # an optional driver: the child says so
            importlib.import_module(name)
    # forking a process with threads is unsafe: the imports must not have started any
    assert threading.active_count() == 1, threading.enumerate()


def _send(sock: socket.socket, message: dict[str, Any]) -> None:
    sock.send(json.dumps(message).encode())


def _reap(sock: socket.socket) -> set[int]:
    reaped: set[int] = set()
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid == 0:
            return reaped
        reaped.add(pid)
        with contextlib.suppress(OSError):  # its caller may have gone
            _send(sock, {"exited": pid, "returncode": os.waitstatus_to_exitcode(status)})


def _die_with(parent: int) -> None:
    """On Linux, have the kernel send this process SIGTERM when ``parent`` (the launcher)
    ends, however it ends (SIGKILL included): a test run interrupted or killed leaves no
    server behind. Elsewhere the launcher's loop stops its children when its caller goes."""
    if not _LINUX:
        return
    import ctypes

    pr_set_pdeathsig = 1
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0) != 0:
        return
    if os.getppid() != parent:  # it ended before the prctl: no signal will come
        os.kill(os.getpid(), signal.SIGTERM)


def serve(fd: int) -> dict[str, Any] | None:
    """The launcher's loop. Returns None in the launcher when its caller has gone; returns
    the request in each forked child, set up as the new process (see the module's doc)."""
    sock = socket.socket(fileno=fd)
    _warm()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    sys.stdout.flush()
    sys.stderr.flush()
    launcher_pid = os.getpid()
    children: set[int] = set()
    while True:
        ready, _, _ = select.select([sock, wake_r], [], [])
        if wake_r in ready:
            os.read(wake_r, 4096)
            children -= _reap(sock)
        if sock not in ready:
            continue
        data, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 3)
        if not data:  # its caller has gone (Ctrl-C, a crash): what it started goes too
            if not _LINUX:  # (on Linux the kernel signals them once this process ends)
                for child in children:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(child, signal.SIGTERM)
            return None
        request = json.loads(data)
        try:
            pid = os.fork()
        except OSError as e:
            for received in fds:
                os.close(received)
            _send(sock, {"error": f"fork: {e}"})
            continue
        if pid == 0:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            os.close(wake_r)
            os.close(wake_w)
            sock.close()
            os.setsid()
            _die_with(launcher_pid)
            for target, received in enumerate(fds):
                os.dup2(received, target)
            for received in fds:
                if received > 2:
                    os.close(received)
            os.chdir(request["cwd"])
            os.environ.clear()
            os.environ.update(request["env"])
            sys.argv = list(request["argv"])
            sys.path[0] = os.path.dirname(sys.argv[0])  # a script's own directory, as Python sets it
            return dict(request)
        for received in fds:
            os.close(received)
        children.add(pid)
        _send(sock, {"started": pid})


def run_child(request: dict[str, Any]) -> None:
    """What the console script does: ``sys.exit(main())`` (pip's script)."""
    module, _, name = request["entry"].partition(":")
    sys.exit(getattr(importlib.import_module(module), name)())


# --- the caller's side -----------------------------------------------------------------


class Launched:
    """A process started by the launcher: the part of ``subprocess.Popen`` the tests use."""

    def __init__(self, launcher: Launcher, pid: int, args: list[str], stdout: Any) -> None:
        self._launcher = launcher
        self.pid = pid
        self.args = args
        self.stdout = stdout
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._launcher.returncode(self.pid, 0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            code = self._launcher.returncode(self.pid, timeout)
            if code is None:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            self.returncode = code
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:  # its exit not heard yet
            # as Popen's: a process that has just exited is not an error (the launcher may
            # have reaped it before its message arrives)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class Launcher:
    """The caller's end: starts the launcher process, sends it requests, hears exits."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("CURSOR_AGENT_API_")}
        self.proc = subprocess.Popen(
            [sys.executable, __file__, str(theirs.fileno())],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            env=self.env,
            start_new_session=True,  # no Ctrl-C from the terminal: it ends with its caller
        )
        theirs.close()
        self.sock = ours
        self._send_lock = threading.Lock()
        self._changed = threading.Condition()
        self._started: list[dict[str, Any]] = []
        self._exited: dict[int, int] = {}
        self._gone = False
        threading.Thread(target=self._listen, name="launcher", daemon=True).start()

    def _listen(self) -> None:
        while True:
            try:
                data = self.sock.recv(MAX_MESSAGE)
            except OSError:
                data = b""
            with self._changed:
                if not data:
                    self._gone = True
                    self._changed.notify_all()
                    return
                message = json.loads(data)
                if "exited" in message:
                    self._exited[message["exited"]] = message["returncode"]
                else:
                    self._exited.pop(message.get("started", 0), None)  # a pid used again
                    self._started.append(message)
                self._changed.notify_all()

    def returncode(self, pid: int, timeout: float | None) -> int | None:
        """``pid``'s exit code once the launcher reaped it (waiting up to ``timeout`` s)."""
        with self._changed:
            self._changed.wait_for(lambda: pid in self._exited or self._gone, timeout)
            if pid not in self._exited and self._gone:
                raise RuntimeError(f"the launcher died; the fate of process {pid} is unknown")
            return self._exited.pop(pid, None)

    def start(self, argv: list[str], *, cwd: Path, env: dict[str, str], stderr: int) -> Launched:
        """Start ``argv`` (the ``cursor-agent-api`` console script and its arguments)."""
        read_end, write_end = os.pipe()
        devnull = os.open(os.devnull, os.O_RDONLY)
        try:
            request = {"entry": ENTRY, "argv": argv, "cwd": str(cwd), "env": env}
            with self._send_lock, self._changed:
                socket.send_fds(self.sock, [json.dumps(request).encode()], [devnull, write_end, stderr])
                self._changed.wait_for(lambda: bool(self._started) or self._gone, 60)
                if not self._started:
                    raise RuntimeError("the launcher did not answer")
                reply = self._started.pop(0)
        finally:
            os.close(devnull)
            os.close(write_end)
        if "error" in reply:
            os.close(read_end)
            raise OSError(reply["error"])
        return Launched(self, reply["started"], argv, os.fdopen(read_end, "rb"))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


_launcher: Launcher | None = None
_launcher_lock = threading.Lock()


def _python_startup_env(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith("PYTHON")}


def popen(argv: list[str], *, cwd: Path, env: dict[str, str], stderr: Any) -> Any:
    """Start ``cursor-agent-api`` with ``argv`` (``argv[0]``: the console script) as a new
    session, stdout a pipe, stderr the file ``stderr``: forked by this process's launcher,
    or exec'd (``CURSOR_AGENT_API_TEST_EXEC=1``, or an environment the launcher cannot
    give). Returns a ``Popen`` or a :class:`Launched`."""
    global _launcher
    with _launcher_lock:
        if os.environ.get(EXEC_ENV, "") in ("", "0") and _launcher is None:
            _launcher = Launcher()
            import atexit

            atexit.register(_launcher.close)
        launcher = _launcher
    if (
        launcher is None
        or launcher.proc.poll() is not None
        or _python_startup_env(env) != _python_startup_env(launcher.env)
    ):
        return subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=stderr, cwd=cwd, env=env, start_new_session=True
        )
    return launcher.start(argv, cwd=cwd, env=env, stderr=stderr.fileno())


if __name__ == "__main__":
    # not this file's directory (the tests' helpers) but the console script's, as in a child
    sys.path[0] = os.path.dirname(sys.executable)
    _request = serve(int(sys.argv[1]))
    if _request is None:
        sys.exit(0)
    run_child(_request)
