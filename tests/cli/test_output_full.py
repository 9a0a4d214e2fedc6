"""stdout on a full disk (``/dev/full``): one line, "cannot write the output: …", never a
traceback; a turn whose output is lost still runs to its end, is saved, and its chat id is
said on stderr; ``replay`` blames the output, not its input."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from .conftest import CLI

FULL = "cannot write the output: No space left on device"
RECORDING = Path(__file__).parents[1] / "data" / "cursor-real"


def _run(cli_env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    with open("/dev/full", "w") as full:
        return subprocess.run([*CLI, *args], stdout=full, stderr=subprocess.PIPE, text=True,
                              timeout=90, cwd=cli_env["TEST_WS"], env=cli_env, check=False)


def _saved(cli_env: dict[str, str]) -> list[str]:
    proc = subprocess.run([*CLI, "sessions", "list", "--json"], capture_output=True, text=True,
                          timeout=60, cwd=cli_env["TEST_WS"], env=cli_env, check=True)
    return [json.loads(line)["chat_id"] for line in proc.stdout.splitlines()]


@pytest.mark.parametrize("output", [
    [], ["--output", "live"], ["--output", "json"], ["--output", "ndjson"],
    ["--output-format", "stream-json"], ["--output-format", "json"],
    ["--output-format", "text"]], ids=lambda o: " ".join(o) or "text")
@pytest.mark.parametrize("simulate", [True, False], ids=["simulate", "agent-binary"])
def test_run_says_the_output_is_lost_and_keeps_the_turn(cli_env, output, simulate):
    from cursor_agent_api.testing import sim_binary

    agent = ["--simulate"] if simulate else ["--agent-binary", sim_binary()]
    proc = _run(cli_env, "run", *agent, "--trust", *output, "list the files")
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"✗ {FULL}" in proc.stderr.splitlines()
    saved = _saved(cli_env)
    if simulate and output in ([], ["--output", "live"]):
        assert saved == []  # the banner could not be shown: no turn ran unseen
    else:
        (chat,) = saved
        assert f"chat {chat}" in proc.stderr


@pytest.mark.parametrize("summary", [[], ["--summary"]], ids=["render", "summary"])
def test_replay_blames_the_output(cli_env, summary):
    (recording,) = RECORDING.glob("08-*.ndjson")
    proc = _run(cli_env, "replay", *summary, str(recording))
    assert (proc.returncode, proc.stderr) == (1, f"cursor-agent-api replay: {FULL}\n")


@pytest.mark.parametrize("args", [["list"], ["list", "--json"], ["show"]],
                         ids=["list", "list-json", "show"])
def test_sessions_says_the_output_is_lost(cli, cli_env, args):
    assert cli("run", "--simulate", "--trust", "hi").returncode == 0
    if args == ["show"]:
        args = ["show", *_saved(cli_env)]
    proc = _run(cli_env, "sessions", *args)
    assert (proc.returncode, proc.stderr) == (1, f"Error: {FULL}\n")


@pytest.mark.parametrize("simulate", [True, False], ids=["simulate", "agent-binary"])
def test_chat_says_the_output_is_lost_before_any_turn(cli_env, simulate):
    from cursor_agent_api.testing import sim_binary

    agent = ["--simulate"] if simulate else ["--agent-binary", sim_binary()]
    with open("/dev/full", "w") as full:
        proc = subprocess.run([*CLI, "chat", *agent, "--trust"], input="hi\n", stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=90,
                              cwd=cli_env["TEST_WS"], env=cli_env, check=False)
    assert (proc.returncode, proc.stderr) == (1, f"Error: {FULL}\n")
    assert _saved(cli_env) == []  # its header could not be shown: no turn ran unseen


CLOSED = "cannot write the output: standard output is closed"


@pytest.mark.parametrize("args", [
    ["replay", "--summary", "REC"], ["replay", "REC"], ["run", "--simulate", "--trust", "-o", "json", "hi"],
    ["run", "--simulate", "--trust", "hi"], ["chat", "--simulate", "--trust"], ["sessions", "list"]],
    ids=["replay-summary", "replay", "run-json", "run", "chat", "sessions"])
def test_a_closed_stdout_is_one_line(cli_env, args):
    # (`>&-`): sys.stdout is None; replay --summary, run -o json and chat died in an
    # AttributeError traceback ('NoneType' object has no attribute 'buffer' / 'write')
    (recording,) = RECORDING.glob("08-*.ndjson")
    args = [str(recording) if a == "REC" else a for a in args]
    proc = subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", *CLI, *args], input="hi\n",
                          stderr=subprocess.PIPE, text=True, timeout=90, cwd=cli_env["TEST_WS"],
                          env=cli_env, check=False)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and CLOSED in proc.stderr, proc.stderr
