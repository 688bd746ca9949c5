"""A fake host that answers `initialize` and then refuses to end on stdin EOF.

Usage: python stubborn_host.py MODE PIDFILE
  MODE "ignore-eof":  keeps running after EOF; dies on SIGTERM.
  MODE "ignore-term": also ignores SIGTERM, so only SIGKILL ends it.
It starts one child (`sleep 60`) in its process group and writes the child's pid to
PIDFILE, so a test can check that nothing outlives the client's close sequence.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

mode, pidfile = sys.argv[1], sys.argv[2]
if mode == "ignore-term":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen(["sleep", "60"], stdin=subprocess.DEVNULL)
with open(pidfile, "w") as f:
    f.write(str(child.pid))

for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg.get("method") == "initialize":
        result = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "stubborn", "version": "0"},
        }
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
    sys.stdout.flush()

while True:  # stdin reached EOF: stay alive anyway
    time.sleep(0.05)
