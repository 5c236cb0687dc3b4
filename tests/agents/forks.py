"""Leaves a child working in its process group (its pid in argv[1]), answers, and exits."""

import subprocess
import sys
from pathlib import Path

sys.stdin.read()
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
Path(sys.argv[1]).write_text(str(child.pid))
sys.exit(subprocess.run(["awf", "answer", '{"branch": "fix/1", "steps": []}']).returncode)
