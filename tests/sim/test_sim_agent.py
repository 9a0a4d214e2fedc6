"""The deterministic agent, through the real ``cursor-agent-sim`` process and the project's
own Transcript."""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import orjson
import pytest

from cursor_agent_api.protocol import EventType, ToolKind, ToolStatus, Transcript

from .conftest import Sim, group_members, kill_group, read_until

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def test_list_the_files(sim: Sim, ws: Path) -> None:
    run = sim.stream("list the files")
    assert run.returncode == 0, run.err
    assert run.stderr == b""
    t = run.transcript
    assert t.success and t.raw_lines == 0
    assert t.text == t.result_text
    assert t.cwd == str(ws.resolve())
    assert UUID.match(t.session_id or "")
    (call,) = t.tool_calls
    assert (call.kind, call.status) == (ToolKind.LS, ToolStatus.SUCCEEDED)
    tree = call.output.splitlines()
    assert tree[0] == str(ws.resolve())
    assert "  src/" in tree and "    app.py" in tree and "  notes.txt" in tree
    for name in ("notes.txt", "src/", "README.md"):
        assert name in t.text
    assert t.usage is not None and t.usage.input_tokens > 0 and t.usage.output_tokens > 0
    result = t.result_event
    assert result is not None
    assert set(result.data["usage"]) == {"inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens"}
    assert result.data["duration_ms"] == result.data["duration_api_ms"]
    assert t.thinking  # reasoning is streamed, as recordings show


def test_partial_and_whole_output_give_the_same_text(sim: Sim) -> None:
    prompt = "list the files, grep TODO and read notes.txt"
    whole = sim.stream(prompt).transcript
    partial = sim.stream("--stream-partial-output", prompt).transcript
    assert whole.text == whole.result_text == partial.text == partial.result_text
    assert len(whole.tool_calls) == len(partial.tool_calls) == 3

    def kinds(t: Transcript) -> list[str]:
        return [e.type.value for e in t.events if e.type in (EventType.ASSISTANT, EventType.ASSISTANT_DELTA)]

    assert "assistant:delta" not in kinds(whole)
    assert kinds(partial).count("assistant:delta") > 5
    # partial: deltas, then a segment recap (model_call_id + timestamp_ms) before the tool calls,
    # then deltas and a final recap with neither marker
    events = partial.events
    first_tool = next(i for i, e in enumerate(events) if e.type is EventType.TOOL_CALL_STARTED)
    recap = events[first_tool - 1]
    assert recap.type is EventType.ASSISTANT
    assert "model_call_id" in recap.data and "timestamp_ms" in recap.data
    assert recap.data["model_call_id"] == events[first_tool].data["model_call_id"]
    assert events[first_tool - 2].type is EventType.ASSISTANT_DELTA
    final = [e for e in events if e.type is EventType.ASSISTANT][-1]
    assert "model_call_id" not in final.data and "timestamp_ms" not in final.data
    deltas = [e for e in events if e.type is EventType.ASSISTANT_DELTA]
    assert all("model_call_id" not in e.data and isinstance(e.data["timestamp_ms"], int) for e in deltas)
    # result.result is every segment joined with no separator
    segments = [e.text for e in events if e.type is EventType.ASSISTANT]
    assert partial.result_text == "".join(s or "" for s in segments)


def test_parallel_calls_share_a_model_call_and_finish_out_of_order(sim: Sim) -> None:
    t = sim.stream("list the files and grep TODO and glob *.py").transcript
    started = [e for e in t.events if e.type is EventType.TOOL_CALL_STARTED]
    completed = [e for e in t.events if e.type is EventType.TOOL_CALL_COMPLETED]
    assert len(started) == 3
    assert len({e.model_call_id for e in started}) == 1
    first_completion = t.events.index(completed[0])
    assert all(t.events.index(e) < first_completion for e in started)
    assert [e.call_id for e in completed] != [e.call_id for e in started]
    by_kind = {c.kind: c for c in t.tool_calls}
    assert by_kind[ToolKind.GREP].grep_matches == [("src/app.py", 2, "    return 1  # TODO: more")]
    assert by_kind[ToolKind.GLOB].files == ["src/app.py"]
    mcid = started[0].model_call_id or ""
    assert mcid.startswith(t.request_id or "?") and re.fullmatch(r".+-0-[0-9a-z]{4}", mcid)


def test_call_id_formats(sim: Sim) -> None:
    gpt = sim.stream("--model", "gpt-5-mini", "read notes.txt").transcript
    (call,) = gpt.tool_calls
    assert re.fullmatch(r"call_[A-Za-z0-9]{24}\nfc_[0-9a-f]{50}", call.call_id)
    assert gpt.model == "GPT-5 Mini"
    composer = sim.stream("--model", "composer-2.5-fast", "read notes.txt").transcript
    (call,) = composer.tool_calls
    assert re.fullmatch(r"tool_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{11}", call.call_id)
    assert composer.model == "Composer 2.5 Fast"
    assert call.content == "alpha\nbeta\n" and call.read_range == (1, 3)


def test_read_then_reply_exactly(sim: Sim, ws: Path) -> None:
    t = sim.stream("Read the file notes.txt, then reply with exactly: READ-OK").transcript
    (call,) = t.tool_calls
    assert call.path == str(ws.resolve() / "notes.txt")
    assert t.text.endswith("READ-OK") and t.text == t.result_text


def test_read_missing_file_is_a_tool_error(sim: Sim) -> None:
    t = sim.stream("read missing.txt").transcript
    (call,) = t.tool_calls
    assert call.status is ToolStatus.ERROR and call.error_message == "File not found"
    assert t.success


def test_edit_really_creates_and_changes_files(sim: Sim, ws: Path) -> None:
    t = sim.stream('create hello.txt with "Hello, world"').transcript
    (call,) = t.tool_calls
    assert (call.kind, call.status) == (ToolKind.EDIT, ToolStatus.SUCCEEDED)
    assert (ws / "hello.txt").read_text() == "Hello, world\n"
    assert call.diff is not None and call.diff.startswith("--- /dev/null")
    assert call.new_content == "Hello, world\n"

    t = sim.stream(
        "Append the line probe13 to the end of notes.txt. Reply with DONE when finished."
    ).transcript
    read, edit = t.tool_calls
    assert (read.kind, edit.kind) == (ToolKind.READ, ToolKind.EDIT)
    assert read.model_call_id != edit.model_call_id
    assert (ws / "notes.txt").read_text() == "alpha\nbeta\nprobe13\n"
    assert edit.result is not None
    success = edit.result["success"]
    assert success["beforeFullFileContent"] == "alpha\nbeta\n" and success["linesAdded"] == 1
    assert edit.args["streamContent"] == "alpha\nbeta\nprobe13"
    assert t.text.endswith("DONE")

    sim.stream('replace "beta" with "gamma" in notes.txt')
    assert (ws / "notes.txt").read_text() == "alpha\ngamma\nprobe13\n"


def _outcome(t: Transcript, key: str) -> dict[str, object]:
    completed = [e for e in t.events if e.type is EventType.TOOL_CALL_COMPLETED]
    assert [[k for k in e.data["tool_call"] if k.endswith("ToolCall")] for e in completed] == [[key]], t.text
    result: dict[str, object] = completed[0].data["tool_call"][key]["result"]
    return result


@pytest.mark.parametrize("name", ["../escape.txt", "../sub/escape.txt", "ABSOLUTE"])
def test_edit_outside_the_workspace_is_refused(sim: Sim, ws: Path, name: str) -> None:
    # docs/simulator.md: "paths outside the workspace are refused with an `error` outcome";
    # the planner did not see `../x` or absolute paths as files, so no call was made at all
    name = str(ws.parent / "escape.txt") if name == "ABSOLUTE" else name
    t = sim.stream(f'create {name} with "x"').transcript
    assert not (ws.parent / "escape.txt").exists() and not (ws.parent / "sub").exists()
    assert _outcome(t, "editToolCall") == {"error": {"path": name, "error": "Path is outside the workspace"}}


@pytest.mark.parametrize("name", ["../secret.txt", "ABSOLUTE", "./../secret.txt"])
def test_read_outside_the_workspace_is_refused(sim: Sim, ws: Path, name: str) -> None:
    (ws.parent / "secret.txt").write_text("do not show\n")
    name = str(ws.parent / "secret.txt") if name == "ABSOLUTE" else name
    t = sim.stream(f"read {name}").transcript
    assert _outcome(t, "readToolCall") == {"error": {"path": name, "error": "Path is outside the workspace"}}
    assert "do not show" not in t.text


def test_relative_paths_inside_the_workspace_still_read(sim: Sim, ws: Path) -> None:
    t = sim.stream(f"read ./notes.txt and src/../README.md and {ws / 'src' / 'app.py'}").transcript
    assert [c.status for c in t.tool_calls] == [ToolStatus.SUCCEEDED] * 3, t.text


def test_shell_runs_only_with_force(sim: Sim, ws: Path) -> None:
    prompt = "Run the shell command: touch ran.txt && echo made it and report the output"
    t = sim.stream(prompt).transcript
    (call,) = t.tool_calls
    assert call.status is ToolStatus.REJECTED
    assert not (ws / "ran.txt").exists()
    completed = next(e for e in t.events if e.type is EventType.TOOL_CALL_COMPLETED)
    rejected = completed.data["tool_call"]["shellToolCall"]
    assert "args" not in rejected  # recording 07: a rejected completion omits args
    assert rejected["result"]["rejected"] == {
        "command": "touch ran.txt && echo made it",
        "workingDirectory": str(ws.resolve()),
        "reason": "",
        "isReadonly": False,
    }
    assert call.command == "touch ran.txt && echo made it"  # kept from started
    assert call.args["simpleCommands"] == ["touch", "echo"]

    t = sim.stream("--force", prompt).transcript
    (call,) = t.tool_calls
    assert (call.status, call.exit_code, call.stdout) == (ToolStatus.SUCCEEDED, 0, "made it\n")
    assert (ws / "ran.txt").exists()

    t = sim.stream("--yolo", "run `exit 3`").transcript
    assert t.tool_calls[0].status is ToolStatus.FAILED and t.tool_calls[0].exit_code == 3


def test_shell_child_runs_in_the_agent_process_group(sim: Sim) -> None:
    proc = sim.start("-p", "--trust", "-f", "--output-format", "stream-json", "run `sleep 300`")
    try:
        read_until(proc, b'"subtype":"started"')
        members: list[int] = []
        while len(members) < 2:  # the agent and its shell (and sleep); poll /proc
            members = group_members(proc.pid)
            time.sleep(0.02)
        assert proc.pid in members
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=60) == 143
    finally:
        kill_group(proc)


def test_web_fetch_rejected_without_force(sim: Sim) -> None:
    t = sim.stream(
        "Fetch https://example.com and tell me its page title. Reply with DONE at the end."
    ).transcript
    (call,) = t.tool_calls
    assert (call.kind, call.status, call.url) == (
        ToolKind.WEB_FETCH,
        ToolStatus.REJECTED,
        "https://example.com",
    )
    queries = [e for e in t.events if e.type is EventType.INTERACTION_QUERY]
    assert [q.subtype for q in queries] == ["request", "response"]
    assert queries[1].data["response"]["webFetchRequestResponse"] == {"rejected": {"reason": "User Rejected"}}
    types = [e.type for e in t.events]
    started = types.index(EventType.TOOL_CALL_STARTED)
    assert types[started + 1 : started + 4] == [
        EventType.INTERACTION_QUERY,
        EventType.INTERACTION_QUERY,
        EventType.TOOL_CALL_COMPLETED,
    ]
    assert t.text.endswith("DONE")
    forced = sim.stream("-f", "fetch https://example.com").transcript
    assert not [e for e in forced.events if e.type is EventType.INTERACTION_QUERY]
    assert forced.tool_calls[0].status is ToolStatus.ERROR


def test_ask_question_and_todos(sim: Sim) -> None:
    t = sim.stream("ask me which file to edit").transcript
    assert t.tool_calls[0].kind is ToolKind.ASK_QUESTION and t.tool_calls[0].status is ToolStatus.REJECTED
    types = [e.type for e in t.events]
    assert types.index(EventType.INTERACTION_QUERY) < types.index(EventType.TOOL_CALL_STARTED)  # recording 05
    t = sim.stream("make a todo list: write tests, fix bugs, ship it").transcript
    (call,) = t.tool_calls
    assert call.kind is ToolKind.TODOS and call.status is ToolStatus.SUCCEEDED
    assert [x["content"] for x in call.todos] == ["write tests", "fix bugs", "ship it"]
    assert call.todos[0]["status"] == "TODO_STATUS_IN_PROGRESS"


def test_direct_answers(sim: Sim) -> None:
    assert sim.stream("What is 6 * 7?").transcript.result_text == "42"
    t = sim.stream("hello there").transcript
    assert t.tool_calls == [] and "cursor-agent-sim" in (t.result_text or "")


def test_same_prompt_same_output(sim: Sim) -> None:
    a = sim.stream("list the files and read notes.txt").transcript
    b = sim.stream("list the files and read notes.txt").transcript
    assert a.text == b.text
    assert [(c.kind, c.status, c.output) for c in a.tool_calls] == [
        (c.kind, c.status, c.output) for c in b.tool_calls
    ]
    assert a.session_id != b.session_id  # a new chat each time (random ids without a seed)


def test_seed_makes_runs_byte_identical(sim: Sim, tmp_path: Path) -> None:
    outs = []
    for n in range(2):
        sim.config_dir = tmp_path / f"cfg{n}"
        outs.append(
            sim.stream(
                "--stream-partial-output", "list the files and grep TODO", env={"CURSOR_AGENT_SIM_SEED": "42"}
            ).stdout
        )
    assert outs[0] == outs[1]
    assert Transcript.from_bytes(outs[0]).success


def test_seed_makes_runs_with_a_shell_command_byte_identical(sim: Sim, tmp_path: Path) -> None:
    # the command's measured duration went into executionTime and moved the fake clock; the
    # same command sleeps 0.01 s, then 0.3 s (its environment differs), so the runs' times differ
    outs = []
    for n, pause in enumerate(("0.01", "0.3")):
        sim.config_dir = tmp_path / f"cfg{n}"
        env = {"CURSOR_AGENT_SIM_SEED": "7", "SIM_TEST_PAUSE": pause}
        outs.append(sim.stream("--force", "run `sleep $SIM_TEST_PAUSE`", env=env).stdout)
    assert outs[0] == outs[1]
    (call,) = Transcript.from_bytes(outs[0]).tool_calls
    assert call.status is ToolStatus.SUCCEEDED


def test_output_formats(sim: Sim) -> None:
    stream = sim.stream("read notes.txt").transcript
    js = sim.run("-p", "--trust", "--output-format", "json", "read notes.txt")
    assert js.returncode == 0 and js.stdout.count(b"\n") == 1
    obj = orjson.loads(js.stdout)
    assert obj["type"] == "result" and obj["result"] == stream.result_text and "usage" in obj
    text = sim.run("-p", "--trust", "read notes.txt")  # text is the default format (2026 help)
    assert text.returncode == 0 and text.stdout.decode() == (stream.result_text or "") + "\n"


def test_prompt_from_stdin(sim: Sim) -> None:
    run = sim.run_stdin("-p", "--trust", "--output-format", "stream-json", stdin=b"What is 2 + 2?\n")
    assert run.returncode == 0, run.err
    t = run.transcript
    assert t.prompt == "What is 2 + 2?" and t.result_text == "4"
    empty = sim.run("-p", "--trust")
    assert empty.returncode == 1 and empty.err.startswith("Error: No prompt provided")


CATALOGUE = [
    "list the files",
    "read notes.txt",
    "Read the file notes.txt, then reply with exactly: READ-OK",
    "grep TODO",
    'search for "def main"',
    "glob *.md",
    "summarize README.md",
    'create docs/new.md with "# New"',
    "append probe13 to notes.txt. Reply with DONE when finished.",
    'replace "alpha" with "omega" in notes.txt',
    "run `echo hi`",
    "Run the shell command: ls -la and report the output",
    "Fetch https://example.com and tell me its page title. Reply with DONE at the end.",
    "ask me which file to edit",
    "search the web for cursor cli",
    "delete README.md",
    "plan: read the code, write tests, ship",
    "What is 12 / 4?",
    "write a poem about rivers",
    "remember that my favourite colour is green",
    "what did I ask before?",
    "hello",
    "list the files and make a todo list: a, b",
]


@pytest.mark.parametrize("prompt", CATALOGUE)
@pytest.mark.parametrize("force", [False, True], ids=["ask", "force"])
def test_every_documented_prompt_reassembles_identically(sim: Sim, prompt: str, force: bool) -> None:
    flags = ["-f"] if force else []
    whole = sim.stream(*flags, prompt, env={"CURSOR_AGENT_SIM_SEED": "1"})
    assert whole.returncode == 0, whole.err
    sim.config_dir = sim.config_dir.with_name("config2")
    partial = sim.stream(*flags, "--stream-partial-output", prompt, env={"CURSOR_AGENT_SIM_SEED": "1"})
    assert partial.returncode == 0, partial.err
    a, b = whole.transcript, partial.transcript
    assert a.success and b.success and a.raw_lines == b.raw_lines == 0
    assert a.text == a.result_text
    assert b.text == b.result_text
    assert a.session_id == b.session_id  # seeded
    # the second run sees the first one's edits and deletions: compare what was called
    assert [c.kind for c in a.tool_calls] == [c.kind for c in b.tool_calls]
    assert all(c.status.finished for c in a.tool_calls + b.tool_calls)


def test_web_search_completed_without_started_and_delete(sim: Sim, ws: Path) -> None:
    t = sim.stream("search the web for python packaging").transcript
    (call,) = t.tool_calls
    assert (call.kind, call.status) == (ToolKind.WEB_SEARCH, ToolStatus.REJECTED)
    assert not [e for e in t.events if e.type is EventType.TOOL_CALL_STARTED]  # recording 03
    assert call.args["searchTerm"] == "python packaging"  # recovered from the query
    forced = sim.stream("-f", "search the web for python packaging").transcript
    assert [e.type for e in forced.events].count(EventType.TOOL_CALL_STARTED) == 1
    assert forced.tool_calls[0].status is ToolStatus.ERROR

    t = sim.stream("delete notes.txt").transcript
    (call,) = t.tool_calls
    assert (call.kind, call.status) == (ToolKind.DELETE, ToolStatus.SUCCEEDED)
    assert not (ws / "notes.txt").exists()
    assert sim.stream("delete notes.txt").transcript.tool_calls[0].status is ToolStatus.ERROR
