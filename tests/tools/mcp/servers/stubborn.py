"""An MCP server that never answers and ignores EOF on stdin; only a signal stops it.

With ``DEMO_PIDFILE`` set it writes its pid there first.
"""

import os
import sys
import time

if os.environ.get("DEMO_PIDFILE"):
    with open(os.environ["DEMO_PIDFILE"], "w") as out:
        out.write(str(os.getpid()))
sys.stdin.close()
while True:
    time.sleep(60)
