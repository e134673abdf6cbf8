"""An MCP server that crashes on start after printing its LEAK environment variable to stderr."""

import os
import sys

sys.stderr.write(f"cannot log in with {os.environ.get('LEAK', '')}\n")
sys.exit(2)
