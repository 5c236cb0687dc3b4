"""Writes the plan its prompt asks for, and answers with the plan's path through awf answer."""

import json
import re
import subprocess
import sys
from pathlib import Path

doc = re.search(r"in (docs/\S+\.md)", sys.stdin.read())[1]
Path(doc).parent.mkdir(exist_ok=True)
Path(doc).write_text("1. Do the work.\n")
subprocess.run(["awf", "answer", json.dumps({"doc": doc})], check=True)
