"""``cursor-agent-api run`` as a drop-in for ``agent --print``.

The simulator stands in for the agent under its real name: a directory on ``PATH`` holds
``agent`` (a link to ``cursor-agent-sim``), so a script written for ``agent -p`` runs as
written, then again with ``agent`` renamed to ``cursor-agent-api run`` — and nothing else
changed. The outputs must have the same shapes (seed 000 and the real recordings).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from cursor_agent_api.testing import sim_binary

Run = Callable[..., subprocess.CompletedProcess[str]]

DATA = Path(__file__).parent.parent / "data" / "cursor-real"
# The result object's fields in the order the real CLI writes them (tests/data/cursor-real).
REAL_ORDER = ["type", "subtype", "duration_ms", "duration_api_ms", "is_error", "result",
              "session_id", "request_id"]

SCRIPT = r"""#!/bin/sh
# Written for Cursor's CLI: ask, parse the JSON answer, fail on error.
AGENT="${AGENT:-agent}"
out=$($AGENT -p --output-format json --trust "What is 6 * 7?") || { echo "agent failed: $?" >&2; exit 3; }
printf '%s\n' "$out" | python3 -c 'import json, sys; print(json.load(sys.stdin)["result"])'
"""


@pytest.fixture
def agent_path(cli_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """``cli_env`` with ``agent`` (the simulator) and ``cursor-agent-api`` on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "agent").symlink_to(sim_binary())
    (bin_dir / "cursor-agent-api").write_text(
        f"#!/bin/sh\nexec {sys.executable} -m cursor_agent_api.cli \"$@\"\n")
    (bin_dir / "cursor-agent-api").chmod(0o755)
    return {**cli_env, "PATH": f"{bin_dir}{os.pathsep}{cli_env['PATH']}"}


def sh(command: str, env: dict[str, str], extra: dict[str, str] | None = None
       ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=90,
                          cwd=env["TEST_WS"], env={**env, **(extra or {})}, check=False)


def test_the_real_recordings_write_the_result_fields_in_this_order() -> None:
    for path in DATA.glob("*.ndjson"):
        last = orjson.loads(path.read_bytes().strip().split(b"\n")[-1])
        assert list(last)[: len(REAL_ORDER)] == REAL_ORDER, path.name


def test_json_is_the_agents_result_object(agent_path: dict[str, str]) -> None:
    direct = sh("agent -p --output-format json --trust 'What is 6 * 7?'", agent_path)
    ours = sh("cursor-agent-api run -p --output-format json --trust 'What is 6 * 7?'",
              agent_path)
    assert direct.returncode == ours.returncode == 0, ours.stderr
    (direct_line,) = direct.stdout.splitlines()
    (our_line,) = ours.stdout.splitlines()
    mine, theirs = orjson.loads(our_line), orjson.loads(direct_line)
    assert list(mine) == list(theirs)
    assert list(mine)[: len(REAL_ORDER)] == REAL_ORDER
    assert mine["result"] == theirs["result"] and mine["result"].endswith("42")
    assert (mine["type"], mine["subtype"], mine["is_error"]) == ("result", "success", False)
    assert ours.stderr == ""  # as the CLI: nothing on stderr when all went well


def test_text_is_the_final_answer(agent_path: dict[str, str]) -> None:
    direct = sh("agent -p --output-format text --trust 'What is 6 * 7?'", agent_path)
    ours = sh("cursor-agent-api run -p --output-format text --trust 'What is 6 * 7?'",
              agent_path)
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == direct.stdout and ours.stdout.rstrip().endswith("42")


@pytest.mark.parametrize("partial", [[], ["--stream-partial-output"]], ids=["whole", "partial"])
def test_stream_json_is_the_agents_lines(agent_path: dict[str, str], partial: list[str]) -> None:
    flags = " ".join(["-p", "--output-format", "stream-json", "--yolo", *partial])
    direct = sh(f"agent {flags} 'read notes.txt'", agent_path)
    ours = sh(f"cursor-agent-api run {flags} 'read notes.txt'", agent_path)
    assert ours.returncode == 0, ours.stderr

    def shape(out: str) -> list[tuple[str, str | None]]:
        return [(e["type"], e.get("subtype")) for e in map(orjson.loads, out.splitlines())]

    assert shape(ours.stdout) == shape(direct.stdout)
    last = orjson.loads(ours.stdout.splitlines()[-1])
    assert list(last)[: len(REAL_ORDER)] == REAL_ORDER


def test_stream_json_has_token_deltas_only_when_asked(agent_path: dict[str, str]) -> None:
    def assistant_lines(*flags: str) -> int:
        out = sh(" ".join(["cursor-agent-api run -p --output-format stream-json --yolo", *flags,
                           "'write a poem'"]), agent_path).stdout
        return sum(orjson.loads(line)["type"] == "assistant" for line in out.splitlines())

    whole, partial = assistant_lines(), assistant_lines("--stream-partial-output")
    assert 0 < whole < partial
    assert assistant_lines("--partial") == partial


def test_a_script_for_agent_p_works_renamed_and_gains_saving(agent_path: dict[str, str],
                                                             tmp_path: Path) -> None:
    script = tmp_path / "ask.sh"
    script.write_text(SCRIPT)
    script.chmod(0o755)
    direct = sh(str(script), agent_path)
    assert direct.returncode == 0, direct.stderr
    ours = sh(str(script), agent_path, {"AGENT": "cursor-agent-api run"})
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == direct.stdout and ours.stdout.strip().endswith("42")
    (saved,) = sh("cursor-agent-api sessions list --json", agent_path).stdout.splitlines()
    assert orjson.loads(saved)["first_prompt"] == "What is 6 * 7?"


def test_a_failure_is_one_typed_line_on_stderr(agent_path: dict[str, str],
                                               tmp_path: Path) -> None:
    script = tmp_path / "ask.sh"
    script.write_text(SCRIPT)
    script.chmod(0o755)
    fault = {"CURSOR_AGENT_SIM_FAULT": "auth"}
    direct = sh("agent -p --output-format json --trust hi", agent_path, fault)
    ours = sh("cursor-agent-api run -p --output-format json --trust hi", agent_path, fault)
    assert direct.returncode == ours.returncode == 1
    assert direct.stdout == ours.stdout == ""  # no JSON object on failure, as the CLI
    (line,) = ours.stderr.splitlines()  # one line, however long: no wrapping on a pipe
    assert line.startswith("✗ the agent is not authenticated")
    assert "agent login" in line and "AgentConfig" not in line
    renamed = sh(str(script), agent_path, {**fault, "AGENT": "cursor-agent-api run"})
    assert renamed.returncode == 3 and "agent failed: 1" in renamed.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [(["--api-key", "sk-secret"], "CURSOR_API_KEY"),
     (["--output-format", "json", "--output", "text"], "one of them"),
     (["--output-format", "yaml"], "yaml")],
    ids=["api-key", "both-outputs", "bad-format"],
)
def test_drop_in_usage_errors_exit_2(cli: Run, args: list[str], says: str) -> None:
    proc = cli("run", "--simulate", "--trust", *args, "hi")
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert says in proc.stderr and "Traceback" not in proc.stderr
    assert "sk-secret" not in proc.stderr
