"""Answers wrong first, keeps what `awf answer` said, then answers right (argv[1])."""

import os
import shlex
import subprocess
import sys
from pathlib import Path

sys.stdin.read()
answer = shlex.split(os.environ["AWF_ANSWER_COMMAND"])
wrong = subprocess.run([*answer, '{"branch": 5, "extra": true}'], capture_output=True, text=True)
Path(os.environ["AWF_AGENT_DIR"], "rejected.txt").write_text(f"{wrong.returncode}\n{wrong.stderr}")
right = subprocess.run(answer, input=sys.argv[1], capture_output=True, text=True)
sys.exit(right.returncode)
