"""A prompt that is not UTF-8 (a Latin-1 file on a pipe, a byte in an argument, a line typed in
another encoding) is one clear line naming where, never a traceback; nothing is sent."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

import pytest

CLI = [sys.executable, "-m", "cursor_agent_api.cli"]


def run_cli(env: dict[str, str], *args: str | bytes, stdin: bytes | None = None,
            extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    p = subprocess.run([*CLI, *args], input=stdin, capture_output=True, timeout=90,
                       cwd=env["TEST_WS"], env={**env, **(extra or {})}, check=False)
    return subprocess.CompletedProcess(p.args, p.returncode, p.stdout.decode(errors="replace"),
                                       p.stderr.decode(errors="replace"))


def nothing_sent(env: dict[str, str]) -> bool:
    return not glob.glob(os.path.join(env["CURSOR_AGENT_API_HOME"], "chats", "*.json"))


@pytest.mark.parametrize("errors", ["surrogateescape", "strict"])  # C.UTF-8 / a UTF-8 locale
def test_run_with_a_prompt_on_stdin_that_is_not_utf8(cli_env: dict[str, str],
                                                     errors: str) -> None:
    proc = run_cli(cli_env, "run", "--simulate", "--trust", stdin=b"summarize: caf\xe9\n",
                   extra={"PYTHONIOENCODING": f"utf-8:{errors}"})
    assert "Traceback" not in proc.stderr, proc.stderr[-600:]
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert "not UTF-8" in line and "0xE9" in line, line
    assert nothing_sent(cli_env)


def test_run_with_a_prompt_file_on_stdin_that_is_not_utf8(cli_env: dict[str, str]) -> None:
    proc = run_cli(cli_env, "run", "--simulate", "--trust", "--prompt-file", "-",
                   stdin=b"caf\xe9\n")
    assert "Traceback" not in proc.stderr and proc.returncode == 2
    assert "not UTF-8" in proc.stderr


def test_run_with_an_argument_that_is_not_utf8(cli_env: dict[str, str]) -> None:
    proc = run_cli(cli_env, "run", "--simulate", "--trust", b"summarize", b"caf\xe9")
    assert "Traceback" not in proc.stderr, proc.stderr[-600:]
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert "not UTF-8" in line and "character 13" in line and "0xE9" in line, line
    assert nothing_sent(cli_env)


@pytest.mark.parametrize("errors", ["surrogateescape", "strict"])
def test_piped_chat_stops_at_a_line_that_is_not_utf8(cli_env: dict[str, str],
                                                     errors: str) -> None:
    proc = run_cli(cli_env, "chat", "--simulate", "--trust",
                   stdin=b"list the files\ncaf\xe9\nread notes.txt\n",
                   extra={"PYTHONIOENCODING": f"utf-8:{errors}"})
    assert "Traceback" not in proc.stderr, proc.stderr[-600:]
    assert proc.returncode == 2
    assert proc.stdout.count("✓ done") == 1  # the first line ran; the script stops at the bad one
    assert "not UTF-8" in proc.stdout + proc.stderr


def test_run_with_a_prompt_file_that_is_not_utf8(cli_env: dict[str, str],
                                                 tmp_path: os.PathLike[str]) -> None:
    """The same one line as the same bytes on stdin (not Python's codec wording and the usage
    block), naming the file."""
    path = os.path.join(tmp_path, "latin1.txt")
    with open(path, "wb") as f:
        f.write(b"caf\xe9 au lait")
    proc = run_cli(cli_env, "run", "--simulate", "--trust", "--prompt-file", path)
    on_stdin = run_cli(cli_env, "run", "--simulate", "--trust", stdin=b"caf\xe9 au lait")
    assert proc.returncode == on_stdin.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert line == on_stdin.stderr.strip().replace("on stdin", f"in --prompt-file {path}")
    assert nothing_sent(cli_env)
    missing = run_cli(cli_env, "run", "--simulate", "--trust", "--prompt-file", path + ".gone")
    assert missing.returncode == 2
    assert missing.stderr.splitlines() == [
        f"Error: cannot read --prompt-file {path}.gone: No such file or directory"]


@pytest.mark.parametrize("how", [["--prompt-file", "FILE"], ["-"], ["--prompt-file", "-"]])
def test_the_prompt_is_its_bytes_wherever_it_comes_from(
        cli_env: dict[str, str], tmp_path: os.PathLike[str], how: list[str]) -> None:
    """CRLF and a lone CR reach the agent as they are from a file, ``-`` or stdin (no
    universal newlines); ``run -`` reads stdin as ``--prompt-file -`` and ``replay -`` do,
    never sends the prompt "-"."""
    text = b"line1\r\nline2\rline3"
    path = os.path.join(tmp_path, "crlf.txt")
    with open(path, "wb") as f:
        f.write(text)
    args = [path if a == "FILE" else a for a in how]
    proc = run_cli(cli_env, "run", "--simulate", "--trust", "-o", "json", *args, stdin=text)
    assert proc.returncode == 0, proc.stderr
    said = json.loads(proc.stdout)["result"]
    assert 'You said: "line1\r\nline2\rline3"' in said, said


def test_piped_chat_lines_ending_in_crlf_are_sent_without_the_cr(cli_env: dict[str, str]) -> None:
    # was: each prompt went with its trailing "\r" (echoed as "say hi\x0d")
    proc = run_cli(cli_env, "chat", "--simulate", "--trust", stdin=b"say hi\r\nsay bye\r\n")
    assert proc.returncode == 0, proc.stderr[-600:]
    assert proc.stdout.count("✓ done") == 2
    assert "\\x0d" not in proc.stdout and "\r" not in proc.stdout, proc.stdout
    (chat,) = glob.glob(os.path.join(cli_env["CURSOR_AGENT_API_HOME"], "chats", "*.json"))
    with open(chat, encoding="utf-8") as f:
        assert "\\r" not in f.read()  # nor in the saved chat
