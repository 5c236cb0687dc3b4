"""Prints what it did, then its answer (argv[1]) as the last thing on stdout."""

import sys

sys.stdin.read()
print("Read the code; the bug is in parse_date.")
print(sys.argv[1])
