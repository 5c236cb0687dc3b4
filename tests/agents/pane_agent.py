"""An exec agent for a terminal pane: reads each message from its terminal (pasted, then Enter
and Ctrl-D), keeps it in AWF_AGENT_DIR as seen-{n}.txt (n counts on across restarts), and then,
by argv[1] (or PANE_MODE, which wins):

answer   answers each message through `awf answer`, and waits for the next
quiet    answers nothing, and waits for the next message
exits N  exits with code N
"""

import json
import os
import subprocess
import sys
from pathlib import Path

mode = os.environ.get("PANE_MODE") or sys.argv[1]
folder = Path(os.environ["AWF_AGENT_DIR"])
Path(folder, "pid").write_text(str(os.getpid()))
while True:
    message = sys.stdin.read()
    seen = len(list(folder.glob("seen-*.txt"))) + 1
    Path(folder, f"seen-{seen}.txt").write_text(message)
    print(f"[read message {seen}: {len(message)} characters]", flush=True)
    if mode == "answer":
        answer = {"branch": "fix/212", "steps": [f"message {seen}", f"on a terminal: {sys.stdin.isatty()}"]}
        done = subprocess.run(["awf", "answer", json.dumps(answer)], capture_output=True, text=True)
        print(done.stdout + done.stderr, flush=True)
    elif mode == "exits":
        print("giving up", flush=True)
        sys.exit(int(sys.argv[2]))
