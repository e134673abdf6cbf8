"""An MCP server that hangs: it reads every request and never answers (exits on EOF).

With ``DEMO_PIDFILE`` set it writes its pid there first.
"""

import os
import sys

if os.environ.get("DEMO_PIDFILE"):
    with open(os.environ["DEMO_PIDFILE"], "w") as out:
        out.write(str(os.getpid()))
for _line in sys.stdin:
    pass
