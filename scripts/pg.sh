#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests.
#
#   bash scripts/pg.sh start   # prints TOOLNEXUS_PG_URL=postgresql://…
#   bash scripts/pg.sh stop    # stops the cluster and deletes its directory
#
# Typical use:  export "$(bash scripts/pg.sh start | tail -n 1)"
#
# The cluster lives in a fresh temp directory, listens on 127.0.0.1 only (port
# $TOOLNEXUS_PG_PORT, default 54329) with trust authentication, and runs without fsync: it is
# for tests, never for data. When no PostgreSQL server binaries are found, the Debian package
# is installed (as root). As root, the server runs as the `postgres` user (created if
# missing), because PostgreSQL refuses to run as root. `start` on a running cluster only
# prints its URL again.
set -euo pipefail

port="${TOOLNEXUS_PG_PORT:-54329}"
state="${TMPDIR:-/tmp}/toolnexus-pg-${port}.dir"
db="toolnexus_test"
url="postgresql://postgres@127.0.0.1:${port}/${db}"

log() { echo "pg.sh: $*" >&2; }

find_bindir() {
    local candidate
    for candidate in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [[ -x "$candidate/initdb" && -x "$candidate/pg_ctl" ]]; then
            echo "$candidate"
            return 0
        fi
    done
    if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
        dirname "$(command -v initdb)"
        return 0
    fi
    return 1
}

ensure_binaries() {
    local bindir
    if bindir="$(find_bindir)"; then
        echo "$bindir"
        return 0
    fi
    if [[ "$(id -u)" -ne 0 ]]; then
        log "no PostgreSQL server binaries found; install the 'postgresql' package"
        return 1
    fi
    log "installing the Debian postgresql package"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq postgresql >&2
    find_bindir
}

# Run a command as the cluster owner: ourselves, or `postgres` when we are root.
as_owner() {
    if [[ "$(id -u)" -eq 0 ]]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

ensure_owner() {
    if [[ "$(id -u)" -eq 0 ]] && ! id postgres >/dev/null 2>&1; then
        log "creating the system user postgres"
        useradd --system --user-group --no-create-home --shell /usr/sbin/nologin postgres
    fi
}

is_running() {
    [[ -f "$state" ]] || return 1
    local dir
    dir="$(cat "$state")"
    [[ -d "$dir/data" ]] && as_owner "$bindir/pg_ctl" -D "$dir/data" status >/dev/null 2>&1
}

start() {
    bindir="$(ensure_binaries)"
    ensure_owner
    if is_running; then
        echo "TOOLNEXUS_PG_URL=${url}"
        return 0
    fi
    local dir
    dir="$(mktemp -d "${TMPDIR:-/tmp}/toolnexus-pg.XXXXXX")"
    chmod 700 "$dir"
    if [[ "$(id -u)" -eq 0 ]]; then
        chown postgres: "$dir"
    fi
    echo "$dir" >"$state"
    as_owner "$bindir/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C \
        --no-sync >"$dir/initdb.log" 2>&1 || {
        cat "$dir/initdb.log" >&2
        return 1
    }
    as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off \
            -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" \
        start >&2 || {
        cat "$dir/server.log" >&2
        return 1
    }
    as_owner "$bindir/createdb" -h 127.0.0.1 -p "$port" -U postgres "$db"
    echo "TOOLNEXUS_PG_URL=${url}"
}

stop() {
    [[ -f "$state" ]] || return 0
    bindir="$(find_bindir)" || return 0
    local dir
    dir="$(cat "$state")"
    if [[ -d "$dir/data" ]]; then
        as_owner "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >&2 || true
    fi
    rm -rf -- "$dir"
    rm -f -- "$state"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
*)
    echo "usage: $0 start|stop" >&2
    exit 2
    ;;
esac
