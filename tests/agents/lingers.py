"""Starts a child in its process group, writes both pids to argv[1], and works for a long time;
with ANSWER_NOW set, answers at once."""

import os
import subprocess
import sys
import time
from pathlib import Path

sys.stdin.read()
if os.environ.get("ANSWER_NOW"):
    sys.exit(subprocess.run(["awf", "answer", '{"branch": "fix/1", "steps": []}']).returncode)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
pidfile = Path(sys.argv[1])
pidfile.with_suffix(".tmp").write_text(f"{os.getpid()} {child.pid}")
pidfile.with_suffix(".tmp").rename(pidfile)
time.sleep(120)
