#!/usr/bin/env bash
# Quick start, second command: set everything up, then run the linters and the whole test suite.
# The suite runs once on SQLite; then the server tests run again on PostgreSQL (installed from
# the OS packages and started on 127.0.0.1 by scripts/postgres.sh), with the distributed mode's
# tests (tests/distributed: API servers and workers on that database). SKIP_POSTGRES=1 skips that.
# The tests run in parallel (pytest-xdist), one worker per CPU; PYTEST_WORKERS=N sets how many
# (PYTEST_WORKERS=0: in this process, one at a time).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh test
echo "== browser for the web UI tests (Debian's chromium) =="
scripts/browser.sh
echo "== ruff =="
.venv/bin/ruff check src tests bench
echo "== mypy --strict =="
.venv/bin/mypy
run_pytest() {
  set +e
  .venv/bin/python -m pytest -n "${PYTEST_WORKERS:-auto}" --dist worksteal --durations=15 "$@"
  local status=$?
  set -e
  if [ "$status" -eq 5 ]; then
    echo "pytest collected no tests: that is a failure here" >&2
    return 1
  fi
  return "$status"
}
echo "== pytest (SQLite) =="
run_pytest "$@"
if [ "${SKIP_POSTGRES:-0}" != "1" ] && [ "$#" -eq 0 ]; then
  echo "== PostgreSQL =="
  # a cluster already listening (the developer's own) is used, and left running afterwards
  already_up=0
  if (exec 3<>"/dev/tcp/127.0.0.1/${PGPORT:-54329}") 2>/dev/null; then already_up=1; fi
  url="$(scripts/postgres.sh)"
  echo "== pytest tests/server tests/distributed (PostgreSQL) =="
  CURSOR_AGENT_API_TEST_DATABASE_URL="$url" run_pytest tests/server tests/distributed
  if [ "$already_up" = 0 ]; then scripts/postgres.sh stop >/dev/null 2>&1 || true; fi
fi
