"""A stand-in planner: finds the code the issue is about, and prints its plan as JSON.

An exec agent gets its prompt on stdin. It may answer by printing one JSON document as the
last thing on stdout, as this one does, or by running `awf answer` (see builder.py).
"""

import json
import re
import subprocess
import sys

prompt = sys.stdin.read()
issue = re.search(r"#(\d+)", prompt)
number = issue.group(1) if issue else "issue"
# Where does the code treat 1970 as special?
found = subprocess.run(["git", "grep", "-l", "1970", "--", "*.py"], capture_output=True, text=True).stdout.split()
files = [name for name in found if not name.startswith("test_")] or ["the date parser"]
print(f"planner: the issue points at {', '.join(files)}", file=sys.stderr)
print(
    json.dumps(
        {
            "branch": f"fix/{number}",
            "steps": [f"In {files[0]}, stop treating years before 1970 as missing.", "Run the tests."],
        }
    )
)
