"""Running a doc snippet as a reader would: in a fresh copy of the repository, on the simulator.

The reader's setting, reproduced for each snippet:

* the working directory is a fresh copy of this repository (its tracked and new files, as
  they are in the working tree — what a clone holds), with ``.venv`` linked to the suite's
  virtual environment, as if ``scripts/setup.sh`` had run there;
* the virtual environment is activated (its ``bin/`` first on ``PATH``, ``VIRTUAL_ENV``),
  as the README tells readers to do;
* ``agent`` is the bundled simulator: a directory on ``PATH`` holds ``agent`` linked to
  ``cursor-agent-sim`` (what docs/client.md tells readers to do to try the examples without
  a Cursor account);
* the copy is not a trusted workspace (a fresh clone is not): snippets that run the agent
  pass ``--trust`` / ``trust=True``, as the docs tell readers to;
* ``HOME``, the simulator's config dir and the tool's data dir are fresh and private, and
  no ``CURSOR_*`` variable of the caller leaks in;
* ``scripts/setup.sh`` is told not to reinstall (``CURSOR_AGENT_API_SKIP_SETUP=1``): the
  environment is there already and tests do not reach the network;
* a Python snippet that is not a pytest file runs as after the quick start's install
  (``scripts/setup.sh``: the package and its server extra, not the test extra): ``import
  pytest`` fails there, as it does for a reader who followed the README;
* stdin is closed and every snippet has a time bound.
"""

from __future__ import annotations

import ast
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from docs_blocks import REPO, Block

VENV_BIN = Path(sys.executable).parent
TIMEOUT = 180.0
"""A snippet's time bound: only a hang's. The heaviest start five servers one after the other
(scripts/cluster-demo.sh: 47 s on a loaded machine) or run scripts/test.sh (ruff, mypy, pytest)."""


def tracked_files() -> list[str]:
    """The repository's files as a clone has them (tracked, plus new files not ignored)."""
    out = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        check=True, capture_output=True,
    ).stdout
    return [p for p in out.decode().split("\0") if p and (REPO / p).is_file()]


def make_clone(files: list[str], dest: Path) -> Path:
    """Copy ``files`` of the repository into ``dest``, link ``.venv``, return ``dest``."""
    for rel in files:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, target)
    (dest / ".venv").symlink_to(VENV_BIN.parent, target_is_directory=True)
    cache = REPO / ".mypy_cache"
    if cache.is_dir():  # what a reader who ran the tests once has: keeps scripts/test.sh quick
        shutil.copytree(cache, dest / ".mypy_cache", symlinks=True)
    return dest


def reader_env(base: Path) -> dict[str, str]:
    """The environment of a reader with the venv activated and the simulator as ``agent``."""
    shims = base / "shims"
    shims.mkdir()
    (shims / "agent").symlink_to(VENV_BIN / "cursor-agent-sim")
    home = base / "home"
    home.mkdir()
    config_dir = base / "cursor-config"
    env = {
        k: v for k, v in os.environ.items()
        if not k.startswith(("CURSOR_", "PYTEST_", "XDG_")) and k not in ("VIRTUAL_ENV", "PYTHONPATH")
    }
    env.update(
        PATH=os.pathsep.join([str(VENV_BIN), str(shims), env.get("PATH", "/usr/bin:/bin")]),
        VIRTUAL_ENV=str(VENV_BIN.parent),
        HOME=str(home),
        CURSOR_CONFIG_DIR=str(config_dir),
        CURSOR_AGENT_API_SKIP_SETUP="1",
        PYTHONDONTWRITEBYTECODE="1",
        NO_COLOR="1",
    )
    return env


_NO_PYTEST = """\
# Stands in for an environment without pytest (the quick start installs no test extra).
raise ModuleNotFoundError("No module named 'pytest'", name="pytest")
"""


def without_pytest(base: Path, env: dict[str, str]) -> dict[str, str]:
    """``env`` where ``import pytest`` fails, as in an install without the test extra."""
    hide = base / "no-pytest"
    if not hide.is_dir():
        hide.mkdir()
        (hide / "pytest.py").write_text(_NO_PYTEST, encoding="utf-8")
    return dict(env, PYTHONPATH=str(hide))


def is_test_module(code: str) -> bool:
    """True for Python made of imports and definitions with at least one ``test_`` function:
    a pytest file, which runs under pytest."""
    tree = ast.parse(code)
    allowed = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return all(isinstance(n, allowed) for n in tree.body) and any(
        isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test_")
        for n in tree.body
    )


@dataclass
class Outcome:
    """How a snippet's run ended."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    stopped: bool  # stop-after: the text came and SIGINT was sent

    def describe(self) -> str:
        return (f"exit {self.returncode}\n--- stdout ---\n{self.stdout[-6000:]}"
                f"\n--- stderr ---\n{self.stderr[-6000:]}")


def command_for(block: Block, cwd: Path) -> list[str]:
    """The argv that runs ``block`` in ``cwd``."""
    code = block.code
    if block.lang == "python":
        if is_test_module(code):
            test_file = cwd / f"test_doc_snippet_{block.line}.py"
            test_file.write_text(code, encoding="utf-8")
            return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test_file.name]
        return [sys.executable, "-c", code]
    marker = block.marker
    if marker is not None and marker.append:
        lines = code.rstrip("\n").split("\n")
        if " #" in lines[-1]:
            raise ValueError(f"{block.id}: `append` needs a last line without a comment")
        lines[-1] = f"{lines[-1]} {marker.append}"
        code = "\n".join(lines) + "\n"
    return ["bash", "-e", "-o", "pipefail", "-c", code]


def run_block(block: Block, cwd: Path, env: dict[str, str], timeout: float = TIMEOUT) -> Outcome:
    """Run ``block`` in ``cwd``: to its end, or — with ``stop-after`` — until its text
    appears on stdout, then SIGINT to its process group. Killed past ``timeout``."""
    marker = block.marker
    env = dict(env, **(marker.env if marker else {}))
    argv = command_for(block, cwd)
    if block.lang == "python" and argv[1:3] != ["-m", "pytest"]:
        env = without_pytest(cwd.parent, env)
    proc = subprocess.Popen(
        argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, start_new_session=True,
    )
    out: list[str] = []
    err: list[str] = []
    seen = threading.Event()
    stop_text = marker.stop_after if marker else None

    def pump(stream: object, sink: list[str], watch: bool) -> None:
        for raw in iter(stream.readline, b""):  # type: ignore[attr-defined]
            line = raw.decode("utf-8", "replace")
            sink.append(line)
            if watch and stop_text is not None and stop_text in line:
                seen.set()

    threads = [
        threading.Thread(target=pump, args=(proc.stdout, out, True), daemon=True),
        threading.Thread(target=pump, args=(proc.stderr, err, False), daemon=True),
    ]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    stopped = False
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            if seen.wait(0.05) and not stopped:
                os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C sends
                stopped = True
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            err.append(f"\n[killed: still running after {timeout:g} s]\n")
            return Outcome(argv, -9, "".join(out), "".join(err), stopped)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        for t in threads:
            t.join(5)
    _reap_group(proc.pid)
    return Outcome(argv, proc.returncode, "".join(out), "".join(err), stopped)


def _reap_group(pgid: int) -> None:
    """Stop whatever the snippet left in its process group (a server's children)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
