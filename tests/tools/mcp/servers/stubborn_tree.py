"""An MCP server that never answers, ignores EOF on stdin and SIGTERM, and starts a child that
ignores SIGTERM too; only SIGKILL to the whole process group stops the pair.

With ``DEMO_PIDFILE`` set it writes ``<own pid> <child pid>`` there once both run.
"""

import os
import signal
import subprocess
import sys
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
CHILD = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(3600)"
child = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.DEVNULL)
if os.environ.get("DEMO_PIDFILE"):
    path = os.environ["DEMO_PIDFILE"]
    with open(path + ".tmp", "w") as out:
        out.write(f"{os.getpid()} {child.pid}")
    os.replace(path + ".tmp", path)
sys.stdin.close()
while True:
    time.sleep(60)
