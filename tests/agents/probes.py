"""Tries what a sandbox must refuse and what it must let through; prints `PROBES {json}`.

argv: OUTSIDE_FILE HOME_DIR KEY_FILE OTHER_PORT MODEL_PORT [--answer]. Each probe is "ok" or
"refused: why". With --answer (an exec agent), it reads its prompt and answers the results
through `awf answer`.
"""

import json
import os
import socket
import subprocess
import sys


def tried(action):
    try:
        action()
    except OSError as error:
        return f"refused: {error.strerror or error}"
    return "ok"


def write(path):
    with open(path, "w") as file:
        file.write("written by the agent\n")


def read(path):
    with open(path) as file:
        file.read()


def connect(port):
    socket.create_connection(("127.0.0.1", int(port)), timeout=5).close()


outside, home, key, other, model = sys.argv[1:6]
if "--answer" in sys.argv:
    sys.stdin.read()
results = {
    "write_cwd": tried(lambda: write("made-by-agent.txt")),
    "write_outside": tried(lambda: write(outside)),
    "write_home": tried(lambda: write(os.path.join(home, "made-by-agent.txt"))),
    "read_key": tried(lambda: read(key)),
    "connect_other": tried(lambda: connect(other)),
    "connect_model": tried(lambda: connect(model)),
}
print("PROBES " + json.dumps(results, sort_keys=True), flush=True)
if "--answer" in sys.argv:
    sys.exit(subprocess.run(["awf", "answer", json.dumps(results)]).returncode)
