#!/usr/bin/env bash
# The distributed mode on this machine, in one command (docs/distributed.md): PostgreSQL
# (scripts/postgres.sh), 3 workers (cursor-agent-api worker) and 2 API servers
# (serve --dispatch queue), with the bundled simulator standing in for Cursor's agent. Prints
# each API server's URL once everything is up; Ctrl-C stops the servers and the workers
# (PostgreSQL keeps running: scripts/postgres.sh stop stops it).
#
#   PORT=8765          the first API server's port; the second gets PORT+1 (PORT=0: any free ones)
#   DATABASE_URL=...   another PostgreSQL database (default: cursor_agent_api_demo, created on
#                      the cluster scripts/postgres.sh starts)
# It leaves .demo/cluster (gitignored): the workspace (a copy of examples/demo-workspace) and
# each worker's simulated Cursor chats; logs in .demo/cluster/*.log.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
scripts/setup.sh server,postgres
bin="$repo/.venv/bin"
demo="$repo/.demo/cluster"
mkdir -p "$demo"
rm -rf "$demo/workspace"
cp -R examples/demo-workspace "$demo/workspace"

if [ -z "${DATABASE_URL:-}" ]; then
  base="$(scripts/postgres.sh)"
  DATABASE_URL="${base%/*}/cursor_agent_api_demo"
  "$bin/python" - "$base" <<'PY'
import asyncio, sys
import asyncpg
from sqlalchemy.engine import make_url

async def main(url: str) -> None:
    conn = await asyncpg.connect(make_url(url).set(drivername="postgresql").render_as_string(False))
    try:
        if not await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = 'cursor_agent_api_demo'"):
            await conn.execute("CREATE DATABASE cursor_agent_api_demo")
    finally:
        await conn.close()

asyncio.run(main(sys.argv[1]))
PY
fi
# One token for both API servers (in the environment: never in argv).
CURSOR_AGENT_API_TOKEN="$("$bin/python" -c 'import secrets; print(secrets.token_hex(24))')"
export CURSOR_AGENT_API_DATABASE_URL="$DATABASE_URL" CURSOR_AGENT_API_TOKEN

pids=()
cleanup() {
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

wait_for() {  # wait_for FILE TEXT: until TEXT appears in FILE (the process must still run)
  local i
  for i in $(seq 1 600); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    kill -0 "${pids[-1]}" 2>/dev/null || { echo "cluster-demo: failed, see $1" >&2; cat "$1" >&2; exit 1; }
    sleep 0.1
  done
  echo "cluster-demo: timed out, see $1" >&2
  exit 1
}

for i in 1 2 3; do
  "$bin/cursor-agent-api" worker --simulate --root "$demo/workspace" --name "demo-w$i" --concurrency 2 \
    --agent-env "CURSOR_CONFIG_DIR=$demo/cursor-w$i" --log-level warning \
    >"$demo/worker-$i.out" 2>"$demo/worker-$i.log" &
  pids+=($!)
  wait_for "$demo/worker-$i.out" "taking runs"
done
port="${PORT:-8765}"
for i in 1 2; do
  p=$port
  if [ "$port" != 0 ]; then p=$((port + i - 1)); fi
  "$bin/cursor-agent-api" serve --dispatch queue --root "$demo/workspace" --port "$p" \
    --log-level warning >"$demo/api-$i.out" 2>"$demo/api-$i.log" &
  pids+=($!)
  wait_for "$demo/api-$i.out" "Open: "
done
echo "== a cluster on this machine: 3 workers (demo-w1..3), 2 API servers, PostgreSQL =="
echo "database: ${DATABASE_URL%%://*}://…@${DATABASE_URL#*@}"
echo "token (both servers, for programs: 'Authorization: token …'): $CURSOR_AGENT_API_TOKEN"
for i in 1 2; do
  echo "API server $i: $(grep -m1 ' at http' "$demo/api-$i.out" | sed 's/.* at //')"
done
echo "Ctrl-C stops the servers and the workers. Open either server (a one-time sign-in link each):"
for i in 1 2; do grep -m1 "Open: " "$demo/api-$i.out"; done
wait
