"""Each benchmark of ``bench/`` still runs: one tiny run of it, its figures' shape checked,
never their values (the suite has no timed test). The benchmarks are not otherwise run by
the suite, so one broke unnoticed for a session (``bench_chat_open.py``, when ``serve``
started refusing ``--simulate`` with ``--agent-binary``); two more were broken when this test
came (``bench_chat_open.py``'s write path on a turn shorter than its warm-up, and
``bench_server.py``'s raw inserts, written for the ``events`` columns before the integer
keys).

Each case is the benchmark's own options at their smallest, in a fresh Python (as a person
runs it); a git revision to compare with is ``HEAD`` (this tree's history; without git, those
cases skip). Left out, as too costly for the suite even at their smallest (their sizes are
fixed) or needing what the suite does not have: ``bench_planner.py`` (~25 s),
``bench_client.py`` and ``bench_run_pages.py`` (~13 s each), ``bench_cli_start.py`` and
``bench_fold_once.py`` (~5 s of CPU each), ``bench_stderr_classify.py`` (its tails, 16 to 64
KiB, fixed), ``bench_keepalive.py`` (three servers, ~3 s of CPU; its exit status is its time
goal's), ``bench_distributed.py`` (PostgreSQL, a cluster), and the two that drive
Chromium, ``bench_markdown.py`` and ``bench_timeline.py``; ``bench_chat_open.py`` runs its write
path only (``--no-serve``: its page opens are Chromium's).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
NUMBER = r"[\d,.]+"

CASES: dict[str, tuple[list[str], str]] = {
    # bench: (its smallest run's options, a line of its figures, as a regular expression)
    "bench_chat_open.py": (["--no-serve", "--only", "after", "--calls", "3", "--write-repeats", "1"],
                           rf"'write path': \{{'events': \d+, 'server writes/s': {NUMBER}, "),
    "bench_startup.py": (["--before-src", "src", "--repeats", "1"],
                         rf"^import cursor_agent_api\.sim +{NUMBER} +{NUMBER} +{NUMBER}$"),
    "bench_kept_events.py": (["--baseline", "HEAD", "--lines", "200", "--repeats", "1"],
                             rf"^this tree +{NUMBER} +{NUMBER} +{NUMBER} +{NUMBER}$"),
    "bench_pairing.py": (["--baseline", "HEAD", "--sizes", "20", "--rounds", "1"],
                         rf"^\| 20 \| distinct \| {NUMBER} ms \| {NUMBER} ms \| {NUMBER}× \|$"),
    "bench_parse.py": (["--baseline", "HEAD", "--lines", "200", "--rounds", "1", "--deltas", "200"],
                       rf"^partial output: parse_event \+ Transcript +{NUMBER} +{NUMBER} "),
    "bench_sync_path.py": (["--baseline", "HEAD", "--repeats", "1", "--lines", "5", "--tput", "100"],
                           rf"^this tree sync keep_events=True +{NUMBER} "),
    "bench_guard.py": (["--rounds", "1"],
                       rf"^\| guard on \(default on Linux\) \| {NUMBER} \| {NUMBER}x \| {NUMBER} \|"),
    "bench_run_hold.py": (["--pairs", "2", "--batch", "2"],
                          rf"^sqlite \{{'without µs/batch': {NUMBER}, 'with µs/batch': {NUMBER}, "),
    "bench_server.py": (["--only", "throughput", "--events", "200"],
                        rf"^\| baseline: raw executemany into the same SQLite file .*\| {NUMBER} \|$"),
    "bench_memory.py": (["--lines", "1", "--mb", "1", "--only", "limits"],
                        rf"^limits \| succeeded \| {NUMBER} \| {NUMBER} \|"),
    "bench_live_view.py": (["--repeats", "1", "--sizes", "200"],
                           rf"^\| this tree \| one answer line \| 200 \| {NUMBER} \| {NUMBER} \| {NUMBER}×"),
}


def _has_git_history() -> bool:
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "HEAD"],
                          capture_output=True, check=False)
    return done.returncode == 0


def test_every_benchmark_is_run_or_said_left_out() -> None:
    left_out = {"bench_planner.py", "bench_client.py", "bench_run_pages.py", "bench_cli_start.py",
                "bench_fold_once.py", "bench_stderr_classify.py", "bench_keepalive.py",
                "bench_distributed.py",
                "bench_markdown.py", "bench_timeline.py"}
    assert {p.name for p in BENCH.glob("bench_*.py")} == set(CASES) | left_out
    assert all(name in (__doc__ or "") for name in left_out)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_benchmark_runs(name: str, tmp_path: Path) -> None:
    options, figures = CASES[name]
    if "HEAD" in options and not _has_git_history():
        pytest.skip("compares with a git revision: this tree has no git history")
    env = {**os.environ, "TMPDIR": str(tmp_path), "CURSOR_AGENT_API_HOME": str(tmp_path / "home"),
           "CURSOR_CONFIG_DIR": str(tmp_path / "cursor-config")}
    done = subprocess.run([sys.executable, str(BENCH / name), *options], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
    assert re.search(figures, done.stdout, re.M), done.stdout[-3000:]
