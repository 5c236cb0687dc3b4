"""Writes its pid to argv[1] and works for a long time; with ANSWER_NOW set, answers at once."""

import os
import subprocess
import sys
import time
from pathlib import Path

sys.stdin.read()
if os.environ.get("ANSWER_NOW"):
    sys.exit(subprocess.run(["awf", "answer", '{"branch": "fix/1", "steps": []}']).returncode)
pidfile = Path(sys.argv[1])
pidfile.with_suffix(".tmp").write_text(str(os.getpid()))
pidfile.with_suffix(".tmp").rename(pidfile)
time.sleep(120)
