"""An MCP server that crashes on start: it writes a reason to stderr and exits with code 3."""

import sys

sys.stderr.write("fatal: configuration missing\n")
sys.exit(3)
