#!/usr/bin/env bash
# Install the package with its dev tools into .venv, start a throwaway PostgreSQL on loopback
# (installing the Debian package when it is missing), install bubblewrap for the bash sandbox
# tests when it is missing, install Debian's chromium for the browser tests (Playwright drives it;
# it never downloads a browser), and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[dev,mcp,postgres,otel,cli,serve,inbox]'
if ! command -v bwrap >/dev/null 2>&1; then
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
        apt-get install -y -q bubblewrap >/dev/null 2>&1 \
            || { apt-get update -q >/dev/null && apt-get install -y -q bubblewrap >/dev/null; }
    else
        echo "test.sh: bubblewrap (bwrap) is missing; the sandbox tests will skip (fail under CI)" >&2
    fi
fi
if [[ ! -x /usr/bin/chromium ]]; then
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
        apt-get install -y -q chromium >/dev/null 2>&1 \
            || { apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null; }
    else
        echo "test.sh: Debian's chromium is missing; the browser tests will skip (fail under CI)" >&2
    fi
fi
if [[ -z "${TOOLNEXUS_PG_URL:-}" ]]; then
    if pg_line="$(bash scripts/pg.sh start | tail -n 1)"; then
        export "$pg_line"
        trap 'bash scripts/pg.sh stop >/dev/null 2>&1 || true' EXIT
    else
        echo "test.sh: no PostgreSQL available; the Postgres tests will skip (fail under CI)" >&2
    fi
fi
.venv/bin/python -m pytest -q "$@"
