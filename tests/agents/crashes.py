"""Starts, then breaks."""

import sys

sys.stdin.read()
print("loading the model", file=sys.stderr)
print("error: out of memory", file=sys.stderr)
sys.exit(3)
