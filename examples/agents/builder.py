"""A stand-in builder: makes the change on the branch its prompt names, commits, and answers
with the commit through `awf answer`, as any agent can from its shell."""

import json
import re
import subprocess
import sys
from pathlib import Path

prompt = sys.stdin.read()
branch = re.search(r"^On (\S+), carry out:", prompt, re.MULTILINE).group(1)
git = ["git", "-c", "user.name=awf example builder", "-c", "user.email=builder@example.invalid"]
subprocess.run([*git, "checkout", "-q", "-B", branch], check=True)
source = Path("dates.py")
source.write_text(source.read_text().replace("return year if year >= 1970 else None", "return year"))
subprocess.run([*git, "commit", "-q", "-am", "Parse years before 1970"], check=True)
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
answer = {"commit": commit, "summary": "dates.py keeps years before 1970"}
# `awf` on the agent's PATH is the awf that runs the workflow; it checks the answer first.
taken = subprocess.run(["awf", "answer", json.dumps(answer)])
sys.exit(taken.returncode)
