"""``replay``'s exit status says the recorded turn's outcome, as ``run``'s does for the same
stream: 0 for a turn that succeeded, 1 for one that failed (a result with ``is_error`` true,
an error subtype, a stream that ended without a result), in every output form."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

SESSION = "3b0a4b8e-7c1e-4b7e-9d0e-1c2d3e4f5a6b"


def line(**event: object) -> str:
    return orjson.dumps({**event, "session_id": SESSION}).decode() + "\n"


INIT = line(type="system", subtype="init", apiKeySource="login", cwd="/x", model="Auto",
            permissionMode="default")


def result(subtype: str, is_error: bool, text: str) -> str:
    return line(type="result", subtype=subtype, duration_ms=5, duration_api_ms=5,
                is_error=is_error, result=text, request_id="r1")


RECORDINGS = {
    "error-result": (INIT + result("error", True,
                                   "Request timed out (the model provider did not answer)"),
                     "Request timed out (the model provider did not answer)"),
    "is-error-on-success-subtype": (INIT + result("success", True, "Something failed"),
                                    "Something failed"),
    "no-result": (INIT + line(type="assistant", message={
        "role": "assistant", "content": [{"type": "text", "text": "half"}]}),
                  "without a result"),
}

FORMS = {"rendered": (), "summary": ("--summary",)}


def replay(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cursor_agent_api.cli", "replay", str(path),
                           *args], capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "NO_COLOR": "1"})


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", RECORDINGS)
def test_a_failed_turn_exits_1(tmp_path: Path, name: str, form: str) -> None:
    recording, error = RECORDINGS[name]
    path = tmp_path / "turn.ndjson"
    path.write_text(recording)
    proc = replay(path, *FORMS[form])
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert proc.stderr == ""  # the outcome is the rendering's (or the summary's) to say
    if form == "summary":
        summary = orjson.loads(proc.stdout)
        assert summary["success"] is False and error in summary["error"], summary
    else:
        failure = [line for line in proc.stdout.splitlines() if line.startswith("✗ ")]
        assert len(failure) == 1 and error in failure[0], proc.stdout


@pytest.mark.parametrize("form", FORMS)
def test_a_turn_that_succeeded_exits_0(tmp_path: Path, form: str) -> None:
    path = tmp_path / "turn.ndjson"
    path.write_text(INIT + result("success", False, "all good"))
    proc = replay(path, *FORMS[form])
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    if form == "summary":
        assert orjson.loads(proc.stdout)["success"] is True


def test_run_on_the_same_stream_exits_1_too(cli_env: dict[str, str], tmp_path: Path) -> None:
    """The reference: ``run`` with the agent writing the failed turn's stream."""
    path = tmp_path / "turn.ndjson"
    path.write_text(RECORDINGS["error-result"][0])
    proc = subprocess.run(
        [sys.executable, "-m", "cursor_agent_api.cli", "run", "--simulate", "--trust",
         "-o", "json", "hi"], capture_output=True, text=True, timeout=90, check=False,
        cwd=cli_env["TEST_WS"], env={**cli_env, "CURSOR_AGENT_SIM_SCRIPT": str(path)})
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert orjson.loads(proc.stdout)["success"] is False


USER = line(type="user", message={"role": "user", "content": [{"type": "text", "text": "hi"}]})
GOOD = INIT + USER + result("success", False, "all good")
BAD = INIT + USER + result("error", True, "Request timed out")
CUT = INIT + USER + line(type="assistant", message={
    "role": "assistant", "content": [{"type": "text", "text": "half"}]})  # no result: cut off

# A recording of several turns (``chat --record``: each turn its init … result): its exit
# status is 1 if any turn failed, as a piped ``chat`` stops and exits 1 at its first failed
# turn; what is rendered (the first turn) is unchanged.
TURNS = {
    "good-good": (GOOD + GOOD, 0),
    "good-bad": (GOOD + BAD, 1),
    "good-bad-good": (GOOD + BAD + GOOD, 1),
    "good-cut": (GOOD + CUT, 1),
    "good-then-stderr": (GOOD + "a stray line of stderr\n", 0),  # no new turn: no failure
}


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", TURNS)
def test_a_recording_of_several_turns_exits_1_if_any_failed(
    tmp_path: Path, name: str, form: str
) -> None:
    recording, status = TURNS[name]
    path = tmp_path / "chat.ndjson"
    path.write_text(recording)
    proc = replay(path, *FORMS[form])
    assert proc.returncode == status, (proc.stdout, proc.stderr)
    single = tmp_path / "first.ndjson"
    single.write_text(GOOD)
    alone = replay(single, *FORMS[form])
    if form == "rendered":  # what is shown is the first turn's, as before
        assert "✓ done" in proc.stdout and "✗" not in proc.stdout, proc.stdout
    else:
        summary = orjson.loads(proc.stdout)  # the first turn's, but for the lines counted
        assert summary == orjson.loads(alone.stdout) | {
            k: summary[k] for k in ("events", "raw_lines")}
    if status:
        (note,) = proc.stderr.splitlines()
        assert "recorded turn" in note and "failed" in note, note
    else:
        assert proc.stderr == ""


@pytest.mark.parametrize("form", FORMS)
def test_a_first_turn_without_a_result_fails_the_recording(tmp_path: Path, form: str) -> None:
    """The first turn cut off (a chat's Ctrl-C, its agent dead), the chat went on: what was
    shown ran on into the next turn's result, and looked a success, exit 0 (review 41). The
    recording failed: exit 1, and what is shown, the first turn alone, says it failed."""
    path = tmp_path / "chat.ndjson"
    path.write_text(CUT + GOOD)
    proc = replay(path, *FORMS[form])
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    if form == "rendered":
        assert "✗" in proc.stdout and "✓ done" not in proc.stdout, proc.stdout
    else:
        assert orjson.loads(proc.stdout)["success"] is False


def said(text: str) -> str:
    return line(type="assistant", message={"role": "assistant",
                                           "content": [{"type": "text", "text": text}]})


@pytest.mark.parametrize("form", FORMS)
def test_a_recording_of_several_turns_is_shown_and_summarised_by_its_first(
        tmp_path: Path, form: str) -> None:
    """Audit 12: the later turns' ``▶`` headers were glued onto the first answer's last line
    (no newline after it) and shown before its footer; ``--summary`` counted every turn's
    events but gave the first turn's text, usage and tool calls. Both are the first turn's."""
    first = INIT + USER + said("first answer") + result("success", False, "first answer")
    later = INIT.replace('"Auto"', '"Later"') + USER + said("second answer") \
        + result("success", False, "second answer")
    path = tmp_path / "chat.ndjson"
    path.write_text(first + "a stray line of stderr\n" + later + later)
    alone = tmp_path / "first.ndjson"
    alone.write_text(first + "a stray line of stderr\n")
    proc, single = replay(path, *FORMS[form]), replay(alone, *FORMS[form])
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert proc.stdout == single.stdout  # the later turns add nothing to what is shown
    if form == "rendered":
        assert proc.stdout.count("▶") == 1 and "Later" not in proc.stdout, proc.stdout
        assert "second answer" not in proc.stdout
    else:
        summary = orjson.loads(proc.stdout)
        assert (summary["text"], summary["events"], summary["raw_lines"]) == ("first answer", 4, 1)
