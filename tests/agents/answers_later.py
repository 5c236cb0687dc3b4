"""Writes its pid to argv[1], waits for the file argv[2], then runs awf answer and writes its exit
code and stderr to argv[3]; with ANSWER_NOW set, answers at once."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.stdin.read()
ANSWER = '{"branch": "fix/1", "steps": []}'
if os.environ.get("ANSWER_NOW"):
    sys.exit(subprocess.run(["awf", "answer", ANSWER]).returncode)
pidfile, go, said = (Path(arg) for arg in sys.argv[1:4])
pidfile.with_suffix(".tmp").write_text(str(os.getpid()))
pidfile.with_suffix(".tmp").rename(pidfile)
while not go.exists():
    time.sleep(0.02)
done = subprocess.run(["awf", "answer", ANSWER], capture_output=True, text=True)
said.with_suffix(".tmp").write_text(json.dumps({"code": done.returncode, "stderr": done.stderr}))
said.with_suffix(".tmp").rename(said)
