#!/usr/bin/env bash
# Quick start, first command: set everything up, then run the main job on a copy of
# examples/demo-workspace, with the bundled simulator standing in for Cursor's agent (labelled
# as such everywhere): one turn on the command line, then the server and its web UI, whose URL
# (with its access token) is printed. Ctrl-C stops the server. PORT=… picks another port (0: any
# free one).
#
# What it leaves, on purpose, so that what it prints keeps working after it stops:
#   .demo/workspace  the demo's workspace (gitignored; copied afresh at each run)
#   the chats, where this project keeps them for any run (see "Where chats live" in README.md):
#   the simulator's in ~/.local/share/cursor-agent-sim (or $CURSOR_CONFIG_DIR), the command
#   line's in ~/.local/share/cursor-agent-api/chats (or $CURSOR_AGENT_API_HOME/chats), the
#   server's database in ~/.local/share/cursor-agent-api/server-simulated.sqlite3.
# Nothing is left in the temp directory. CURSOR_AGENT_API_DEMO_DIR=… puts .demo elsewhere (one
# demo runs in it at a time: a second is refused, as is a busy port, before anything is touched);
# CURSOR_AGENT_API_SKIP_SETUP=1 uses .venv as it is (see scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
scripts/setup.sh server
bin="$repo/.venv/bin"
demo=${CURSOR_AGENT_API_DEMO_DIR:-"$repo/.demo"}
if ! mkdir -p "$demo" 2>/dev/null || [ ! -w "$demo" ]; then
  echo "demo.sh: cannot write in $demo (where the demo keeps its workspace):" \
    "CURSOR_AGENT_API_DEMO_DIR=/some/writable/dir puts it elsewhere" >&2
  exit 1
fi
demo=$(cd "$demo" && pwd)
ws="$demo/workspace"
port=${PORT:-8765}
# One demo per directory: a lock held while the demo runs (the server inherits it). A second
# demo, or a busy port, is refused before the running demo's workspace is touched.
if command -v flock >/dev/null 2>&1; then
  exec {demo_lock}>>"$demo/.lock"
  if ! flock -n "$demo_lock"; then
    echo "demo.sh: a demo is running in $demo already: stop it (Ctrl-C), or run this one with" \
      "CURSOR_AGENT_API_DEMO_DIR=/another/dir and PORT=0" >&2
    exit 1
  fi
fi
if [ "$port" != 0 ] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  echo "demo.sh: port $port is in use on 127.0.0.1: PORT=0 picks any free one (or PORT=another)" >&2
  exit 1
fi
# (a clone's files may be read-only: the copy is made writable, for the demo and the next run)
if [ -e "$ws" ]; then chmod -R u+w "$ws"; fi
rm -rf "$ws"
cp -R examples/demo-workspace "$ws"
chmod -R u+w "$ws"
q() { printf '%q' "$1"; }  # quoted for the shell, so that the printed commands paste as they are

echo "== the command line: one turn on the demo workspace ($ws) =="
"$bin/cursor-agent-api" run --simulate --trust --workspace "$ws" \
  "read hello.py, then append probe13 to notes.txt"
chat_id=$("$bin/cursor-agent-api" sessions list --json | "$bin/python" -c \
  'import json, sys; print(json.loads(sys.stdin.readline())["chat_id"])')
echo
echo "== next =="
echo "The commands are in $bin, not on PATH: 'source .venv/bin/activate' in $repo puts them"
echo "there (then the 'continue:' line above works as printed)."
echo "Continue this chat on the command line (paste it, in any directory):"
echo "  $(q "$bin/cursor-agent-api") chat --resume $chat_id --workspace $(q "$ws") --simulate"
echo "The command line saved this chat ('cursor-agent-api sessions list' shows it). The web UI below"
echo "shows the server's chats, from its own database: this turn is not among them (README.md,"
echo "\"Where chats live\")."
echo
echo "== the server and web UI, on the simulator: open the URL printed below; Ctrl-C stops =="
exec "$bin/cursor-agent-api" serve --simulate --root "$ws" --port "$port"
