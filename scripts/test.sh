#!/usr/bin/env bash
# Quick start, second command: set everything up, then run the linters and the whole test suite.
# The suite runs once on SQLite; the tests that can reach PostgreSQL run again on it (installed
# from the OS packages and started on 127.0.0.1 by scripts/postgres.sh): those marked
# `postgresql` in tests/server, tests/distributed (the distributed mode: API servers and workers
# on that database; all of it) and tests/cli. tests/conftest.py marks them, by a simple rule: a
# test that takes a database fixture (`db_url`, `postgres_url`), is in tests/distributed, or is in
# a module that names the variable (PG_ENV) itself (a test that takes a fixture another way is
# marked by hand; the fixtures fail one that is not). No other test can reach PostgreSQL (the
# product never reads CURSOR_AGENT_API_TEST_DATABASE_URL; those fixtures are its only readers),
# so a second run of one would repeat the SQLite pass. SKIP_POSTGRES=1 skips that pass.
# The tests run in parallel (pytest-xdist), one worker per CPU and one more; PYTEST_WORKERS=N sets
# how many (PYTEST_WORKERS=0: in this process, one at a time). The PostgreSQL pass runs alongside
# the linters and the SQLite pass, in one more process with 2 workers (PYTEST_PG_WORKERS=N: with
# N; 0: one at a time): much of the suite's time is spent waiting on servers, agents and
# browsers, not computing (BENCHMARKS.md). Its output is kept and shown after the SQLite pass's;
# the command fails if either pass fails.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh test
# Python caches compiled modules here (in __pycache__, ignored by git) even where the environment
# says not to: the suite starts hundreds of Python processes (the simulator, the CLI, servers),
# each of which would otherwise compile the package's sources again (BENCHMARKS.md: the CLI and
# simulator tests took a quarter less CPU with the cache).
unset PYTHONDONTWRITEBYTECODE
cpus='import os; print(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)'
workers="${PYTEST_WORKERS:-$(( $(.venv/bin/python -c "$cpus") + 1 ))}"
run_pytest() {
  set +e
  .venv/bin/python -m pytest -n "$workers" --dist worksteal --durations=15 "$@"
  local status=$?
  set -e
  if [ "$status" -eq 5 ]; then
    echo "pytest collected no tests: that is a failure here" >&2
    return 1
  fi
  return "$status"
}
pg_pid=""
with_sigint='import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler)
import pytest; sys.exit(pytest.main())'
if [ "${SKIP_POSTGRES:-0}" != "1" ] && [ "$#" -eq 0 ]; then
  echo "== PostgreSQL =="
  # A cluster already listening (the developer's own) is used, and left running afterwards. One
  # this script started is stopped by the last test.sh using it: each holds a shared lock on
  # $PGDATA_DIR.lock while it runs; at its end, one that can take the lock alone (no other run
  # uses the cluster) stops the cluster if a test.sh started it (the .started-by-test-sh mark).
  # Without flock(1) a cluster this run started is left running.
  pg_dir="${PGDATA_DIR:-/tmp/cursor-agent-api-pg}"
  pg_mark="$pg_dir.started-by-test-sh"
  pg_lock=""
  if command -v flock >/dev/null 2>&1; then
    exec {pg_lock}>>"$pg_dir.lock"
    flock -s "$pg_lock"
  fi
  if ! (exec 3<>"/dev/tcp/127.0.0.1/${PGPORT:-54329}") 2>/dev/null && [ -n "$pg_lock" ]; then
    touch "$pg_mark"
  fi
  pg_sh() {  # (the cluster must not inherit the lock: it would hold it for ever)
    if [ -n "$pg_lock" ]; then scripts/postgres.sh "$@" {pg_lock}>&-; else scripts/postgres.sh "$@"; fi
  }
  url="$(pg_sh)"
  pg_log="$(mktemp -t cursor-agent-api-pg-pass.XXXXXX)"
  echo "(its pytest pass starts now, alongside the rest; its output follows the SQLite pass's)"
  # (a command started with & ignores SIGINT: this one takes it back, so that the trap below
  # can interrupt it at any moment)
  CURSOR_AGENT_API_TEST_DATABASE_URL="$url" .venv/bin/python -c "$with_sigint" \
    -n "${PYTEST_PG_WORKERS:-2}" --dist worksteal --durations=15 -p no:cacheprovider \
    -m postgresql tests/server tests/distributed tests/cli >"$pg_log" 2>&1 &
  pg_pid=$!
  # An early failure (ruff, mypy) or Ctrl-C ends the PostgreSQL pass too: SIGINT is pytest's
  # KeyboardInterrupt, whose teardown stops the servers its tests started.
  trap 'if [ -n "$pg_pid" ]; then kill -INT "$pg_pid" 2>/dev/null; wait "$pg_pid" || true; fi
        rm -f "$pg_log"
        if [ -n "$pg_lock" ] && flock -xn "$pg_lock" && [ -f "$pg_mark" ]; then
          pg_sh stop >/dev/null 2>&1 || true
          rm -f "$pg_mark"
        fi' EXIT
fi
echo "== browser for the web UI tests (Debian's chromium) =="
scripts/browser.sh
echo "== ruff =="
.venv/bin/ruff check src tests bench
echo "== mypy --strict =="
.venv/bin/mypy
echo "== pytest (SQLite) =="
sqlite_status=0
run_pytest "$@" || sqlite_status=$?
if [ -n "$pg_pid" ]; then
  pg_status=0
  wait "$pg_pid" || pg_status=$?
  pg_pid=""
  echo "== pytest -m postgresql tests/server tests/distributed tests/cli (PostgreSQL) =="
  cat "$pg_log"
  if [ "$pg_status" -eq 5 ]; then
    echo "pytest collected no tests: that is a failure here" >&2
  fi
  if [ "$sqlite_status" -eq 0 ]; then sqlite_status=$pg_status; fi
fi
exit "$sqlite_status"
