"""Answers with the turn it is in and what it noted on the turns before, through its agent's folder."""

import json
import os
import subprocess
import sys
from pathlib import Path

sys.stdin.read()
notes = Path(os.environ["AWF_AGENT_DIR"], "notes.txt")
seen = notes.read_text().split() if notes.exists() else []
notes.write_text(" ".join([*seen, os.environ["AWF_TURN"]]))
answer = {"turn": int(os.environ["AWF_TURN"]), "seen": seen}
sys.exit(subprocess.run(["awf", "answer", json.dumps(answer)]).returncode)
