"""``cursor-agent-api replay``, driven as a user would: a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

DATA = Path(__file__).parent.parent / "data" / "cursor-real"
RECORDINGS = sorted(DATA.glob("*.ndjson"))


def replay(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "cursor_agent_api.cli", "replay", *args],
        input=stdin, capture_output=True, timeout=60, check=False,
        env={**os.environ, "NO_COLOR": "1"},
    )


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.name[:2])
def test_summary_of_every_real_recording(path: Path) -> None:
    proc = replay(str(path), "--summary")
    assert proc.returncode == 0, proc.stderr
    s = orjson.loads(proc.stdout)
    assert set(s) == {"session_id", "success", "error", "text", "result_text", "usage", "events",
                      "raw_lines", "dropped_lines", "tool_calls"}
    assert s["success"] is True and s["error"] is None and s["dropped_lines"] == 0
    assert s["text"] == s["result_text"] and s["text"]
    assert s["raw_lines"] == 0
    assert s["events"] == len([x for x in path.read_bytes().split(b"\n") if x.strip()])
    assert set(s["usage"]) == {"input_tokens", "output_tokens", "cache_read_tokens",
                               "cache_write_tokens"}
    for call in s["tool_calls"]:
        assert call["status"] in {"succeeded", "rejected"}
        assert call["kind"] != "unknown" and call["name"].endswith("ToolCall")
        assert call["args"]


def test_summary_from_stdin_with_banner_truncated_tail_and_unknown_events() -> None:
    data = (
        b"\x1b[1mCursor Agent\x1b[0m\n"
        + (DATA / "02-hcn-0915-probe-43-partial-output-with-read-tool.ndjson").read_bytes()
        + b'{"type":"brand_new","x":1}\n[1,2]\n{"type":"tool_call","subtype":"start'
    )
    proc = replay("-", "--summary", stdin=data)
    assert proc.returncode == 0, proc.stderr
    s = orjson.loads(proc.stdout)
    assert s["events"] == 10  # 9 lines of the recording + the unknown type
    assert s["raw_lines"] == 3  # banner, non-object JSON, truncated tail
    assert s["text"] == s["result_text"] == "READ-OK"


def test_summary_counts_an_object_nested_too_deep_as_an_event_line() -> None:
    # review 50: counted per event type, the too-deep object (kept as a RAW event, code
    # too_deep) went to raw_lines, where the reader counts it as a line that was a JSON object
    deep = b'{"type":"assistant","x":' + b"[" * 300 + b"]" * 300 + b"}"
    data = b"\n".join([b'{"type":"system","subtype":"init","session_id":"s"}', deep,
                       b'{"type":"result","subtype":"success","result":"ok","session_id":"s"}']) + b"\n"
    proc = replay("-", "--summary", stdin=data)
    s = orjson.loads(proc.stdout)
    assert (s["events"], s["raw_lines"]) == (3, 0), s


def test_summary_of_a_turn_without_result() -> None:
    lines = (DATA / "06-hcn-0915-probe-52s-shell-force.ndjson").read_bytes().split(b"\n")[:3]
    proc = replay("-", "--summary", stdin=b"\n".join(lines) + b"\n")
    s = orjson.loads(proc.stdout)
    assert s["success"] is False and s["result_text"] is None and s["usage"] is None
    assert s["error"]
    (call,) = s["tool_calls"]
    assert call["status"] == "abandoned" and call["kind"] == "shell"
    assert call["call_id"].count("\n") == 1  # kept exactly


def _answer_in_a_long_line() -> bytes:
    sid = "8ef40118-8378-436d-8ba8-2436b19cc877"
    return b"".join(orjson.dumps(obj) + b"\n" for obj in [
        {"type": "system", "subtype": "init", "session_id": sid, "model": "M", "cwd": "/x"},
        {"type": "assistant", "session_id": sid, "message": {"role": "assistant", "content": [
            {"type": "text", "text": "the answer " + "x" * 5000}]}},
        {"type": "result", "subtype": "success", "is_error": False, "result": "the answer",
         "session_id": sid}])


WHY_DROPPED = ("1 line(s) of the recording exceeded --max-line-bytes=1000 and were dropped; "
               "the turn is incomplete")


def test_summary_of_a_recording_with_a_dropped_line_fails_and_says_so() -> None:
    """A line over --max-line-bytes is dropped: the answer is missing, so the summary is no
    success (as `run` fails such a turn), counts the line and exits 1."""
    proc = replay("-", "--summary", "--max-line-bytes", "1000", stdin=_answer_in_a_long_line())
    assert proc.returncode == 1, proc.stderr
    s = orjson.loads(proc.stdout)
    assert (s["success"], s["error"], s["dropped_lines"]) == (False, WHY_DROPPED, 1)
    assert (s["text"], s["result_text"]) == ("", "the answer")


def test_rendering_of_a_recording_with_a_dropped_line_fails_and_says_so() -> None:
    proc = replay("-", "--max-line-bytes", "1000", stdin=_answer_in_a_long_line())
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout.decode()
    assert f"✗ {WHY_DROPPED}" in out.splitlines() and "✓ done" not in out



@pytest.mark.parametrize("summary", [["--summary"], []], ids=["summary", "render"])
def test_a_recording_whose_every_line_was_dropped_is_not_called_empty(summary: list[str]) -> None:
    # --summary said "… is not a stream-json recording (it is empty)" of a 1.2 KB file
    line = orjson.dumps({"type": "assistant", "message": {"content": [{"type": "text",
                                                                        "text": "x" * 1200}]}})
    proc = replay("-", *summary, "--max-line-bytes", "1000", stdin=line + b"\n")
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout.decode() + proc.stderr.decode()
    assert "empty" not in out and "1 line(s) of the recording exceeded --max-line-bytes=1000" in out

def test_error_result_sets_error() -> None:
    proc = replay("-", "--summary",
                  stdin=b'{"type":"result","subtype":"error","is_error":true,"error":"Nope"}\n')
    s = orjson.loads(proc.stdout)
    assert (s["success"], s["error"]) == (False, "Nope")


def test_rendering_for_a_person() -> None:
    proc = replay(str(DATA / "03-hcn-0910-probe-15-composer-denials-completed-without-started.ndjson"))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    assert "\x1b[" not in out  # not a terminal: no escape codes
    assert "⊘ web_fetch https://example.com  rejected" in out
    assert "⊘ shell curl -sL https://example.com | grep -i '<title>' | head -1  rejected" in out
    assert "⊘ web_search example.com page title  rejected" in out
    assert "│ Fetching https://example.com to retrieve its page title." in out  # thinking
    assert "**Example Domain**" in out
    assert "tokens in 25,755 / out 656" in out
    assert out.count("The live fetch did not run.") == 1


def test_partial_output_rendering_is_not_doubled() -> None:
    proc = replay(str(DATA / "01-hcn-0915-probe-11-partial-output-text-only.ndjson"))
    assert proc.stdout.decode().count("River remembers the weathered stones") == 1


@pytest.mark.parametrize("target", ["/no/such/file.ndjson", "."])
def test_unreadable_file_is_one_line_and_exit_2(target: str) -> None:
    proc = replay(target)
    assert proc.returncode == 2
    err = proc.stderr.decode()
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "cannot read" in err


def test_rendering_with_every_call_id_redacted_shows_every_call() -> None:
    """A recording whose publisher redacted every id to "<redacted>" (issue 12, point 8):
    each call is printed, not only the first one with that id."""
    path = DATA / "07-hcn-0915-probe-15s-shell-and-fetch-rejected.ndjson"
    lines = [orjson.loads(line) for line in path.read_bytes().split(b"\n") if line.strip()]
    for obj in lines:
        if "call_id" in obj:
            obj["call_id"] = "<redacted>"
    proc = replay("-", stdin=b"".join(orjson.dumps(obj) + b"\n" for obj in lines))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    assert out.count("⊘ shell curl -sI https://example.com  rejected") == 2
    assert out.count("⊘ web_fetch https://example.com  rejected") == 1


README = Path(__file__).parent.parent.parent / "README.md"


@pytest.mark.parametrize("summary", [[], ["--summary"]], ids=["render", "summary"])
@pytest.mark.parametrize("target", [str(README), "/bin/true", "-"], ids=["text", "binary", "empty"])
def test_input_without_a_json_event_is_exit_1(target: str, summary: list[str]) -> None:
    proc = replay(target, *summary, stdin=b"")
    assert proc.returncode == 1, proc.stdout[:200]
    assert proc.stdout == b""  # nothing of it printed as agent output
    (line,) = proc.stderr.decode().splitlines()
    assert "not a stream-json recording" in line


def test_binary_lines_among_events_are_not_written() -> None:
    data = (DATA / "02-hcn-0915-probe-43-partial-output-with-read-tool.ndjson").read_bytes()
    binary = Path("/bin/true").read_bytes()[:300]
    proc = replay("-", stdin=binary.replace(b"\n", b"") + b"\n" + data + binary + b"\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count(b"(binary data, ") == 2
    assert b"\x00" not in proc.stdout and b"ELF" not in proc.stdout
    assert b"READ-OK" in proc.stdout


def test_escape_sequences_from_the_agent_are_shown_not_obeyed() -> None:
    line = orjson.dumps({"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "text", "text": "hi\x1b]0;pwned\x07 \x1b[2J there"}]}})
    proc = replay("-", stdin=line + b"\n")
    assert b"\x1b" not in proc.stdout and b"\x07" not in proc.stdout
    assert b"hi\\x1b]0;pwned\\x07 \\x1b[2J there" in proc.stdout



def test_a_session_id_with_escape_sequences_is_shown_inert() -> None:
    """The footer's chat id is the recording's word: its escapes are shown, never obeyed."""
    sid = "abc\x1b]0;PWNED\x1b\\\x1b[2J\x1b[31mRED"
    lines = [{"type": "system", "subtype": "init", "session_id": sid, "model": "M", "cwd": "/x"},
             {"type": "result", "subtype": "error", "is_error": True, "error": "boom",
              "result": "", "session_id": sid}]
    proc = replay("-", stdin=b"".join(orjson.dumps(obj) + b"\n" for obj in lines))
    assert proc.returncode == 1, proc.stderr  # the recorded turn failed (replay reads it all)
    assert b"\x1b" not in proc.stdout, proc.stdout[-200:]
    assert b"chat abc\\x1b]0;PWNED\\x1b\\\\x1b[2J\\x1b[31mRED" in proc.stdout


@pytest.mark.parametrize("summary", [[], ["--summary"]], ids=["render", "summary"])
def test_a_closed_stdin_is_one_line_and_exit_2(summary: list[str]) -> None:
    command = " ".join([sys.executable, "-m", "cursor_agent_api.cli", "replay", "-", *summary])
    proc = subprocess.run(["sh", "-c", f"exec {command} <&-"], capture_output=True, timeout=60,
                          check=False, env={**os.environ, "NO_COLOR": "1"})
    assert proc.returncode == 2, proc.stderr[-300:]
    assert proc.stderr.decode().splitlines() == [
        "cursor-agent-api replay: cannot read standard input: it is closed"]
    assert proc.stdout == b""


def test_the_name_of_an_unknown_tool_is_shown_inert() -> None:
    """A tool call of a kind this library does not know is shown by its key, the agent's word."""
    key = "x\x1b]0;PWNED\x07\x1b[2JToolCall"
    lines = [{"type": "tool_call", "subtype": subtype, "call_id": "c1", "session_id": "s1",
              "tool_call": {key: {"args": {}, **extra}}}
             for subtype, extra in (("started", {}),
                                    ("completed", {"result": {"success": {}}}))]
    proc = replay("-", stdin=b"".join(orjson.dumps(obj) + b"\n" for obj in lines))
    assert proc.returncode == 1, proc.stderr  # no result: the turn is incomplete (read whole)
    assert b"\x1b" not in proc.stdout, proc.stdout
    assert "✓ x\\x1b]0;PWNED\\x07\\x1b[2JToolCall  succeeded" in proc.stdout.decode()


def test_a_file_name_with_escape_sequences_is_shown_inert(tmp_path: Path) -> None:
    """``replay *.ndjson`` in a folder someone else filled: the name of a file that is not a
    recording, or cannot be read, is said with its escapes visible (``\\x1b]0;``), never
    obeyed (a window title, a screen clear)."""
    evil = "x\x1b]0;PWNED\x07\x1b[2J"
    not_json = tmp_path / f"{evil}.ndjson"
    not_json.write_text("not json\n")
    for args in ([str(not_json)], [str(not_json), "--summary"],
                 [str(tmp_path / f"{evil}-missing.ndjson")]):
        proc = replay(*args)
        assert proc.returncode in (1, 2), proc.stderr
        assert b"\x1b" not in proc.stderr and b"\x07" not in proc.stderr, proc.stderr
        assert b"x\\x1b]0;PWNED\\x07\\x1b[2J" in proc.stderr, proc.stderr


def test_a_file_name_with_a_newline_stays_on_its_line(tmp_path: Path) -> None:
    """A newline or tab in a file name is shown as ``\\n`` / ``\\t``: a name cannot forge a
    second line of the command's output ("… all good, 0 problems")."""
    forged = "bad\tname\ncursor-agent-api replay: all good"
    not_json = tmp_path / f"{forged}.ndjson"
    not_json.write_text("not json\n")
    for args in ([str(not_json)], [str(tmp_path / f"{forged}-missing.ndjson")]):
        proc = replay(*args)
        assert proc.returncode in (1, 2), proc.stderr
        assert proc.stderr.count(b"\n") == 1, proc.stderr
        assert b"bad\\tname\\ncursor-agent-api replay: all good" in proc.stderr, proc.stderr
