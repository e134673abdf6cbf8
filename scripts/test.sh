#!/usr/bin/env bash
# Install the package with its dev tools into .venv and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[dev,mcp]'
.venv/bin/python -m pytest -q "$@"
