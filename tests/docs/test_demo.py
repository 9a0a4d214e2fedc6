"""``scripts/demo.sh`` as a newcomer runs it, then what it prints, pasted.

One run of the demo (module fixture) in a fresh copy of the repository, with a fresh
``HOME`` and ``TMPDIR``, ``PATH`` without the venv (as after a clone), setup skipped (the
suite's venv is linked), ``PORT=0``: the command-line turn, then the server until it prints
its URL; one request to the page; Ctrl-C (SIGINT to the group). Then the printed
``chat --resume`` command is pasted in another directory, with a question on stdin.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
from docs_runner import VENV_BIN, make_clone, tracked_files

FIRST_PROMPT = "read hello.py, then append probe13 to notes.txt"


@dataclass
class DemoRun:
    clone: Path
    tmpdir: Path
    env: dict[str, str]
    returncode: int
    stdout: str
    stderr: str
    open_url: str


def _newcomer_env(base: Path) -> dict[str, str]:
    path = [p for p in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep)
            if Path(p).resolve() != VENV_BIN.resolve()]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CURSOR_", "PYTEST_", "XDG_")) and k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    (base / "home").mkdir()
    (base / "tmp").mkdir()
    env.update(PATH=os.pathsep.join(path), HOME=str(base / "home"), TMPDIR=str(base / "tmp"),
               PORT="0", CURSOR_AGENT_API_SKIP_SETUP="1", NO_COLOR="1")
    return env


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    base = tmp_path_factory.mktemp("demo")
    clone = make_clone(tracked_files(), base / "repo")
    env = _newcomer_env(base)
    proc = subprocess.Popen(["scripts/demo.sh"], cwd=clone, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    out: list[str] = []
    err: list[str] = []
    opened = threading.Event()

    def pump(stream: object, sink: list[str], watch: bool) -> None:
        for raw in iter(stream.readline, b""):  # type: ignore[attr-defined]
            sink.append(raw.decode("utf-8", "replace"))
            if watch and sink[-1].startswith("Open: "):
                opened.set()

    threads = [threading.Thread(target=pump, args=(proc.stdout, out, True), daemon=True),
               threading.Thread(target=pump, args=(proc.stderr, err, False), daemon=True)]
    for t in threads:
        t.start()
    open_url = ""
    try:
        if opened.wait(60):
            open_url = next(line for line in out if line.startswith("Open: "))[6:].strip()
            with urllib.request.urlopen(open_url, timeout=10) as answer:  # the page, as a browser
                answer.read()
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C
        proc.wait(30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        for t in threads:
            t.join(5)
    return DemoRun(clone, base / "tmp", env, proc.returncode, "".join(out), "".join(err), open_url)


def test_the_demo_runs_a_turn_then_serves(demo: DemoRun) -> None:
    assert demo.open_url.startswith("http://127.0.0.1:"), demo.stdout + demo.stderr
    assert demo.returncode == -signal.SIGINT, demo.stdout + demo.stderr  # (serve dies from the Ctrl-C)
    assert "Traceback" not in demo.stderr, demo.stderr  # (as an uncaught KeyboardInterrupt would)
    assert "probe13" in (demo.clone / ".demo" / "workspace" / "notes.txt").read_text()


def test_the_demo_says_how_to_run_the_commands(demo: DemoRun) -> None:
    assert "source .venv/bin/activate" in demo.stdout
    assert f"{demo.clone}/.venv/bin" in demo.stdout


def test_the_demo_says_where_its_chats_are(demo: DemoRun) -> None:
    assert "not among them" in demo.stdout  # the CLI's turn is not in the server's database


def test_the_demo_leaves_nothing_in_the_temp_directory(demo: DemoRun) -> None:
    assert list(demo.tmpdir.iterdir()) == []


def test_the_printed_continue_command_continues_the_chat(demo: DemoRun, tmp_path: Path) -> None:
    lines = demo.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Continue this chat"))
    command = lines[at + 1].strip()
    assert re.search(r"chat --resume [0-9a-f-]{36} ", command), command
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    pasted = subprocess.run(["bash", "-c", command], cwd=elsewhere, env=demo.env,
                            input=b"what did I ask before?\n", capture_output=True, timeout=60)
    out = pasted.stdout.decode()
    assert pasted.returncode == 0, out + pasted.stderr.decode()
    assert FIRST_PROMPT in out, out + pasted.stderr.decode()


def test_the_demo_serves_without_an_access_log(demo: DemoRun) -> None:
    assert demo.open_url
    assert not re.search(r'"GET [^"]* HTTP/1\.[01]" \d{3}', demo.stderr), demo.stderr


def test_the_footers_continue_command_works_with_the_venv_activated(demo: DemoRun, tmp_path: Path) -> None:
    """The run's own footer (``continue: cursor-agent-api chat --resume …``) works once
    ``source .venv/bin/activate`` has put the commands on PATH, as the demo says."""
    footer = next(line for line in demo.stdout.splitlines() if " · continue: " in line)
    command = footer.split(" · continue: ", 1)[1].strip()
    activate = demo.clone / ".venv" / "bin" / "activate"
    pasted = subprocess.run(["bash", "-c", f"source {activate} && {command}"], cwd=tmp_path,
                            env=demo.env, input=b"what did I ask before?\n", capture_output=True,
                            timeout=60)
    out = pasted.stdout.decode()
    assert pasted.returncode == 0, out + pasted.stderr.decode()
    assert FIRST_PROMPT in out, out + pasted.stderr.decode()
