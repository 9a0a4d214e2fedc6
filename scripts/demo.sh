#!/usr/bin/env bash
# Quick start, first command: set everything up, then run the main job on a copy of
# examples/demo-workspace, with the bundled simulator standing in for Cursor's agent (labelled
# as such everywhere): one turn on the command line, then the server and its web UI, whose URL
# (with its access token) is printed. Ctrl-C stops the server. PORT=… picks another port.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh server
root=$(mktemp -d "${TMPDIR:-/tmp}/cursor-agent-api-demo.XXXXXX")
ws="$root/workspace"
cp -R examples/demo-workspace "$ws"
export CURSOR_CONFIG_DIR="$root/cursor-config"       # the simulator's chats, kept with the demo
export CURSOR_AGENT_API_HOME="$root/cursor-agent-api"  # the chats the command line saves
echo "== the command line: one turn on the demo workspace ($ws) =="
.venv/bin/cursor-agent-api run --simulate --trust --workspace "$ws" \
  "read hello.py, then append probe13 to notes.txt"
echo
echo "== the server and web UI, on the simulator: open the URL printed below; Ctrl-C stops =="
exec .venv/bin/cursor-agent-api serve --simulate --root "$ws" --port "${PORT:-8765}" \
  --database-url "sqlite+aiosqlite:///$root/server.sqlite3"
