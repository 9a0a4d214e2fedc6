#!/usr/bin/env bash
# Start a PostgreSQL cluster on 127.0.0.1 for the server tests; print its SQLAlchemy URL.
#
# Installs PostgreSQL from Debian's packages if it is missing (needs root), creates a
# cluster under $PGDATA_DIR (default: /tmp/cursor-agent-api-pg), starts it on 127.0.0.1:$PGPORT
# (default 54329), creates the role and database `cursor_agent_api` (the role may CREATEDB:
# the tests make a fresh database per test), and prints on stdout:
#
#   postgresql+asyncpg://cursor_agent_api:cursor_agent_api@127.0.0.1:54329/cursor_agent_api
#
# Idempotent: a second call reuses the running cluster. Everything else goes to stderr.
# Usage:
#   export CURSOR_AGENT_API_TEST_DATABASE_URL="$(scripts/postgres.sh)"
#   scripts/postgres.sh stop      # stop the cluster
set -euo pipefail

PGPORT="${PGPORT:-54329}"
PGDATA_DIR="${PGDATA_DIR:-/tmp/cursor-agent-api-pg}"
DB=cursor_agent_api
ROLE=cursor_agent_api
PASSWORD=cursor_agent_api
log() { echo "postgres.sh: $*" >&2; }

find_bin() {
    local dir
    dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
    [ -n "$dir" ] && [ -x "$dir/initdb" ] && echo "$dir"
}

BIN="$(find_bin || true)"
if [ -z "$BIN" ] && [ "${1:-}" = "stop" ]; then
    exit 0  # no PostgreSQL installed: no cluster to stop
fi
if [ -z "$BIN" ]; then
    log "installing PostgreSQL from the OS packages"
    if [ "$(id -u)" -ne 0 ]; then
        log "not root: install the 'postgresql' package first"; exit 1
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
        log "no apt-get (not Debian or Ubuntu): install PostgreSQL's server (initdb, pg_ctl) so" \
            "that /usr/lib/postgresql/*/bin has them, or use SKIP_POSTGRES=1 with scripts/test.sh"
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq postgresql >&2
    BIN="$(find_bin)"
fi

# initdb and postgres refuse to run as root: use the postgres user when we are root.
if [ "$(id -u)" -eq 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --home "$PGDATA_DIR" postgres
    AS=(runuser -u postgres --)
else
    AS=()
fi

if [ "${1:-}" = "stop" ]; then
    if [ -f "$PGDATA_DIR/data/postmaster.pid" ]; then
        "${AS[@]}" "$BIN/pg_ctl" -D "$PGDATA_DIR/data" -m fast stop >&2
    fi
    exit 0
fi

mkdir -p "$PGDATA_DIR"
[ "$(id -u)" -eq 0 ] && chown postgres: "$PGDATA_DIR"
if [ ! -f "$PGDATA_DIR/data/PG_VERSION" ]; then
    log "creating a cluster in $PGDATA_DIR/data"
    "${AS[@]}" "$BIN/initdb" -D "$PGDATA_DIR/data" -U postgres --auth-local=trust \
        --auth-host=scram-sha-256 -E UTF8 >&2
fi
if ! "${AS[@]}" "$BIN/pg_ctl" -D "$PGDATA_DIR/data" status >/dev/null 2>&1; then
    log "starting on 127.0.0.1:$PGPORT"
    "${AS[@]}" "$BIN/pg_ctl" -D "$PGDATA_DIR/data" -w -t 60 -l "$PGDATA_DIR/server.log" \
        -o "-c listen_addresses=127.0.0.1 -p $PGPORT -k '$PGDATA_DIR' -c max_connections=300 -c fsync=off" \
        start >&2
fi

psql_() { "${AS[@]}" "$BIN/psql" -h "$PGDATA_DIR" -p "$PGPORT" -U postgres -v ON_ERROR_STOP=1 -qtA "$@"; }
if [ "$(psql_ -c "SELECT 1 FROM pg_roles WHERE rolname = '$ROLE'")" != "1" ]; then
    psql_ -c "CREATE ROLE $ROLE LOGIN CREATEDB PASSWORD '$PASSWORD'" >&2
fi
if [ "$(psql_ -c "SELECT 1 FROM pg_database WHERE datname = '$DB'")" != "1" ]; then
    psql_ -c "CREATE DATABASE $DB OWNER $ROLE" >&2
fi
echo "postgresql+asyncpg://$ROLE:$PASSWORD@127.0.0.1:$PGPORT/$DB"
