"""What the saved chats' views print: the saved text is data, shown as it is.

Prompts, folders, models, answers and errors come from users and from the agent. They are
never rich markup (``[/tmp]`` must not crash a listing, ``[bold]`` must not vanish), never
raw escape sequences (``sessions show`` shows them inert, as ``run`` does), and one bad
timestamp in one file does not break the listing.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

Run = Callable[..., subprocess.CompletedProcess[str]]
CLI = [sys.executable, "-m", "cursor_agent_api.cli"]


def saved_files(env: dict[str, str]) -> list[str]:
    return glob.glob(os.path.join(env["CURSOR_AGENT_API_HOME"], "chats", "*.json"))


def no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr[-600:]


# ---- 1. rich markup ------------------------------------------------------------------------


@pytest.mark.parametrize("prompt", ["what does [/tmp] mean", "make it [bold]louder[/bold]"])
def test_list_and_show_print_a_bracketed_prompt_as_it_is(cli: Run, cli_env: dict[str, str],
                                                         prompt: str) -> None:
    assert cli("run", "--simulate", "--trust", prompt).returncode == 0
    listed = cli("sessions", "list")
    no_traceback(listed)
    assert listed.returncode == 0 and prompt in listed.stdout, listed.stdout
    (path,) = saved_files(cli_env)
    shown = cli("sessions", "show", Path(path).stem)
    no_traceback(shown)
    assert shown.returncode == 0 and f"› {prompt}" in shown.stdout, shown.stdout


def test_a_bracketed_workspace_and_model_in_list_and_show(cli: Run, cli_env: dict[str, str],
                                                          tmp_path: Path) -> None:
    ws = tmp_path / "proj[" / "old]"  # the folder …/proj[/old]
    ws.mkdir(parents=True)
    assert cli("run", "--simulate", "--trust", "-w", str(ws), "hi").returncode == 0
    (path,) = saved_files(cli_env)
    data = json.loads(Path(path).read_text())
    data["model"] = "[red]m[/red]"
    Path(path).write_text(json.dumps(data))
    listed = cli("sessions", "list")
    no_traceback(listed)
    assert str(ws) in listed.stdout, listed.stdout
    shown = cli("sessions", "show", Path(path).stem)
    no_traceback(shown)
    assert f"workspace: {ws}" in shown.stdout and "model: [red]m[/red]" in shown.stdout


def test_chat_in_a_folder_with_brackets(cli_env: dict[str, str], tmp_path: Path) -> None:
    ws = tmp_path / "proj[" / "old]"
    ws.mkdir(parents=True)
    proc = subprocess.run([*CLI, "chat", "--simulate", "--trust"], input="list the files\n",
                          capture_output=True, text=True, timeout=90, cwd=ws, env=cli_env,
                          check=False)
    no_traceback(proc)
    assert proc.returncode == 0
    assert f"in {ws} —" in proc.stdout  # the header names the folder whole
    (path,) = saved_files(cli_env)
    # the continue hint is printed where the chat ran: no --workspace, but whole and plain
    assert f"continue later: cursor-agent-api chat --resume {Path(path).stem}" in proc.stdout


def test_chat_continue_hint_with_a_bracketed_workspace(cli: Run, cli_env: dict[str, str],
                                                       tmp_path: Path) -> None:
    ws = tmp_path / "a[b]"
    ws.mkdir()
    proc = cli("chat", "--simulate", "--trust", "-w", str(ws), stdin="list the files\n")
    no_traceback(proc)
    assert proc.returncode == 0
    (hint,) = [line for line in proc.stdout.splitlines() if line.startswith("continue later:")]
    assert hint.endswith(f"--workspace '{ws}' --simulate"), hint
    assert f"in {ws} —" in proc.stdout


# ---- 2. escape sequences -------------------------------------------------------------------

EVIL = "hello \u001b]0;PWNED\u0007\u001b[2J world"


def test_show_and_list_do_not_write_the_agents_escapes(cli: Run, cli_env: dict[str, str],
                                                      tmp_path: Path) -> None:
    sid = "11111111-2222-4333-8444-555555555555"
    rec = tmp_path / "esc.ndjson"
    rec.write_text("\n".join(json.dumps(o) for o in [
        {"type": "system", "subtype": "init", "session_id": sid, "cwd": "/x", "model": "Auto"},
        {"type": "assistant", "message": {"role": "assistant",
                                          "content": [{"type": "text", "text": EVIL}]},
         "session_id": sid},
        {"type": "result", "subtype": "success", "is_error": False, "duration_ms": 5,
         "result": EVIL, "session_id": sid},
    ]) + "\n")
    run = cli("run", "--simulate", "--trust", "hi", extra_env={"CURSOR_AGENT_SIM_SCRIPT": str(rec)})
    assert run.returncode == 0 and "\x1b" not in run.stdout  # run itself shows it inert
    (path,) = saved_files(cli_env)
    shown = cli("sessions", "show", Path(path).stem)
    assert shown.returncode == 0
    assert "\x1b" not in shown.stdout and "\x07" not in shown.stdout, repr(shown.stdout[-80:])
    assert "hello \\x1b]0;PWNED\\x07\\x1b[2J world" in shown.stdout  # shown, inert


def test_saved_prompt_error_workspace_and_model_are_shown_inert(cli: Run,
                                                                cli_env: dict[str, str]) -> None:
    assert cli("run", "--simulate", "--trust", "hi").returncode == 0
    (path,) = saved_files(cli_env)
    data = json.loads(Path(path).read_text())
    data["workspace"] = "/w\x1b]0;T\x07"
    data["model"] = "m\x1b[2J"
    data["history"][0].update(prompt=EVIL, success=False, error="bad\x1b[31m")
    Path(path).write_text(json.dumps(data))
    for args in (("sessions", "list"), ("sessions", "show", Path(path).stem)):
        proc = cli(*args)
        assert proc.returncode == 0, proc.stderr
        assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout, repr(proc.stdout)
    assert "bad\\x1b[31m" in proc.stdout and "model: m\\x1b[2J" in proc.stdout


# ---- 5. timestamps out of range ------------------------------------------------------------


@pytest.mark.parametrize("stamp", [1e300, -1e300, 1e18])
def test_list_and_show_with_an_out_of_range_timestamp(cli: Run, cli_env: dict[str, str],
                                                      stamp: float) -> None:
    assert cli("run", "--simulate", "--trust", "-o", "json", "list the files").returncode == 0
    assert cli("run", "--simulate", "--trust", "-o", "json", "read notes.txt").returncode == 0
    paths = saved_files(cli_env)
    data = json.loads(Path(paths[0]).read_text())
    data["history"][0]["timestamp"] = stamp
    Path(paths[0]).write_text(json.dumps(data))
    listed = cli("sessions", "list")
    no_traceback(listed)
    assert listed.returncode == 0
    assert all(Path(p).stem in listed.stdout for p in paths)  # both chats listed
    shown = cli("sessions", "show", Path(paths[0]).stem)
    no_traceback(shown)
    assert shown.returncode == 0 and "last used: " in shown.stdout
    as_json = cli("sessions", "list", "--json")
    assert as_json.returncode == 0 and len(as_json.stdout.splitlines()) == 2


def test_when_shows_a_dash_for_a_time_it_cannot_show() -> None:
    from cursor_agent_api.cli.sessions_cmd import _when

    assert _when(0.0) == "—"
    for stamp in (1e300, -1e300, float("inf"), float("nan")):
        assert _when(stamp) == "—"
    assert _when(1_700_000_000.0).startswith("2023-11-1")
