"""An MCP server that hangs: it reads every request and never answers (exits on EOF)."""

import sys

for _line in sys.stdin:
    pass
