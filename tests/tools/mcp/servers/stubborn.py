"""An MCP server that never answers and ignores EOF on stdin; only a signal stops it."""

import sys
import time

sys.stdin.close()
while True:
    time.sleep(60)
