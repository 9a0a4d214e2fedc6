"""``run``/``chat --acp`` with a person at a terminal (stdin on a pseudo-terminal): the
prompts end with the turn, go where the person sees them, are answered only once shown;
without a terminal nothing is asked and the rules decide.

Each run has a bound after which the command is killed: a hang guard, not a timing (a run
that hangs fails with ``returncode is None``)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from pty_session import CLI, run_on_pty
from steer_agent import agent_binary

PROMPT = "reject (default)"  # the end of a permission prompt


def _ws(env: dict[str, str]) -> str:
    return env["TEST_WS"]


def _agent(tmp_path: Path, env: dict[str, str], steps: list[object]) -> dict[str, str]:
    """The environment that makes ``--agent-binary`` play ``steps`` (answers logged)."""
    return {**env, "STEER_AGENT_STEPS": json.dumps(steps),
            "STEER_AGENT_LOG": str(tmp_path / "answers.ndjson")}


def _answers(tmp_path: Path) -> list[dict[str, object]]:
    log = tmp_path / "answers.ndjson"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


# ---- 1. a turn that ends while a prompt is open ---------------------------------------------

def test_a_timeout_ends_the_turn_while_a_prompt_waits(cli_env: dict[str, str]) -> None:
    # the timeout counts the simulator's start and setup too, before the prompt shows: 5 s
    # leaves a loaded machine ~4 s for them (with 3 s, a start 2.5 s late timed out first)
    got = run_on_pty(["run", "--acp", "--simulate", "--trust", "--timeout", "5", "--output",
                      "text", "run `ls`"], cli_env, _ws(cli_env), bound=30)
    assert got.returncode == 1, got  # None: still waiting for an answer at the bound
    assert PROMPT in got.screen  # the prompt was shown, nobody answered
    assert "--timeout" in got.screen


def test_an_agent_crash_while_a_prompt_waits_is_reported(cli_env: dict[str, str],
                                                          tmp_path: Path) -> None:
    crash = tmp_path / "crash-now"
    env = _agent(tmp_path, cli_env, [["exit_when_file", str(crash)], ["permission", "make"]])
    got = run_on_pty(["run", "--acp", "--agent-binary", str(agent_binary(tmp_path)), "--trust",
                      "--output", "text", "hello"], env, _ws(cli_env),
                     answers=[(PROMPT, crash.touch)], bound=30)
    assert got.returncode == 1, got
    assert "exited with code 3" in got.screen


# ---- 2. the prompt goes where the person is -------------------------------------------------

def test_with_stdout_on_a_pipe_the_prompt_is_on_the_terminal_and_json_stays_whole(
        cli_env: dict[str, str]) -> None:
    got = run_on_pty(["run", "--acp", "--simulate", "--trust", "-o", "json", "run `ls`"],
                     cli_env, _ws(cli_env), answers=[(PROMPT, b"a\n")], bound=30)
    assert got.returncode == 0, got
    assert "$ ls" in got.screen
    (line,) = got.stdout.splitlines()
    assert json.loads(line)["success"] is True


def test_without_a_terminal_for_the_prompt_the_rules_decide(cli_env: dict[str, str]) -> None:
    # stdin is a terminal, stderr is not: no one would see a prompt, so none is shown
    got = run_on_pty(["run", "--acp", "--simulate", "--trust", "--output", "text", "run `ls`"],
                     cli_env, _ws(cli_env), stderr_tty=False, bound=30)
    assert got.returncode == 0, got
    assert "asks to use" not in got.stdout + got.stderr + got.screen
    assert "shell ls  rejected" in got.stdout


# ---- 3. type-ahead ----------------------------------------------------------------------------

def test_a_line_typed_before_the_prompt_does_not_answer_it(cli_env: dict[str, str],
                                                           tmp_path: Path) -> None:
    go = tmp_path / "ask-now"
    env = _agent(tmp_path, cli_env, [["text", "Shall I go on?\n"], ["wait_file", str(go)],
                                     ["permission", "rm -rf build"]])
    got = run_on_pty(["run", "--acp", "--agent-binary", str(agent_binary(tmp_path)), "--trust",
                      "--output", "text", "hello"], env, _ws(cli_env), stdout_tty=True,
                     answers=[("Shall I go on?", b"y\n"), ("", go.touch), (PROMPT, b"r\n")],
                     bound=30)
    assert got.returncode == 0, got
    (answer,) = _answers(tmp_path)
    assert answer["answer"] == {"outcome": {"outcome": "selected", "optionId": "reject-once"}}


# ---- 8. a closed stdin --------------------------------------------------------------------------

def _closed_stdin(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    command = " ".join(f"'{a}'" for a in [*CLI, *args])
    return subprocess.run(["sh", "-c", f"exec {command} <&-"], capture_output=True, text=True,
                          env=env, cwd=env["TEST_WS"], timeout=90, check=False)


def test_a_closed_stdin_is_no_terminal_and_no_prompt(cli_env: dict[str, str]) -> None:
    run = _closed_stdin(cli_env, "run", "--acp", "--simulate", "--trust", "--output", "text",
                        "hi")
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    chat = _closed_stdin(cli_env, "chat", "--acp", "--simulate", "--trust")
    assert chat.returncode == 0 and "Traceback" not in chat.stderr, chat.stderr
    none = _closed_stdin(cli_env, "run", "--simulate", "--trust")
    assert none.returncode == 2 and "Traceback" not in none.stderr, none.stderr
    assert "no prompt" in none.stderr


# ---- 9. a plan without a terminal ---------------------------------------------------------------

def test_without_a_terminal_a_plan_is_rejected_and_said(cli_env: dict[str, str],
                                                        tmp_path: Path) -> None:
    env = _agent(tmp_path, cli_env, [["plan", {"name": "Wipe", "overview": "delete the repo",
                                               "plan": "1. rm -rf .", "todos": []}]])
    proc = subprocess.run([*CLI, "run", "--acp", "--agent-binary", str(agent_binary(tmp_path)),
                           "--trust", "--output", "text", "hello"], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, env=env, cwd=_ws(cli_env), timeout=90,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    (answer,) = _answers(tmp_path)
    assert answer["answer"]["outcome"]["outcome"] == "rejected"  # type: ignore[index]
    (line,) = [ln for ln in proc.stderr.splitlines() if "plan" in ln]
    assert "Wipe" in line and "rejected" in line



def test_without_a_terminal_a_rejected_call_says_once_why_and_how_to_allow_it(
        cli_env: dict[str, str], tmp_path: Path) -> None:
    # audit 13: the view said only "⊘ shell touch p.txt rejected"
    env = _agent(tmp_path, cli_env, [["permission", "touch p.txt"], ["permission", "make"],
                                     ["permission", "ls"]])
    proc = subprocess.run([*CLI, "run", "--acp", "--agent-binary", str(agent_binary(tmp_path)),
                           "--trust", "--allow", "Shell(ls)", "--output", "text", "hello"],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env,
                          cwd=_ws(cli_env), timeout=90, check=False)
    assert proc.returncode == 0, proc.stderr
    options = [a["answer"]["outcome"]["optionId"] for a in _answers(tmp_path)]  # type: ignore[index]
    assert options == ["reject-once", "reject-once", "allow-once"]  # the rules decide, as before
    (line,) = [ln for ln in proc.stderr.splitlines() if "no terminal to ask" in ln]
    assert "touch p.txt" in line and "--allow 'Shell(touch)'" in line, line


def test_without_a_terminal_force_accepts_a_plan_and_says_so(cli_env: dict[str, str],
                                                             tmp_path: Path) -> None:
    # --force approves everything: a plan was rejected all the same (no terminal to ask)
    env = _agent(tmp_path, cli_env, [["plan", {"name": "Rename", "overview": "rename f",
                                               "plan": "1. rename f to g", "todos": []}]])
    proc = subprocess.run([*CLI, "run", "--acp", "--agent-binary", str(agent_binary(tmp_path)),
                           "--trust", "--force", "--output", "text", "hello"],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env,
                          cwd=_ws(cli_env), timeout=90, check=False)
    assert proc.returncode == 0, proc.stderr
    (answer,) = _answers(tmp_path)
    assert answer["answer"]["outcome"]["outcome"] == "accepted"  # type: ignore[index]
    (line,) = [ln for ln in proc.stderr.splitlines() if "plan" in ln]
    assert "Rename" in line and "accepted" in line and "--force" in line

# ---- 10. the documented prompt -----------------------------------------------------------------

def test_the_prompt_docs_acp_md_shows_is_what_the_terminal_shows(cli_env: dict[str, str]) -> None:
    doc = (Path(__file__).parents[2] / "docs" / "acp.md").read_text()
    section = doc[doc.index("## On the command line"):]
    block = section[section.index("```text\n") + len("```text\n"):]
    expected = block[:block.index("```")].splitlines()
    env = {**cli_env, "COLUMNS": "200"}
    got = run_on_pty(["run", "--acp", "--simulate", "--trust", "--output", "text",
                      "run `rm -rf build`"], env, _ws(cli_env), stdout_tty=True,
                     answers=[(PROMPT, b"r\n")], bound=30, term="xterm")  # COLUMNS holds
    assert got.returncode == 0, got
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", got.screen).replace("\r", "")
    shown = shown.replace(cli_env["CURSOR_CONFIG_DIR"], "/home/me/.cursor")
    shown = re.sub(r"rejected \(\d+ ms\)", "rejected (6 ms)", shown)
    start = shown.index(expected[0])
    assert shown[start:].splitlines()[:len(expected)] == expected
