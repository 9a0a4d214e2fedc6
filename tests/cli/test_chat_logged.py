"""``cursor-agent-api chat | tee chat.log``: typed at a terminal, its output a pipe or a
file. The log holds each line that was sent after its prompt mark, as a piped chat's does
(the terminal alone echoed it), and the last line ends before ``continue later:``."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time

CLI = [sys.executable, "-m", "cursor_agent_api.cli"]


def test_a_logged_chat_holds_what_was_typed(cli_env: dict[str, str]) -> None:
    master, slave = pty.openpty()
    proc = subprocess.Popen([*CLI, "chat", "--simulate", "--trust"], stdin=slave,
                            stdout=subprocess.PIPE, stderr=slave, cwd=cli_env["TEST_WS"],
                            env={**cli_env, "TERM": "dumb"}, start_new_session=True)
    os.close(slave)
    assert proc.stdout is not None
    out, typed = b"", [b"remember the codeword heron\r", b"\x04"]
    waits = [b"Ctrl-D leaves\n\xe2\x80\xba ", b"continue: "]  # the prompt; the turn's end
    deadline = time.monotonic() + 60  # a hang guard, not a timing
    try:
        open_fds = [master, proc.stdout.fileno()]
        while proc.stdout.fileno() in open_fds and time.monotonic() < deadline:
            ready, _, _ = select.select(open_fds, [], [], 0.1)
            for fd in ready:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:  # the terminal's other side closed
                    chunk = b""
                if not chunk:
                    open_fds.remove(fd)
                elif fd == proc.stdout.fileno():
                    out += chunk
            if waits and waits[0] in out:
                waits.pop(0)
                os.write(master, typed.pop(0))
        assert proc.wait(timeout=max(0.0, deadline - time.monotonic())) == 0, out[-500:]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        os.close(master)
        proc.stdout.close()
    log = out.decode()
    assert "› remember the codeword heron\n" in log, log
    assert "\ncontinue later: cursor-agent-api chat --resume " in log, log
