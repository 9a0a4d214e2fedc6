"""The live view at a terminal's width loses nothing of the answer and breaks no command it
shows: a code block's long line is wrapped, not cut off; the command to continue is one line,
for the terminal to wrap (``TERM=dumb``: 80 columns)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from pty_session import run_on_pty

from cursor_agent_api.sim import wire

SID = "31b5904c-4bd1-4899-b607-0786f7fd948e"


def _script(tmp_path: Path, answer: str) -> Path:
    objs = [wire.system_init(SID, "/x", "Auto"), wire.assistant_final(SID, answer),
            wire.result_success(SID, "r", answer, 5)]
    script = tmp_path / "answer.ndjson"
    script.write_text("\n".join(json.dumps(o) for o in objs) + "\n")
    return script


def test_the_live_footers_continue_command_is_one_line(cli_env: dict[str, str]) -> None:
    """At 80 columns (``TERM=dumb``) the footer's ``continue: cursor-agent-api chat --resume ID`` (longer than
    the terminal) is written whole, for the terminal to wrap: a newline in it would make a
    pasted command start a new chat, then fail. ``run -o live`` and ``chat`` alike."""
    env = cli_env
    for args, answers in ((["run", "-o", "live", "--simulate", "--trust", "hi"], []),
                          (["chat", "--simulate", "--trust"],
                           [("› ", b"hi\r"), ("› ", b"\x04")])):
        got = run_on_pty(args, env, cli_env["TEST_WS"], stdout_tty=True, answers=answers)
        assert got.returncode == 0, got.screen[-500:]
        screen = got.screen.replace("\r", "")
        commands = re.findall(r"continue(?: later)?: (cursor-agent-api chat[^\n]*)", screen)
        assert commands, screen[-500:]
        for command in commands:
            assert re.fullmatch(r"cursor-agent-api chat --resume [0-9a-f-]{36} --simulate\S*",
                                command.strip().split("\x1b")[0]), (args[0], command)


def test_the_live_answers_code_block_is_wrapped_not_cut(cli_env: dict[str, str],
                                                        tmp_path: Path) -> None:
    """The default view at a terminal: a code block's line wider than the terminal is
    wrapped in the Markdown answer; none of it is cut off."""
    line = " ".join(f"w{i:02d}" for i in range(40)) + " END"  # 164 columns; the terminal 80
    script = _script(tmp_path, f"Here:\n\n```\n{line}\n```\n")
    env = {**cli_env, "CURSOR_AGENT_SIM_SCRIPT": str(script)}
    got = run_on_pty(["run", "--simulate", "--trust", "hi"], env, cli_env["TEST_WS"],
                     stdout_tty=True)
    assert got.returncode == 0, got.screen[-500:]
    answer = got.screen.rpartition("Here:")[2]
    assert "w39 END" in answer and "w20" in answer, answer
