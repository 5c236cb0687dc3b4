"""A stand-in reviewer: runs the tests on the commit its prompt names, and gives a verdict.

With REVIEWER_AWAY set it stops without answering, as agents sometimes do: awf sends it one
recovery prompt, and when that brings nothing either the turn is unanswered.
"""

import json
import os
import re
import subprocess
import sys

prompt = sys.stdin.read()
if os.environ.get("REVIEWER_AWAY"):
    print("reviewer: stepped away without answering", file=sys.stderr)
    sys.exit(0)
commit, branch = re.search(r"Review commit (\S+) on (\S+)", prompt).groups()
subprocess.run(["git", "checkout", "-q", branch], check=True)
tests = subprocess.run([sys.executable, "-m", "unittest", "-q"], capture_output=True, text=True)
findings = [] if tests.returncode == 0 else [f"the tests fail on {commit}:\n{tests.stderr[-500:]}"]
verdict = {"approved": not findings, "findings": findings}
sys.exit(subprocess.run(["awf", "answer", json.dumps(verdict)]).returncode)
