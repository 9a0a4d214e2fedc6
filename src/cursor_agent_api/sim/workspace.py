"""The real effects of the simulated tools, on the real workspace.

Each function does the work of one tool kind and returns the wire outcome object built
with :mod:`cursor_agent_api.sim.wire` (``{"success": …}``, ``{"error": …}``, …) plus
what the agent needs to word its answer. Paths are confined to the workspace. The shell
tool's child runs in the simulator's own process group (no new session), so a client that
signals the group reaches it.

Example:
    >>> import tempfile, pathlib
    >>> ws = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (ws / "a.txt").write_text("x\\n")
    >>> outcome, files = glob(ws, "*.txt")
    >>> files
    ['a.txt']
"""

from __future__ import annotations

import contextlib
import difflib
import fnmatch
import os
import re
import selectors
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import wire

SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache", ".ruff_cache"})
"""Directories the listing, search and glob tools do not descend into."""

MAX_TREE_ENTRIES = 500
MAX_GREP_MATCHES = 200
MAX_SEARCH_FILE_BYTES = 2 * 1024 * 1024


def inside(ws: Path, name: str) -> Path | None:
    """``name`` resolved in the workspace, or ``None`` when it points outside it.

    Example:
        >>> inside(Path("/ws"), "../etc/passwd") is None
        True
    """
    candidate = (ws / name).resolve() if not os.path.isabs(name) else Path(name).resolve()
    try:
        candidate.relative_to(ws.resolve())
    except ValueError:
        return None
    return candidate


def _walk(ws: Path) -> list[Path]:
    out: list[Path] = []
    for root, dirs, files in os.walk(ws):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for f in sorted(files):
            out.append(Path(root) / f)
    return out


def _ext(name: str) -> str | None:
    suffix = Path(name).suffix
    return suffix if suffix else None


def tree(ws: Path, path: Path | None = None, depth: int = 3) -> tuple[dict[str, Any], list[str]]:
    """The ``lsToolCall`` outcome for ``path`` (the workspace by default), and its entries
    (``name`` or ``name/``) at the top level.

    Example:
        >>> import tempfile
        >>> ws = Path(tempfile.mkdtemp()); (ws / "d").mkdir(); _ = (ws / "f.py").write_text("")
        >>> tree(ws)[1]
        ['d/', 'f.py']
    """
    root = path or ws
    budget = [MAX_TREE_ENTRIES]

    def node(directory: Path, level: int) -> tuple[dict[str, Any], dict[str, int], int]:
        try:
            entries = sorted(directory.iterdir(), key=lambda p: p.name)
        except OSError:
            entries = []
        dirs = [p for p in entries if p.is_dir() and p.name not in SKIP_DIRS]
        files = [p.name for p in entries if not p.is_dir()]
        counts: dict[str, int] = {}
        for f in files:
            ext = _ext(f)
            if ext:
                counts[ext] = counts.get(ext, 0) + 1
        total = len(files)
        children: list[dict[str, Any]] = []
        processed = level < depth and budget[0] > 0
        if processed:
            budget[0] -= len(entries)
            for d in dirs:
                child, child_counts, child_total = node(d, level + 1)
                children.append(child)
                for k, v in child_counts.items():
                    counts[k] = counts.get(k, 0) + v
                total += child_total
        else:
            files = []
        built = wire.dir_tree_node(
            str(directory), children, files, processed=processed, extension_counts=counts, num_files=total
        )
        return built, counts, total

    root_node, _, _ = node(root, 0)
    try:
        top = sorted(root.iterdir(), key=lambda p: p.name)
    except OSError:
        return wire.error_outcome("Directory not found", path=str(root)), []
    names = [p.name + "/" if p.is_dir() else p.name for p in top if p.name not in SKIP_DIRS]
    return wire.ls_success(root_node), names


def read(ws: Path, name: str) -> tuple[dict[str, Any], str | None]:
    """The ``readToolCall`` outcome for ``name`` and the text read (``None`` on error).

    Example:
        >>> import tempfile
        >>> ws = Path(tempfile.mkdtemp()); _ = (ws / "n.txt").write_text("a\\nb\\n")
        >>> read(ws, "n.txt")[0]["success"]["totalLines"]
        3
    """
    path = inside(ws, name)
    shown = str(path) if path is not None else name
    if path is None:
        return wire.error_outcome("Path is outside the workspace", path=name), None
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return wire.error_outcome("File not found", path=shown), None
    except IsADirectoryError:
        return wire.error_outcome("Path is a directory, not a file", path=shown), None
    except OSError as e:
        return wire.error_outcome(str(e), path=shown), None
    text = data.decode("utf-8", "replace")
    return wire.read_success(shown, text, file_size=len(data)), text


def grep(ws: Path, pattern: str) -> tuple[dict[str, Any], list[tuple[str, list[tuple[int, str]]]]]:
    """The ``grepToolCall`` outcome for a regular expression (a literal when it does not
    compile), searched in the workspace's text files; and the matches.

    Example:
        >>> import tempfile
        >>> ws = Path(tempfile.mkdtemp()); _ = (ws / "a.py").write_text("x = 1\\n# TODO\\n")
        >>> grep(ws, "TODO")[1]
        [('a.py', [(2, '# TODO')])]
    """
    try:
        regex = re.compile(pattern)
    except re.error:
        regex = re.compile(re.escape(pattern))
    matches: list[tuple[str, list[tuple[int, str]]]] = []
    count = 0
    for path in _walk(ws):
        if count >= MAX_GREP_MATCHES:
            break
        try:
            if path.stat().st_size > MAX_SEARCH_FILE_BYTES:
                continue
            data = path.read_bytes()
        except OSError:
            continue
        if b"\x00" in data[:8192]:
            continue
        hits: list[tuple[int, str]] = []
        for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if regex.search(line):
                hits.append((n, line))
                count += 1
                if count >= MAX_GREP_MATCHES:
                    break
        if hits:
            matches.append((path.relative_to(ws).as_posix(), hits))
    return wire.grep_success(pattern, str(ws), matches), matches


def glob(ws: Path, pattern: str) -> tuple[dict[str, Any], list[str]]:
    """The ``globToolCall`` outcome: files matching ``pattern`` (at any depth when it has no
    ``/``, as ripgrep globs), workspace-relative, sorted.

    Example:
        >>> import tempfile
        >>> ws = Path(tempfile.mkdtemp()); (ws / "s").mkdir(); _ = (ws / "s" / "m.py").write_text("")
        >>> glob(ws, "*.py")[1]
        ['s/m.py']
    """
    rels = [p.relative_to(ws).as_posix() for p in _walk(ws)]
    if "/" in pattern:
        pat = pattern.removeprefix("./")
        files = [
            r for r in rels if fnmatch.fnmatchcase(r, pat) or fnmatch.fnmatchcase(r, pat.replace("**/", ""))
        ]
    else:
        files = [r for r in rels if fnmatch.fnmatchcase(r.rsplit("/", 1)[-1], pattern)]
    return wire.glob_success(pattern, str(ws), files), files


def edit(ws: Path, name: str, after: str) -> tuple[dict[str, Any], str, bool]:
    """Write ``after`` as the whole new content of ``name`` (creating it and its folders
    when needed). Returns the ``editToolCall`` outcome, the absolute path, and whether the
    file was created.

    Example:
        >>> import tempfile
        >>> ws = Path(tempfile.mkdtemp())
        >>> outcome, path, created = edit(ws, "hello.txt", "hi\\n")
        >>> created, (ws / "hello.txt").read_text(), outcome["success"]["linesAdded"]
        (True, 'hi\\n', 1)
    """
    path = inside(ws, name)
    if path is None:
        return wire.error_outcome("Path is outside the workspace", path=name), name, False
    before: str | None
    try:
        before = path.read_bytes().decode("utf-8", "replace")
    except FileNotFoundError:
        before = None
    except OSError as e:
        return wire.error_outcome(str(e), path=str(path)), str(path), False
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(after, encoding="utf-8")
    except OSError as e:
        return wire.error_outcome(str(e), path=str(path)), str(path), False
    shown = str(path)
    old_lines = (before or "").splitlines()
    new_lines = after.splitlines()
    diff_lines = list(
        difflib.unified_diff(
            old_lines,
            new_lines,
            "/dev/null" if before is None else f"a/{shown}",
            f"b/{shown}",
            lineterm="",
        )
    )
    added = sum(1 for x in diff_lines[2:] if x.startswith("+"))
    removed = sum(1 for x in diff_lines[2:] if x.startswith("-"))
    outcome = wire.edit_success(shown, before, after, "\n".join(diff_lines), added, removed)
    return outcome, shown, before is None


def delete(ws: Path, name: str) -> dict[str, Any]:
    """Delete the file ``name`` of the workspace; the ``deleteToolCall`` outcome.

    Example:
        >>> import tempfile
        >>> ws = Path(tempfile.mkdtemp()); _ = (ws / "a.txt").write_text("x")
        >>> list(delete(ws, "a.txt")), (ws / "a.txt").exists()
        (['success'], False)
    """
    path = inside(ws, name)
    if path is None:
        return wire.error_outcome("Path is outside the workspace", path=name)
    try:
        previous = path.read_bytes().decode("utf-8", "replace")
        path.unlink()
    except FileNotFoundError:
        return wire.error_outcome("File not found", path=str(path))
    except OSError as e:
        return wire.error_outcome(str(e), path=str(path))
    return wire.delete_success(str(path), previous)


SHELL_TIMEOUT_MS = 30000
"""How long a shell command may run: the ``timeout`` of the recorded ``shellToolCall`` args."""

MAX_SHELL_OUTPUT = 1024 * 1024
"""How many bytes of each of a command's stdout and stderr are kept; past that it is stopped."""


def _descendants(pid: int) -> list[int]:
    """The live descendants of ``pid``: from Linux ``/proc``, read by the package's one reader
    (:func:`~cursor_agent_api.runtime.groups.stat_fields`), elsewhere (macOS) from
    ``ps -A -o pid= -o ppid=``. Imported here, when a command is stopped: the simulator
    starts without the runtime.

    Example:
        >>> _descendants(2 ** 22 + 12345)
        []
    """
    from ..runtime import groups

    children: dict[int, list[int]] = {}
    for child, parent in _parents() if groups.HAVE_PROC else _parents_by_ps():
        children.setdefault(parent, []).append(child)
    out: list[int] = []
    todo = list(children.get(pid, []))
    while todo:
        child = todo.pop()
        out.append(child)
        todo += children.get(child, [])
    return out


def _parents() -> list[tuple[int, int]]:
    """``(pid, parent's pid)`` of every process, from ``/proc``."""
    from ..runtime.groups import stat_fields

    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    found = []
    for entry in entries:
        fields = stat_fields(entry) if entry.isdigit() else None
        if fields is not None:  # index 1: the parent's pid
            found.append((int(entry), int(fields[1])))
    return found


def _parents_by_ps() -> list[tuple[int, int]]:
    """``(pid, parent's pid)`` of every process, from ``ps`` (POSIX: macOS, the BSDs)."""
    try:
        listed = subprocess.run(["ps", "-A", "-o", "pid=", "-o", "ppid="], capture_output=True,
                                timeout=10, check=False).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return []
    return [(int(a), int(b)) for a, b in zip(listed[::2], listed[1::2], strict=False)
            if a.isdigit() and b.isdigit()]


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the command and everything it started (they share the simulator's group, which
    must live on, so they are found one by one)."""
    started = _descendants(proc.pid)  # before the shell dies and they are reparented
    for pid in [proc.pid, *started]:  # the shell first: it cannot exit 137 on its own then
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


WAIT_TICK = 0.1
"""How often a running command's ``waiting`` callback is called (:func:`run_shell`), at least."""

EXITED_DRAIN = 0.2
"""How long the output is still read after the shell exited while something it started in the
background holds its stdout or stderr open (``sleep 60 &``): then the command is over."""


def _collect(proc: subprocess.Popen[bytes], deadline: float,
             waiting: Callable[[], None]) -> tuple[bytes, bytes, str]:
    """Read the command's stdout and stderr until both end (or, once the shell has exited,
    for :data:`EXITED_DRAIN` more seconds), keeping :data:`MAX_SHELL_OUTPUT` bytes of each,
    then wait for the shell (it may have closed its output and run on: ``exec >file``),
    calling ``waiting()`` at least every :data:`WAIT_TICK` seconds all along; returns the output
    and why it was stopped (``""``, ``"timeout"``, ``"output"``)."""
    assert proc.stdout is not None and proc.stderr is not None
    kept = {proc.stdout.fileno(): bytearray(), proc.stderr.fileno(): bytearray()}
    stopped = ""
    exited_at: float | None = None
    with selectors.DefaultSelector() as sel:
        for fd in kept:
            sel.register(fd, selectors.EVENT_READ)
        while sel.get_map():
            waiting()
            now = time.monotonic()
            if now >= deadline:
                stopped = "timeout"
                break
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at >= EXITED_DRAIN:
                break  # the shell is done; what it left in the background holds the pipes
            for key, _ in sel.select(timeout=min(deadline - now, WAIT_TICK)):
                data = os.read(key.fd, 65536)
                if not data:
                    sel.unregister(key.fd)
                    continue
                buf = kept[key.fd]
                buf += data[: MAX_SHELL_OUTPUT - len(buf)]
                if len(buf) >= MAX_SHELL_OUTPUT:
                    stopped = "output"
            if stopped:
                break
    while not stopped and proc.poll() is None:
        waiting()
        try:
            proc.wait(timeout=min(max(deadline - time.monotonic(), 0.0), WAIT_TICK))
        except subprocess.TimeoutExpired:
            if time.monotonic() >= deadline:
                stopped = "timeout"
    return bytes(kept[proc.stdout.fileno()]), bytes(kept[proc.stderr.fileno()]), stopped


def _idle() -> None:
    """A ``waiting`` callback that does nothing (print mode)."""


def run_shell(
    ws: Path,
    command: str,
    timeout_ms: int = SHELL_TIMEOUT_MS,
    *,
    elapsed: Callable[[int], int] = lambda measured_ms: measured_ms,
    waiting: Callable[[], None] | None = None,
) -> tuple[dict[str, Any], int, str, str, int]:
    """Run ``command`` with ``/bin/sh -c`` in the workspace, stdin closed, in this process's
    group. Returns the outcome, exit code, stdout, stderr and milliseconds taken, as
    ``elapsed`` reports the measured milliseconds (a seeded run's fake clock reports a
    derived duration, :meth:`~.ids.Clock.elapsed_ms`; a timeout is never shorter than
    ``timeout_ms``).

    ``waiting()`` is called every :data:`WAIT_TICK` seconds or so while the command runs (ACP
    serves its stdin there); what it raises stops the command — killed with what it started —
    and propagates.

    The command is bounded: after ``timeout_ms`` it is killed with what it started and the
    outcome is ``timeout``; when stdout or stderr passes :data:`MAX_SHELL_OUTPUT` bytes it is
    killed too (a ``failure`` with ``signal: "SIGKILL"``, the output cut there).

    Example:
        >>> import tempfile
        >>> outcome, code, out, err, ms = run_shell(Path(tempfile.mkdtemp()), "echo hi")
        >>> code, out, list(outcome)
        (0, 'hi\\n', ['success', 'isBackground'])
        >>> outcome, code, out, err, ms = run_shell(Path(tempfile.mkdtemp()), "echo a; sleep 60", 300)
        >>> list(outcome), out
        (['timeout', 'isBackground'], 'a\\n')
    """
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            ["/bin/sh", "-c", command],
            cwd=ws,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except OSError as e:
        ms = elapsed(int((time.monotonic() - started) * 1000))
        return {"spawnError": {"command": command, "error": str(e)}}, -1, "", str(e), ms
    with proc:
        try:
            raw_out, raw_err, stopped = _collect(proc, started + timeout_ms / 1000, waiting or _idle)
        finally:
            if proc.poll() is None:
                _stop(proc)
        code = proc.wait()
    ms = elapsed(int((time.monotonic() - started) * 1000))
    if stopped == "timeout":
        ms = max(ms, timeout_ms)
    out = raw_out.decode("utf-8", "replace")
    err = raw_err.decode("utf-8", "replace")
    signal_name = signal.Signals(-code).name if code < 0 else ""
    outcome = wire.shell_outcome(command, "", code, out, err, ms, signal=signal_name)
    if stopped == "timeout":
        body = next(iter(v for k, v in outcome.items() if k != "isBackground"))
        outcome = {"timeout": body, "isBackground": False}
    return outcome, code, out, err, ms
