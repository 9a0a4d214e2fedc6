#!/usr/bin/env bash
# Quick start, first command: set everything up, then run the main job — the agent (the bundled
# simulator, clearly labelled) on a copy of examples/demo-workspace, shown live.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh server
root=$(mktemp -d "${TMPDIR:-/tmp}/cursor-agent-api-demo.XXXXXX")
ws="$root/workspace"
cp -R examples/demo-workspace "$ws"
export CURSOR_CONFIG_DIR="$root/cursor-config"       # the simulator's chats, kept with the demo
export CURSOR_AGENT_API_HOME="$root/cursor-agent-api"  # the chats this tool saves
echo "== demo workspace: $ws =="
run() { .venv/bin/cursor-agent-api run --simulate --trust --workspace "$ws" "$@"; }
run "list the files"
chat=$(.venv/bin/cursor-agent-api sessions list --json | .venv/bin/python -c 'import json,sys; print(json.loads(sys.stdin.readline())["chat_id"])')
run --resume "$chat" "read hello.py, then append probe13 to notes.txt"
run --resume "$chat" --force 'run `python3 hello.py`'
