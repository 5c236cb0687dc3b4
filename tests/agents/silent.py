"""Works, and stops without answering; keeps each prompt it was given."""

import os
import sys
from pathlib import Path

prompt = sys.stdin.read()
Path(os.environ["AWF_AGENT_DIR"], f"stdin.{os.environ['AWF_DELIVERY']}.txt").write_text(prompt)
print("I looked at it.", file=sys.stderr)
