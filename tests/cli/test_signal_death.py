"""A command stopped by a signal it received dies from that signal, once its cleanup is done,
so that the shell loop that ran it stops too.

bash waits for its foreground command and looks at how it ended ("wait and cooperative
exit"): one that *exited* with status 130 is taken to have handled the Ctrl-C itself, and
``for f in a b c; do cursor-agent-api run …; done`` went on to its next iteration — one
Ctrl-C per iteration. (dash is not tested: it stops the loop itself, whatever the command
does, so a test with it could not fail.) Each loop here runs in a process group of its own, and the Ctrl-C is
sent to the group, as a terminal sends it; the agent is in a group of its own (it gets the
cancel from the command). Nothing is timed: the signal is sent once a line shows the turn
(or the rendering) under way.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "cursor_agent_api.cli"]
LOOP = 'for delay in 1.0 0 0; do CURSOR_AGENT_SIM_DELAY=$delay "$@"; echo "next $?"; done'
"""The first iteration's turn is slow (one event a second: the Ctrl-C lands in it), the next
ones quick: a loop that goes on ends soon, and the test sees it did."""


@contextmanager
def in_own_group(args: list[str], env: dict[str, str], *, stdin: int | None = subprocess.DEVNULL,
                 stderr: int = subprocess.PIPE) -> Iterator[subprocess.Popen[str]]:
    """``args`` in a session (process group) of its own, in ``env["TEST_WS"]``, stdout a
    pipe; killed after 120 s (a hang guard, not a timing) or when the test ends."""
    proc = subprocess.Popen(args, cwd=env["TEST_WS"], env=env, text=True, stdin=stdin,
                            stdout=subprocess.PIPE, stderr=stderr, start_new_session=True)
    guard = threading.Timer(120, lambda: os.killpg(proc.pid, signal.SIGKILL))
    guard.start()
    try:
        yield proc
    finally:
        guard.cancel()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None and not stream.closed:
                stream.close()


def _read_until(proc: subprocess.Popen[str], mark: str) -> list[str]:
    assert proc.stdout is not None
    seen: list[str] = []
    for line in proc.stdout:
        seen.append(line.rstrip("\n"))
        if mark in line:
            return seen
    raise AssertionError(f"the output ended before {mark!r}: {seen}")


def test_ctrl_c_in_run_stops_the_shell_loop(cli_env: dict[str, str]) -> None:
    env = {**cli_env, "CURSOR_AGENT_SIM_FAULT": "slow"}
    run = [*CLI, "run", "--simulate", "--trust", "--output", "text", "list the files"]
    with in_own_group(["bash", "-c", LOOP, "bash", *run], env) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        seen = _read_until(proc, "▶")  # the first turn's agent runs
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C
        out = seen + proc.stdout.read().splitlines()
        err = proc.stderr.read()
        proc.wait()
    assert not any(line.startswith("next") for line in out), out  # the loop went on
    assert proc.returncode == -signal.SIGINT, (proc.returncode, out)  # the shell itself stopped
    assert "⊘ cancelled" in err and "Traceback" not in err, err
    assert any(line.startswith("chat ") and "continue:" in line for line in out), out  # said first


def test_ctrl_c_in_replay_stops_the_shell_loop(cli_env: dict[str, str]) -> None:
    """Each iteration replays the loop's standard input: the first renders a line, the
    Ctrl-C comes; a loop that goes on reads the end of the input (the test closes it)."""
    with in_own_group(["bash", "-c", LOOP, "bash", *CLI, "replay", "-"], cli_env,
                stdin=subprocess.PIPE) as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        proc.stdin.write('{"type":"assistant","message":{"content":"first line\\n"}}\n')
        proc.stdin.flush()
        seen = _read_until(proc, "first line")  # rendered: replay reads on
        os.killpg(proc.pid, signal.SIGINT)
        proc.stdin.close()
        out = seen + proc.stdout.read().splitlines()
        err = proc.stderr.read()
        proc.wait()
    assert not any(line.startswith("next") for line in out), out
    assert proc.returncode == -signal.SIGINT, (proc.returncode, out)
    assert "Traceback" not in err, err


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP],
                         ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_run_dies_from_the_signal_after_saying_the_chat(cli_env: dict[str, str],
                                                        sig: int) -> None:
    """To the command only (``kill``, ``timeout``): it dies from the signal, once the turn is
    cancelled and saved and its chat id said (the output flushed before the death)."""
    env = {**cli_env, "CURSOR_AGENT_SIM_FAULT": "slow", "CURSOR_AGENT_SIM_DELAY": "1.0"}
    run = [*CLI, "run", "--simulate", "--trust", "--output", "text", "list the files"]
    with in_own_group(run, env) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        seen = _read_until(proc, "▶")
        proc.send_signal(sig)
        out = seen + proc.stdout.read().splitlines()
        err = proc.stderr.read()
        proc.wait()
    assert proc.returncode == -sig, (proc.returncode, err)
    assert "⊘ cancelled" in err and "Traceback" not in err, err
    listed = subprocess.run([*CLI, "sessions", "list", "--json"], capture_output=True, text=True,
                            env=cli_env, cwd=cli_env["TEST_WS"], timeout=60, check=True)
    (chat,) = [json.loads(line) for line in listed.stdout.splitlines()]
    assert f"chat {chat['chat_id']} · continue:" in out[-1], out


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_serve_dies_from_the_signal_once_shut_down(cli_env: dict[str, str], sig: int) -> None:
    """``serve`` (uvicorn) shuts down, then dies from the signal, as from SIGTERM before: a
    Ctrl-C ended it with status 0, so a shell loop that ran it went on."""
    serve = [*CLI, "serve", "--simulate", "--port", "0", "--root", cli_env["TEST_WS"]]
    with in_own_group(serve, cli_env) as proc:
        assert proc.stderr is not None
        _read_until(proc, "Open: ")  # (announced: serving)
        os.killpg(proc.pid, sig)  # (a terminal's Ctrl-C goes to the group)
        err = proc.stderr.read()
        proc.wait()
    assert proc.returncode == -sig, (proc.returncode, err)
    assert "Traceback" not in err, err


EXIT_BY_SIGNAL = """
import atexit, signal, sys
from cursor_agent_api.signal_exit import exit_by_signal
{setup}
atexit.register(lambda: print("exit handlers ran", file=sys.stderr))
print("buffered, not yet flushed", end="")
exit_by_signal(signal.{sig})
print("still running")
"""


def _exit_by_signal(sig: str, setup: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", EXIT_BY_SIGNAL.format(sig=sig, setup=setup)],
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_exit_by_signal_flushes_runs_the_exit_handlers_and_dies(sig: str) -> None:
    done = _exit_by_signal(sig)
    assert done.returncode == -signal.Signals[sig], done
    assert done.stdout == "buffered, not yet flushed"
    assert done.stderr == "exit handlers ran\n"


def test_the_same_signal_again_while_the_exit_handlers_run_ends_it_at_once() -> None:
    """Review 20: a second Ctrl-C while an exit handler ran raised ``KeyboardInterrupt``
    inside it (Python's "Exception ignored in atexit callback" and its traceback), then the
    command went on to die. It now ends the command at once, quietly, as one more Ctrl-C
    during a turn's save does."""
    setup = ("import time\natexit.register(lambda: (print('waiting', file=sys.stderr, flush=True),"
             " time.sleep(120)))")  # (registered before the one below: it runs after it)
    proc = subprocess.Popen([sys.executable, "-c", EXIT_BY_SIGNAL.format(sig="SIGINT", setup=setup)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None and proc.stdout is not None
        said = [proc.stderr.readline(), proc.stderr.readline()]
        assert said == ["exit handlers ran\n", "waiting\n"], said
        proc.send_signal(signal.SIGINT)  # the second Ctrl-C, in the handler that waits
        err = proc.stderr.read()
        proc.wait(60)  # (a hang guard: the handler waits 120 s)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert proc.returncode == -signal.SIGINT, (proc.returncode, err)
    assert "Traceback" not in err and "Exception ignored" not in err, err


def test_a_sigint_ignored_since_the_start_still_ends_the_command() -> None:
    """``nohup``, a background job: SIGINT ignored from the start (SIG_IGN inherited)."""
    done = _exit_by_signal("SIGINT", "signal.signal(signal.SIGINT, signal.SIG_IGN)")
    assert done.returncode == -signal.SIGINT, done
    assert "still running" not in done.stdout


def test_a_blocked_signal_ends_the_command_with_the_shells_status() -> None:
    """A signal mask that blocks it (a parent's): the kill cannot end the process, which
    exits with 128 + N, the status a shell shows for the signal."""
    done = _exit_by_signal("SIGTERM", "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})")
    assert done.returncode == 128 + signal.SIGTERM, done
    assert done.stdout == "buffered, not yet flushed" and "still running" not in done.stdout
    assert done.stderr == "exit handlers ran\n"


EXIT_IN_A_THREAD = """
import atexit, signal, sys, threading
from cursor_agent_api.signal_exit import exit_by_signal
atexit.register(lambda: print("exit handlers ran", file=sys.stderr))
print("buffered, not yet flushed", end="")
thread = threading.Thread(target=exit_by_signal, args=(signal.{sig},))
thread.start()
thread.join()
print("still running")
"""


@pytest.mark.parametrize(("sig", "status"), [("SIGTERM", -signal.SIGTERM),
                                             ("SIGINT", 128 + signal.SIGINT)])
def test_exit_by_signal_outside_the_main_thread_ends_the_process(sig: str, status: int) -> None:
    """Only the main thread may give a signal its default action back. SIGTERM has it (Python
    takes no SIGTERM by default): the process dies from it. SIGINT has Python's handler,
    which another thread cannot take away: the process exits with 128 + N, the shell's status
    for it. (It ended only that thread: the program went on and exited 0.)"""
    done = subprocess.run([sys.executable, "-c", EXIT_IN_A_THREAD.format(sig=sig)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == status, done
    assert done.stdout == "buffered, not yet flushed"
    assert done.stderr == "exit handlers ran\n"


def test_called_as_a_function_the_command_ends_with_the_status_not_the_death(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``main.main([...])`` (here through click's ``CliRunner``) is a function call in
    someone else's process: a Ctrl-C the command handled ends it with ``SignalExit`` (status
    130), which its caller gets; only the program itself dies from the signal."""
    from click.testing import CliRunner

    from cursor_agent_api.cli import main, replay
    from cursor_agent_api.signal_exit import SignalExit

    def ctrl_c(src: object) -> Iterator[bytes]:  # the Ctrl-C lands as replay reads
        yield b'{"type":"assistant","message":{"content":"first line\\n"}}\n'
        raise KeyboardInterrupt

    monkeypatch.setattr(replay, "_chunks", ctrl_c)
    recording = tmp_path / "turn.ndjson"
    recording.write_text("")
    result = CliRunner().invoke(main, ["replay", str(recording)])
    assert result.exit_code == 130, result.output
    assert isinstance(result.exception, SignalExit) and result.exception.signum == signal.SIGINT
    assert "first line" in result.output


CONSOLE_SCRIPT = [sys.executable, "-c", "import sys\nfrom cursor_agent_api.console_script import main"
                  "\nsys.argv[0] = 'cursor-agent-api'\nsys.exit(main())\n"]
"""The script pip writes for ``[project.scripts]`` (tests/cli/test_early_ctrl_c.py checks that
it is the entry point pyproject.toml declares)."""


@pytest.mark.parametrize("program", [CLI, CONSOLE_SCRIPT], ids=["python -m", "console script"])
def test_the_program_entry_points_die_from_the_signal(cli_env: dict[str, str],
                                                      program: list[str]) -> None:
    """The two ways the command runs as a program end it by the signal (the group's
    ``main()`` only raises ``SignalExit``)."""
    with in_own_group([*program, "replay", "-"], cli_env, stdin=subprocess.PIPE) as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        proc.stdin.write('{"type":"assistant","message":{"content":"first line\\n"}}\n')
        proc.stdin.flush()
        _read_until(proc, "first line")
        proc.send_signal(signal.SIGINT)
        proc.stdin.close()
        err = proc.stderr.read()
        proc.wait()
    assert proc.returncode == -signal.SIGINT, (proc.returncode, err)
    assert "Traceback" not in err, err


HOST = """
import sys
from cursor_agent_api.cli import main
sys.argv = ["host", "replay", "-"]
try:
    main()
except SystemExit as ended:
    print("host: the command ended with", ended.code, flush=True)
print("host: goes on", flush=True)
"""


def test_a_program_that_calls_main_gets_the_status_and_goes_on(
        cli_env: dict[str, str]) -> None:
    """A Python program that sets ``sys.argv`` and calls the group's ``main()`` in a
    ``try`` is not the command line's program: a Ctrl-C the command handled ends the call
    with ``SystemExit(130)``; only the entry points (the console script, ``python -m``) die
    from the signal. (It was decided by ``args is None``: the host was killed.)"""
    with in_own_group([sys.executable, "-c", HOST], cli_env, stdin=subprocess.PIPE) as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        proc.stdin.write('{"type":"assistant","message":{"content":"first line\\n"}}\n')
        proc.stdin.flush()
        seen = _read_until(proc, "first line")
        proc.send_signal(signal.SIGINT)
        proc.stdin.close()
        out = seen + proc.stdout.read().splitlines()
        err = proc.stderr.read()
        proc.wait()
    assert proc.returncode == 0, (proc.returncode, out, err)
    assert out[-2:] == ["host: the command ended with 130", "host: goes on"], out
    assert "Traceback" not in err, err
