#!/usr/bin/env bash
# Quick start, second command: set everything up, then run the linters and the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh test
echo "== browser for the web UI tests (Debian's chromium) =="
scripts/browser.sh
echo "== ruff =="
.venv/bin/ruff check src tests bench
echo "== mypy --strict =="
.venv/bin/mypy
echo "== pytest =="
set +e
.venv/bin/python -m pytest "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: that is a failure here" >&2
  exit 1
fi
exit "$status"
