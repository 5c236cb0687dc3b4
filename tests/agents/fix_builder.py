"""Builds on the branch its prompt names, and answers with the commit through awf answer."""

import json
import subprocess
import sys

sys.stdin.read()
subprocess.run(["awf", "answer", json.dumps({"commit": "4be1c07"})], check=True)
