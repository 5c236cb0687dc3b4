"""Builds the plan its prompt names, and answers with the branch; with BUILDER_AWAY set it stops
without answering, as agents sometimes do."""

import json
import os
import re
import subprocess
import sys

doc = re.search(r"Implement (\S+) on", sys.stdin.read())[1]
if os.environ.get("BUILDER_AWAY"):
    sys.exit(0)
branch = doc.removeprefix("docs/").removesuffix(".md").lower()
subprocess.run(["awf", "answer", json.dumps({"branch": branch, "summary": f"built {doc}"})], check=True)
