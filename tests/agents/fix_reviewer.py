"""Approves, unless REVIEWER_AWAY is set: then it stops without answering, as agents do."""

import json
import os
import subprocess
import sys

sys.stdin.read()
if os.environ.get("REVIEWER_AWAY"):
    print("(the reviewer wandered off)", file=sys.stderr)
    sys.exit(0)
subprocess.run(["awf", "answer", json.dumps({"approved": True, "findings": []})], check=True)
