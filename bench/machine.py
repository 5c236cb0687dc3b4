"""What the numbers were measured on: CPUs, memory, the disk under the scratch folder, versions."""

from __future__ import annotations

import os
import platform
import sys
from importlib import metadata
from pathlib import Path


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 1024 / 1024:.0f} GiB"
    except (OSError, ValueError):
        pass
    return "unknown"


def _disk(path: Path) -> str:
    """The device and file system `path` is on, as /proc/self/mounts names them, and its kind."""
    best = ("", "unknown", "unknown", "")
    try:
        for line in Path("/proc/self/mounts").read_text().splitlines():
            device, mount, kind, options = line.split()[:4]
            if str(path).startswith(mount) and len(mount) >= len(best[0]):
                best = (mount, device, kind, options)
    except (OSError, ValueError):
        return "unknown"
    mount, device, kind, options = best
    rotational = ""
    name = Path(device).name
    flag = Path(f"/sys/block/{name}/queue/rotational")
    if flag.exists():
        rotational = ", rotational" if flag.read_text().strip() == "1" else ", non-rotational"
    return f"{device} ({kind}{rotational}) mounted on {mount}, {options.split(',')[0]}"


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def _editable_note() -> list[str]:
    """An editable install adds an import hook that every Python of the environment loads at
    start-up, `python -c pass` included: it inflates the start-up baseline and flatters ratios."""
    if not any(name.startswith("__editable___awf") for name in sys.modules):
        return []
    return [
        "note: awf is installed editable here; every Python start pays for its import hook, "
        "so start-up ratios read lower than with `pip install .`"
    ]


def describe(work: Path) -> list[str]:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return [
        f"cpus: {cpus} ({_cpu_model()}), memory: {_memory()}",
        f"disk: {_disk(work.resolve())}",
        f"python {platform.python_version()} on {platform.system()} {platform.release()}",
        "awf {}, dbos {}, langgraph {}, langgraph-checkpoint-sqlite {}".format(
            *(_version(name) for name in ("awf", "dbos", "langgraph", "langgraph-checkpoint-sqlite"))
        ),
        *_editable_note(),
    ]
