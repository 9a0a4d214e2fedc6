#!/usr/bin/env bash
# Quick start, first command: set everything up, then run the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh server
echo "== replaying a real recording of Cursor's agent (read a file, then edit it) =="
.venv/bin/cursor-agent-api replay tests/data/cursor-real/08-hcn-0910-probe-13-composer-read-then-edit.ndjson
