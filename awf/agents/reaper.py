"""The reaper: runs one process of an unsandboxed agent and, when it ends, ends all it started.

    python -I -S reaper.py [--set NAME=VALUE | --unset NAME]... -- COMMAND ...

Ending an agent's process group misses what left the group: a daemon started with setsid, a
double fork, a new process group. Once such a process's parent exits, the kernel hands it to
init, out of anyone's reach. The reaper makes itself a child subreaper, so whatever COMMAND
starts stays its descendant however it detaches. It runs COMMAND in the reaper's own process
group and session (it makes no new one: a pane's program keeps its terminal and its place in the
foreground) with the same standard streams, and when COMMAND has exited, or the reaper is told to
end (SIGTERM, SIGHUP), it ends every descendant left, SIGTERM then SIGKILL, reaps them, and exits
as COMMAND did: with its exit code, or killed by the same signal.

It starts before every process of an agent with no sandbox (under a sandbox, bubblewrap's pid
namespace does this), so it is standard library only, imports little, and is run with -I -S.
`--set` and `--unset` put back the environment awf gave: Python's start-up sets LC_CTYPE in a
C locale. awf imports this module for `command_under_reaper` and `descendants`.
"""

from __future__ import annotations

import os
import sys
import time

# Neither typing nor signal at run time: they import collections and enum, which would add half
# again to the reaper's start-up, paid by every process of every agent.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from collections.abc import Iterable, Mapping, Sequence
    from typing import NoReturn
else:
    import _signal as signal

GRACE = 1.5  # seconds a descendant has between SIGTERM and SIGKILL: less than awf gives the reaper
# Seconds of SIGKILL after which the reaper exits even so: a process waiting on the kernel (state D,
# a hung mount) dies of its pending SIGKILL only when the wait ends, and the agent's delivery
# must not wait for that.
GIVE_UP = 3.0
POLL = 0.05
PR_SET_CHILD_SUBREAPER = 36  # from <linux/prctl.h>
ENDING = frozenset({signal.SIGTERM, signal.SIGHUP})
# Typed at a terminal, these reach the whole foreground process group, the program included: the
# program decides what they mean, and the reaper stays to end what it leaves.
KEYBOARD = frozenset({signal.SIGINT, signal.SIGQUIT})
WATCHED = frozenset({signal.SIGCHLD, *ENDING, *KEYBOARD})
# Python ignores these from its start-up; the program gets them at their default, as a program
# started by subprocess does.
PYTHON_IGNORES = (signal.SIGPIPE, signal.SIGXFSZ)
# The variable Python's start-up may set (PEP 538), so the one put back.
COERCED = "LC_CTYPE"


def command_under_reaper(command: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """`command`, to be started with `env`, as it runs under the reaper."""
    if not sys.executable:
        return list(command)  # an embedded Python with no interpreter to start: as it is
    return [sys.executable, "-I", "-S", os.path.abspath(__file__), *environment_kept(env), "--", *command]


def environment_kept(env: Mapping[str, str]) -> list[str]:
    """The options that give a program started by one of awf's small Python helpers (this reaper,
    a sandbox's first process) the environment awf gave, and not the one Python's start-up made."""
    return ["--set", f"{COERCED}={env[COERCED]}"] if COERCED in env else ["--unset", COERCED]


def descendants(pid: int) -> list[int]:
    """Every process below `pid`, children before their children, read off /proc."""
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return []  # no /proc: none can be found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: the fields start after the last ')'.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(name))
    found: list[int] = []
    below = list(children.get(pid, []))
    while below:
        one = below.pop(0)
        found.append(one)
        below += children.get(one, [])
    return found


def _signal_each(pids: Iterable[int], number: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, number)
        except (ProcessLookupError, PermissionError):
            pass


class _Watch:
    """COMMAND and what it left: reaped as they exit, ended once COMMAND has gone or on request."""

    def __init__(self, child: int) -> None:
        self.child = child
        self.status: int | None = None  # COMMAND's wait status, once it has exited
        self.ending_since: float | None = None

    def reap(self) -> bool:
        """Collect every descendant that has exited; False once none is left."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return False
            if pid == 0:
                return True
            if pid == self.child:
                self.status = status

    def end(self, told: int | None = None) -> None:
        """Start ending: the signal the reaper was told to end by goes on to COMMAND, and SIGTERM
        to the rest, with SIGCONT so a stopped one gets it. COMMAND is left out of the SIGTERM:
        a program may take a second signal as "quit now, skip the cleanup"."""
        if self.ending_since is not None:
            return
        self.ending_since = time.monotonic()
        if told is not None and self.status is None:
            _signal_each([self.child], told)
        rest = [pid for pid in descendants(os.getpid()) if pid != self.child]
        _signal_each(rest, signal.SIGTERM)
        _signal_each(rest, signal.SIGCONT)

    def run(self) -> int:
        """Until COMMAND and every descendant are gone: its wait status."""
        while self.reap():
            if self.status is not None:
                self.end()
            ending = time.monotonic() - self.ending_since if self.ending_since is not None else 0.0
            if ending >= GRACE + GIVE_UP and self.status is not None:
                break
            if ending >= GRACE:
                _signal_each(descendants(os.getpid()), signal.SIGKILL)
            if self.ending_since is None:
                told = signal.sigwaitinfo(WATCHED).si_signo
            else:  # past GIVE_UP only COMMAND is waited for, and the sweeps come slower
                info = signal.sigtimedwait(WATCHED, POLL if ending < GRACE + GIVE_UP else 1.0)
                told = info.si_signo if info is not None else signal.SIGCHLD
            if told in ENDING:
                self.end(told)
        assert self.status is not None  # COMMAND is a child: the last reap took its status
        return self.status


def _exit_as(status: int) -> int:
    """Exit as COMMAND did: with its code, or by the signal that killed it."""
    if not os.WIFSIGNALED(status):
        return os.waitstatus_to_exitcode(status)
    number = os.WTERMSIG(status)
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # dying of SIGSEGV leaves no core of the reaper
    if number != signal.SIGKILL:
        signal.signal(number, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {number})
    os.kill(os.getpid(), number)
    return 128 + number  # a signal whose default is not to end a process: as a shell says it


def _environment(settings: list[str]) -> None:
    words = iter(settings)
    for word in words:
        value = next(words, "")
        if word == "--set":
            name, _, given = value.partition("=")
            os.environ[name] = given
        elif word == "--unset":
            os.environ.pop(value, None)


def _become_subreaper() -> None:
    import ctypes

    try:
        ctypes.CDLL(None).prctl(ctypes.c_int(PR_SET_CHILD_SUBREAPER), *(ctypes.c_ulong(n) for n in (1, 0, 0, 0)))
    except (OSError, AttributeError):
        pass  # no prctl (not Linux): what stays in the tree below is still ended


def main(argv: list[str]) -> int:
    # Every signal blocked: those watched are taken by sigwaitinfo, and any other sent to the
    # whole group (SIGUSR1, SIGALRM, Ctrl-Z) stays pending, never ending the reaper before its work.
    given = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    split = argv.index("--")
    _environment(argv[:split])
    command = argv[split + 1 :]
    _become_subreaper()
    child = os.fork()
    if child == 0:
        _become(command, given)
    return _exit_as(_Watch(child).run())


def _become(command: list[str], mask: set[int]) -> NoReturn:
    """In the child: COMMAND, with the signals as the reaper was given them.

    fork and exec, not posix_spawn: glibc's leaves its own two real-time signals ignored in the
    program it starts."""
    try:
        for number in PYTHON_IGNORES:
            signal.signal(number, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        os.execvp(command[0], command)
    except BaseException as error:  # whatever it is, the child must never go on as a second reaper
        why = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        os.write(2, f"awf: could not start {command[0]}: {why}\n".encode(errors="replace"))
        os._exit(127 if isinstance(error, FileNotFoundError) else 126)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
