"""Every ```python and ```sh block of README.md and docs/*.md runs, as written, on the simulator.

How each runs is in ``docs_runner.py`` (a fresh copy of the repository as the working
directory, the venv activated, ``agent`` = the simulator, the copy trusted, stdin closed, a
time bound); a ``<!-- snippet: ... -->`` comment before a block changes how it runs
(``docs_blocks.py``). A Python block made only of ``test_`` functions runs under pytest.

Each snippet must exit 0 and, where it prints something worth checking, print it (EXPECT).
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from docs_blocks import DATA_LANGUAGES, RUN_LANGUAGES, blocks, doc_files, runnable_blocks
from docs_runner import make_clone, reader_env, run_block, tracked_files

BLOCKS = runnable_blocks()

# What some snippets must print (substrings of stdout), beyond exiting 0.
EXPECT: dict[str, list[str]] = {
    "README.md#quick-start[1]": [
        "== the command line", "Updated `notes.txt`", "Continue this chat", "Open: http://127.0.0.1:"],
    "README.md#quick-start[2]": ["== ruff ==", "== mypy --strict ==", "passed"],
    "README.md#reading-the-agent-s-output[1]": [
        "DONE", "edit succeeded", "Usage(input_tokens=20396", "Hello"],
    "README.md#running-the-agent-from-python[1]": ["What does this project do?"],
    "README.md#running-the-agent-from-python[2]": ["River", "cancelled: False"],
    "README.md#running-the-agent-from-python[3]": ["['0', '2', '4', '6', '8']"],
    "README.md#running-the-agent-from-python[4]": ["the deploy target is eu-west-1"],
    "README.md#the-command-line[1]": ['"success":true', "The workspace contains"],
    "README.md#the-command-line[2]": ["You asked me to remember: the deploy target is eu-west-1"],
    "README.md#testing-your-own-code-with-the-simulator[1]": ["2 passed"],
    "README.md#testing-your-own-code-with-the-simulator[2]": ["False ", "Error"],
    "docs/acp.md#from-python[1]": [
        "asked: shell: rm -rf build", "[('shell', 'rm -rf build', 'rejected')]",
        "[('shell', 'ls', 'succeeded')]", "True None"],
    "docs/acp.md#cancel-keeps-the-chat[1]": ["cancelled: True", "the codeword: heron"],
    "docs/acp.md#models-modes-and-images[1]": [
        "plan: Edit notes.md ['edit notes.md']", "was accepted. Switch to agent mode"],
    "docs/acp.md#on-the-command-line[1]": ["✓ shell ls  succeeded (exit 0", "`ls` exited with code 0"],
    "docs/acp.md#on-the-command-line[2]": [
        '{"type":"result","subtype":"success"', '"transport":"acp"}', '"success":true'],
    "docs/acp.md#without-a-callback-rules-and-modes[1]": [
        "Allow(remember=False)", "denied by the rule Shell(*)", "read-only mode: shell calls"],
    "docs/acp.md#without-a-callback-rules-and-modes[2]": [
        "ls -la | wc -l       Allow(", "ls 2>/dev/null       Allow(", "ls && rm -rf build   Deny(",
        "ls $(rm -rf build)   Deny(", "ls > listing.txt     Deny(", "PATH=/tmp/x ls       Deny(",
        "denied by the rule Shell(rm)"],
    "docs/client.md#one-turn[1]": ["What does main.py do?", "Usage("],
    "docs/client.md#streaming-and-cancelling[1]": ["agent pid (and process group):", "River"],
    "docs/client.md#coming-from-seed-004-tool-calls-are-typed[1]": [
        "Type: tool_call, subtype: started", "[Tool: shell] ls", "[Tool completed: succeeded, exit code 0]",
        "pyproject.toml", "shell ls 0"],
    "docs/client.md#conversations-resume-suspend-restore[1]": [
        "Now write the deploy script", "the deploy target is eu-west-1"],
    "docs/client.md#account-and-models[1]": ["logged_in=True", "slug='auto'"],
    "docs/simulator.md#cursor-agent-sim-the-cursor-cli-simulator[1]": ['"type":"result","subtype":"success"'],
    "docs/simulator.md#cursor-agent-sim-the-cursor-cli-simulator[2]": ['"success":true'],
    "docs/simulator.md#fixtures-for-your-own-tests[1]": ["3 passed"],
    "docs/server.md#the-server-cursor-agent-api-serve[1]": ["Open: http://127.0.0.1:"],
    "docs/server.md#deleting-chats-and-reclaiming-space[1]": [
        "DELETE: 204", "GET after: 404", "compacted "],
    "docs/server.md#tests[1]": ["1 passed"],
    "docs/web.md#the-web-ui[1]": ["Open: http://127.0.0.1:"],
    "docs/web.md#tests[1]": ["1 passed"],
    "docs/tools.md#your-own-tools-python-functions-the-agent-calls-over-mcp[1]": [
        '`lookup_order` returned: {"id": "A1", "status": "shipped"}',
        "`track_parcel` failed: ConnectionError: the carrier's tracking service is down",
        "lookup_order succeeded {'order_id': 'A1'} None",
        "track_parcel failed {'parcel': 'P-9'} ConnectionError: the carrier's tracking service is down"],
}

# Snippets that fail today only because of a bug another engineer is fixing: the
# integrator removes the mark after merging that branch (strict: it fails once fixed).
XFAIL: dict[str, str] = {}
"""Snippets known to fail, by id, with the reason (strict: a fix makes the test fail until removed)."""


@pytest.fixture(scope="module")
def files() -> list[str]:
    return tracked_files()


def _param(block: object) -> object:
    bid = block.id  # type: ignore[attr-defined]
    marks = [pytest.mark.xfail(strict=True, reason=XFAIL[bid])] if bid in XFAIL else []
    skip = block.marker.skip if block.marker else None  # type: ignore[attr-defined]
    if skip:
        marks.append(pytest.mark.skip(reason=skip))
    return pytest.param(block, id=bid, marks=marks)


@pytest.mark.parametrize("block", [_param(b) for b in BLOCKS])
def test_snippet_runs(block: object, files: list[str], tmp_path: Path) -> None:
    clone = make_clone(files, tmp_path / "repo")
    env = reader_env(tmp_path)
    outcome = run_block(block, clone, env)  # type: ignore[arg-type]
    # stopped by its Ctrl-C: a server dies from it (-2; a shell's $? 130), a script that traps
    # it exits (0, 130)
    ok_codes = (0, 130, -signal.SIGINT) if outcome.stopped else (0,)
    assert outcome.returncode in ok_codes, outcome.describe()
    if outcome.stopped:  # (Python dies from an uncaught KeyboardInterrupt too: after its traceback)
        assert "Traceback" not in outcome.stderr, outcome.describe()
    if block.marker and block.marker.stop_after:  # type: ignore[attr-defined]
        assert outcome.stopped, "never printed " + repr(block.marker.stop_after) + "\n" + outcome.describe()  # type: ignore[attr-defined]
    for text in EXPECT.get(block.id, []):  # type: ignore[attr-defined]
        assert text in outcome.stdout, f"{text!r} not printed\n{outcome.describe()}"


def test_every_block_is_code_or_data() -> None:
    """Each fenced block says what it is: code that runs, or data."""
    unlabeled = [f"{b.path.name}:{b.line} ```{b.lang}" for p in doc_files() for b in blocks(p)
                 if b.lang not in RUN_LANGUAGES + DATA_LANGUAGES]
    assert unlabeled == []


def test_expectations_name_existing_snippets() -> None:
    ids = {b.id for b in BLOCKS}
    assert sorted(set(EXPECT) - ids) == [] and sorted(set(XFAIL) - ids) == []
