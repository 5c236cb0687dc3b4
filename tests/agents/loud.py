"""Prints argv[1] numbered lines of filler, then its answer (argv[2]) as the last thing on stdout."""

import sys

sys.stdin.read()
out = sys.stdout
for number in range(int(sys.argv[1])):
    out.write(f"line {number}: checking the code, all of it, again\n")
out.write(sys.argv[2] + "\n")
