"""How a turn of ``run`` or ``chat`` ends when the command is asked to stop.

SIGTERM (``timeout``, a CI cancel, ``docker stop``, ``kill``) and SIGHUP (a closed terminal)
end the turn as Ctrl-C does — cancelled, saved, its chat id said — then the command, which
dies from the signal (they killed it at once: nothing said, nothing saved; it exited with
status 143 or 129 since, which a shell loop took for a handled signal and went on). After any of them,
``--output ndjson`` ends with the stream's closing event saying the turn was cancelled (it
ended with whatever event came last); each output mode says the cancel in its own way.

The simulator writes one event a second (the ``slow`` fault): the signal is sent once the
first line of the turn is out, while the turn still runs. Nothing is timed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

CLI = [sys.executable, "-m", "cursor_agent_api.cli"]
SLOW = {"CURSOR_AGENT_SIM_FAULT": "slow", "CURSOR_AGENT_SIM_DELAY": "1.0"}


@dataclass
class Ended:
    returncode: int
    stdout: str
    stderr: str


def signalled(args: list[str], env: dict[str, str], signals: list[int], *, first_line: str,
              stdin: bytes | None = None, extra: dict[str, str] | None = None,
              fifo: Path | None = None) -> Ended:
    """Start the command; once a line of its stdout (of ``fifo``, given to ``--record``: the
    JSON outputs write nothing before the end) holds ``first_line``, send ``signals`` to it
    (to the command only, as ``timeout`` and ``kill`` do); read it to its end."""
    if fifo is not None:
        os.mkfifo(fifo)
        args = [*args, "--record", str(fifo)]
    proc = subprocess.Popen(
        [*CLI, *args], stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=env["TEST_WS"],
        env={**env, **SLOW, **(extra or {})})
    guard = threading.Timer(100, proc.kill)  # a hang guard, not a timing
    guard.start()
    try:
        assert proc.stdout is not None and proc.stderr is not None
        if stdin is not None:
            assert proc.stdin is not None
            proc.stdin.write(stdin)
            proc.stdin.flush()  # left open: a chat waits on it for its next line
        with contextlib.ExitStack() as stack:
            watched = stack.enter_context(open(fifo, "rb")) if fifo else proc.stdout
            seen = b""
            while first_line.encode() not in seen:
                line = watched.readline()
                assert line, f"the output ended before {first_line!r}: {seen!r}"
                seen += line
            for sig in signals:
                proc.send_signal(sig)
            rest = watched.read()  # to its end: the command closes it as it ends
        out = (b"" if fifo else seen + rest) + proc.stdout.read()
        err = proc.stderr.read()
        proc.wait()
    finally:
        guard.cancel()
        proc.kill()
        proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    return Ended(proc.returncode, out.decode(), err.decode())


def saved_chats(env: dict[str, str]) -> list[dict[str, object]]:
    listed = subprocess.run([*CLI, "sessions", "list", "--json"], capture_output=True,
                            text=True, env=env, cwd=env["TEST_WS"], timeout=60, check=True)
    return [json.loads(line) for line in listed.stdout.splitlines()]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_run_stopped_by_a_signal_is_cancelled_saved_and_said(cli_env: dict[str, str],
                                                             sig: int) -> None:
    ended = signalled(["run", "--simulate", "--trust", "--output", "text", "list the files"],
                      cli_env, [sig], first_line="▶")
    assert ended.returncode == -sig, ended.stderr
    assert "⊘ cancelled" in ended.stderr and "Traceback" not in ended.stderr
    (chat,) = saved_chats(cli_env)
    assert f"chat {chat['chat_id']} · continue: cursor-agent-api chat --resume" in ended.stdout


def test_ndjson_ends_with_the_closing_event_of_the_cancel(cli_env: dict[str, str]) -> None:
    ended = signalled(["run", "--simulate", "--trust", "--output", "ndjson", "list the files"],
                      cli_env, [signal.SIGTERM], first_line='"system:init"')
    assert ended.returncode == -signal.SIGTERM, ended.stderr
    last = json.loads(ended.stdout.splitlines()[-1])
    assert last["type"] == "result:error", last
    assert "the turn was cancelled" in json.dumps(last)
    (chat,) = saved_chats(cli_env)
    assert str(chat["chat_id"]) in json.dumps(last)


@pytest.mark.parametrize("output", [["--output", "ndjson"], ["--output", "json"],
                                    ["--output-format", "stream-json"],
                                    ["--output-format", "json"], ["--output", "text"]],
                         ids=["ndjson", "json", "stream-json", "format-json", "text"])
def test_ctrl_c_says_the_cancel_in_every_output_mode(cli_env: dict[str, str], tmp_path: Path,
                                                     output: list[str]) -> None:
    """Ctrl-C (SIGINT, to the command only: the agent is in a group of its own), once the
    agent's first line is recorded."""
    ended = signalled(["run", "--simulate", "--trust", *output, "list the files"], cli_env,
                      [signal.SIGINT], first_line='"system"', fifo=tmp_path / "turn.fifo")
    assert ended.returncode == -signal.SIGINT, ended.stderr
    mode = output[1]
    if output[0] == "--output" and mode == "ndjson":
        last = json.loads(ended.stdout.splitlines()[-1])
        assert last["type"] == "result:error" and "the turn was cancelled" in json.dumps(last)
    elif output[0] == "--output" and mode == "json":  # the AgentResult
        result = json.loads(ended.stdout)
        assert result["cancelled"] is True and "the turn was cancelled" in result["error"]
    elif mode == "text":
        assert "⊘ cancelled" in ended.stderr
        assert ended.stdout.splitlines()[-1].startswith("chat ")
    else:  # as `agent -p`: the agent's own lines only; the cancel said on stderr, once
        lines = [json.loads(line) for line in ended.stdout.splitlines()]
        assert all("added_by_client" not in line for line in lines)
        assert mode == "stream-json" or lines == []  # json: the agent wrote no result
        assert ended.stderr.count("⊘ cancelled") == 1


def test_chat_stopped_by_sigterm_sends_no_further_prompt(cli_env: dict[str, str]) -> None:
    ended = signalled(["chat", "--simulate", "--trust", "--output", "text"], cli_env,
                      [signal.SIGTERM], first_line="▶",
                      stdin=b"list the files\nnow write a poem\n")
    assert ended.returncode == -signal.SIGTERM, ended.stderr
    assert "⊘ cancelled" in ended.stdout and "Traceback" not in ended.stderr
    assert "now write a poem" not in ended.stdout  # the next prompt was not even read
    (chat,) = saved_chats(cli_env)
    assert f"chat {chat['chat_id']} · continue:" in ended.stdout


def test_a_second_signal_still_ends_it(cli_env: dict[str, str]) -> None:
    """The agent ignores SIGINT and SIGTERM (so does its child): the cancel waits for the
    SIGKILL; a second SIGTERM on the first's heels ends the command all the same, and
    nothing of the agent is left (the fixture checks)."""
    ended = signalled(["run", "--simulate", "--trust", "--output", "text", "list the files"],
                      cli_env, [signal.SIGTERM, signal.SIGTERM], first_line="▶",
                      extra={"CURSOR_AGENT_SIM_FAULT": "slow,ignore-sigterm"})
    # through the turn's handler, or landed after the turn was saved (the handler gone, the
    # default action): either way it dies from the SIGTERM
    assert ended.returncode == -signal.SIGTERM, ended.stderr
    assert "Traceback" not in ended.stderr


def test_a_signal_as_the_handlers_are_given_back_still_ends_the_command() -> None:
    # a SIGTERM that landed while ending_signals() restored the handlers escaped as a bare
    # Terminated (a KeyboardInterrupt: chat took it for Ctrl-C and went on) and left the
    # handlers installed. Sent here at the restore's first handler line (sys.settrace).
    import inspect

    from cursor_agent_api.cli import turns
    from cursor_agent_api.signal_exit import SignalExit

    lines, start = inspect.getsourcelines(turns.ending_signals.__wrapped__)  # type: ignore[attr-defined]
    finally_at = next(i for i, line in enumerate(lines) if line.strip() == "finally:")
    restore = start + next(i for i, line in enumerate(lines)
                           if i > finally_at and "signal.signal(sig, default)" in line)
    sent: list[bool] = []

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code.co_name != "ending_signals":
            return None

        def local(f: Any, ev: str, a: Any) -> Any:
            if ev == "line" and f.f_lineno == restore and not sent:
                sent.append(True)
                os.kill(os.getpid(), signal.SIGTERM)
            return local
        return local

    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        pytest.skip("SIGTERM is handled by the test runner here")
    sys.settrace(tracer)
    try:
        with pytest.raises(SignalExit) as ended, turns.ending_signals():
            pass  # the turn ended normally
    finally:
        sys.settrace(None)
    assert sent and ended.value.signum == signal.SIGTERM and ended.value.code == 143
    for sig in (signal.SIGTERM, signal.SIGHUP):
        assert signal.getsignal(sig) is signal.SIG_DFL


class _SignalOnFirstEvent:
    """A text view that sends ``first`` to this process at the turn's first event (a signal
    while the turn runs) and ``at_finish`` as the turn's end is shown."""

    def __init__(self, console: Any, first: int, at_finish: tuple[int, ...] = ()) -> None:
        from cursor_agent_api.cli.views import TextView

        self.inner = TextView(console)
        self.first: int | None = first
        self.at_finish = at_finish

    def handle(self, event: Any, changes: Any) -> None:
        first, self.first = self.first, None
        if first is not None:
            os.kill(os.getpid(), first)  # Python runs the handler at the next bytecode: here
        self.inner.handle(event, changes)

    def finish(self, result: Any, *, continue_hint: str) -> None:
        for sig in self.at_finish:
            os.kill(os.getpid(), sig)
        self.inner.finish(result, continue_hint=continue_hint)


def _signalling_chats(root: Path, signals: tuple[int, ...]) -> Any:
    from cursor_agent_api.cli.saved_chats import SavedChats

    class SignallingChats(SavedChats):
        """Sends ``signals`` to this process as the chat starts being saved."""

        def save(self, session: Any) -> Any:
            for sig in signals:
                os.kill(os.getpid(), sig)
            return super().save(session)

    return SignallingChats(root)


def _turn_ended_by(first: int, *, at_save: tuple[int, ...] = (), at_finish: tuple[int, ...] = (),
                   config: Any, root: Path) -> tuple[int | None, str, Any]:
    """Run a turn of the simulator as ``run``/``chat`` do, in this process: the status of the
    signal it ended the command with, 128 + N (``None``: it returned), what it showed, the
    saved chats."""
    from io import StringIO

    from rich.console import Console

    from cursor_agent_api.cli.turns import Recorder, run_turn
    from cursor_agent_api.sessions import ConversationSession
    from cursor_agent_api.signal_exit import SignalExit

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) not in (signal.SIG_DFL, signal.default_int_handler):
            pytest.fail(f"{signal.Signals(sig).name} is handled by the test runner here")
    out = StringIO()
    view = _SignalOnFirstEvent(Console(file=out, width=200, color_system=None), first,
                               at_finish)
    saved = _signalling_chats(root, at_save)
    code: int | None = None
    with ConversationSession(config) as session:
        try:
            run_turn(session, "list the files", view, Recorder(None), saved=saved,
                     simulated=True)
        except SignalExit as exc:  # the command then dies from exc.signum
            code = 128 + exc.signum
    return code, out.getvalue(), saved


@pytest.mark.parametrize(("first", "second", "status"),
                         [(signal.SIGTERM, signal.SIGTERM, 143),
                          (signal.SIGTERM, signal.SIGHUP, 143),
                          (signal.SIGINT, signal.SIGTERM, 143),  # a CI cancel: SIGINT, SIGTERM
                          (signal.SIGINT, signal.SIGINT, None)],  # Ctrl-C twice: the chat goes on
                         ids=["TERM-TERM", "TERM-HUP", "INT-TERM", "INT-INT"])
def test_a_second_signal_while_the_chat_is_saved_loses_nothing(
        make_cursor_sim_config: Any, tmp_path: Path, first: int, second: int,
        status: int | None) -> None:
    # the second signal, landing as the first one's cancel saved the chat, ended the command
    # there: nothing saved, no chat id said. It is now held until the chat is saved and said.
    code, shown, saved = _turn_ended_by(first, at_save=(second,),
                                        config=make_cursor_sim_config(), root=tmp_path / "chats")
    assert code == status
    (chat,) = saved.list()
    assert f"chat {chat.chat_id} · continue:" in shown


def test_a_signal_as_the_end_is_shown_lets_the_chat_id_be_said(make_cursor_sim_config: Any,
                                                                tmp_path: Path) -> None:
    code, shown, saved = _turn_ended_by(signal.SIGTERM, at_finish=(signal.SIGTERM,),
                                        config=make_cursor_sim_config(), root=tmp_path / "chats")
    assert code == 143
    (chat,) = saved.list()
    assert f"chat {chat.chat_id} · continue:" in shown


def test_a_further_signal_while_held_ends_the_command_at_once(make_cursor_sim_config: Any,
                                                               tmp_path: Path) -> None:
    """The hold is bounded: a save that cannot finish (a lock held, a full pipe to show the
    end on) never keeps the command from ending — one more signal ends it there."""
    code, shown, saved = _turn_ended_by(signal.SIGTERM, at_save=(signal.SIGTERM, signal.SIGTERM),
                                        config=make_cursor_sim_config(), root=tmp_path / "chats")
    assert code == 143
    assert saved.list() == [] and "continue:" not in shown


def test_ndjson_interrupted_as_the_agent_starts_still_ends_with_a_closing_event(
        make_cursor_sim_config: Any, tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    # a signal while send_stream() started the agent (before the stream existed: a slow
    # exec, an ACP session being opened) left NDJSON with no line at all. It now ends, as
    # every interrupted turn, with the closing result:error event. Sent as the client's
    # query_stream begins (sys.settrace): it lands there.
    from cursor_agent_api.cli.saved_chats import SavedChats
    from cursor_agent_api.cli.turns import Recorder, run_turn
    from cursor_agent_api.cli.views import NdjsonView
    from cursor_agent_api.client import CursorAgentClient
    from cursor_agent_api.sessions import ConversationSession
    from cursor_agent_api.signal_exit import SignalExit

    starting = CursorAgentClient.query_stream.__code__
    sent: list[bool] = []

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if event == "call" and frame.f_code is starting and not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGTERM)
        return None

    with ConversationSession(make_cursor_sim_config()) as session:
        sys.settrace(tracer)
        try:
            with pytest.raises(SignalExit) as ended:
                run_turn(session, "list the files", NdjsonView(), Recorder(None),
                         saved=SavedChats(tmp_path / "chats"), simulated=True)
        finally:
            sys.settrace(None)
    assert sent and ended.value.signum == signal.SIGTERM
    lines = capsysbinary.readouterr().out.splitlines()
    assert lines, "nothing on stdout"
    last = json.loads(lines[-1])
    assert last["type"] == "result:error", last
    assert "interrupted while the agent was starting" in last["text"]


def test_ctrl_c_while_the_prompt_is_read_from_a_pipe_dies_from_it(cli_env: dict[str, str]
                                                                   ) -> None:
    """``slow-producer | cursor-agent-api run --trust``, then Ctrl-C while ``run`` still reads
    its prompt: it dies from the SIGINT, as at every Ctrl-C (was click's "Aborted!" and 1,
    then exit 130), nothing sent."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "cursor_agent_api.cli", "run", "--simulate", "--trust"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        cwd=cli_env["TEST_WS"], env=cli_env)
    try:
        for _ in range(1200):  # until it blocks reading the pipe: no event says so (a bound
            # of 60 s, a hang guard)
            with open(f"/proc/{proc.pid}/wchan") as f:
                if "pipe_read" in f.read():
                    break
            time.sleep(0.05)
        else:
            raise AssertionError("run never waited for its prompt")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == -signal.SIGINT, err
    assert b"Aborted" not in err and b"Traceback" not in err, err
