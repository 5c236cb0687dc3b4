"""An exec agent that leaves daemons behind: one sleeper for each way a process detaches from its
parent's process group (setsid, a double fork, nohup and disown, a new process group), and one
made with setsid that ignores SIGTERM; each started by a shell that exits at once, and each
carrying `MARKER-{way}` in its argv. Once all five run, by argv[2]:

answer     answers through `awf answer` and exits
stay       answers, then stays (in a pane: until its pane is closed)
ctrl-c     answers once it gets SIGINT (a Ctrl-C typed in its pane), then stays
work       works on, never answering

argv[1] is MARKER. The answer says whether stdin is a terminal and whether the program is in its
terminal's foreground process group. Headless, it reads its prompt from stdin first.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

WAYS = {
    "setsid": "setsid {sleeper} &",
    "double-fork": "( {sleeper} & )",
    "nohup": "nohup {sleeper} >/dev/null 2>&1 & disown",
    "new-group": "set -m; {sleeper} & disown",
    "deaf": "setsid {deaf} &",  # and ignores SIGTERM
}
# Each sleeper touches its file once it runs, so the agent knows it has started.
SLEEP = "import pathlib, sys, time; pathlib.Path(sys.argv[1]).touch(); time.sleep(300)"
DEAF = "import signal; signal.signal(signal.SIGTERM, signal.SIG_IGN); " + SLEEP
SLEEPER = "{python} -c '" + SLEEP + "' {started} {marker}"
DEAF_SLEEPER = "{python} -c '" + DEAF + "' {started} {marker}"

marker, mode = sys.argv[1], sys.argv[2]
folder = Path(os.environ["AWF_AGENT_DIR"])
interrupted = threading.Event()
signal.signal(signal.SIGINT, lambda number, frame: interrupted.set())
terminal = os.isatty(0)
if not terminal:
    sys.stdin.read()

started = []
for way, line in WAYS.items():
    file = folder / f"started-{way}"
    given = {"python": sys.executable, "started": file, "marker": f"{marker}-{way}"}
    sleepers = {"sleeper": SLEEPER.format(**given), "deaf": DEAF_SLEEPER.format(**given)}
    subprocess.run(["bash", "-c", line.format(**sleepers)], stdin=subprocess.DEVNULL, check=True)
    started.append(file)
until = time.monotonic() + 60
while not all(file.exists() for file in started) and time.monotonic() < until:
    time.sleep(0.02)
(folder / "detached").touch()

if mode == "work":
    while True:
        time.sleep(1)
if mode == "ctrl-c":
    while not interrupted.wait(0.1):
        pass
foreground = terminal and os.tcgetpgrp(0) == os.getpgrp()
answer = {"terminal": terminal, "foreground": foreground, "interrupted": interrupted.is_set()}
subprocess.run(["awf", "answer", json.dumps(answer)], check=True, capture_output=True)
if mode == "answer":
    sys.exit(0)
while True:
    time.sleep(1)
