#!/usr/bin/env bash
# Install the package with its dev tools into .venv, start a throwaway PostgreSQL on loopback
# (installing the Debian package when it is missing), and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[dev,mcp,postgres,serve]'
if [[ -z "${TOOLNEXUS_PG_URL:-}" ]]; then
    if pg_line="$(bash scripts/pg.sh start | tail -n 1)"; then
        export "$pg_line"
        trap 'bash scripts/pg.sh stop >/dev/null 2>&1 || true' EXIT
    else
        echo "test.sh: no PostgreSQL available; the Postgres tests will skip (fail under CI)" >&2
    fi
fi
.venv/bin/python -m pytest -q "$@"
