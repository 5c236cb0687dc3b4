"""The system calls a sandboxed agent may not make: a seccomp filter, as bubblewrap's --seccomp takes it.

A sandbox's mounts decide what an agent sees, but a unix socket it can see is a door: connecting
to one (a tmux server's, a Docker daemon's) runs commands outside, and a read-only mount does not
stop a connect. The kernel cannot tell a filter which path a connect names, so the filter refuses
what makes such a connection possible:

- socket(AF_UNIX, ...): no unix socket is made inside, so none connects out (EPERM). socketpair
  stays, for the pipes programs give their children (node's, Python's); of it, SOCK_DGRAM goes,
  since a datagram socket can send to any path;
- io_uring, which can make sockets past this filter (ENOSYS, so programs fall back to plain calls);
- TIOCSTI and TIOCLINUX, which type into the terminal the agent runs in;
- the kernel keyrings (add_key, request_key, keyctl) and perf_event_open, which hold nothing an
  agent needs and much of the kernel's attack surface;
- any call in another ABI (32-bit calls on a 64-bit kernel), which would get round the numbers here.

The filter is classic BPF over `struct seccomp_data`, written out here for x86_64 and aarch64,
the machines awf runs agents on; elsewhere a sandbox is refused rather than left without it.
"""

from __future__ import annotations

import errno
import platform
import struct
from dataclasses import dataclass

# struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6]. Arguments are read
# by their low 32 bits (little endian): the kernel takes each of these as an int.
_NR, _ARCH, _ARGS = 0, 4, 16

# BPF opcodes.
_LD_W_ABS = 0x20
_JEQ = 0x15
_JGE = 0x35
_AND = 0x54
_RET = 0x06

_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000

AF_UNIX = 1
SOCK_DGRAM = 2
_SOCK_TYPE_MASK = 0xF  # the type without SOCK_NONBLOCK and SOCK_CLOEXEC
TIOCSTI = 0x5412
TIOCLINUX = 0x541C
_X32_BIT = 0x40000000


@dataclass(frozen=True)
class _Machine:
    audit_arch: int
    socket: int
    socketpair: int
    ioctl: int
    refused: tuple[int, ...]  # add_key, request_key, keyctl, perf_event_open
    no_such: tuple[int, ...]  # io_uring_setup, io_uring_enter, io_uring_register
    x32: bool = False


_MACHINES = {
    "x86_64": _Machine(0xC000003E, 41, 53, 16, (248, 249, 250, 298), (425, 426, 427), x32=True),
    "aarch64": _Machine(0xC00000B7, 198, 199, 29, (217, 218, 219, 241), (425, 426, 427)),
}


def supported() -> str | None:
    """None where the filter can be made, else why not."""
    machine = platform.machine()
    if machine in _MACHINES or _alias(machine) in _MACHINES:
        return None
    return f"awf's sandbox filter knows x86_64 and aarch64 machines, not {machine}"


def _alias(machine: str) -> str:
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine.lower(), machine)


def program() -> bytes:
    """The filter for this machine, as struct sock_filter[] for bwrap --seccomp."""
    machine = _MACHINES[_alias(platform.machine())]
    code = _Assembler()
    code.load(_ARCH)
    code.jump_unless(machine.audit_arch, "other-abi")
    code.load(_NR)
    if machine.x32:
        code.jump_if_at_least(_X32_BIT, "other-abi")
    code.jump_if(machine.socket, "socket")
    code.jump_if(machine.socketpair, "socketpair")
    code.jump_if(machine.ioctl, "ioctl")
    for number in machine.refused:
        code.jump_if(number, "refuse")
    for number in machine.no_such:
        code.jump_if(number, "no-such")
    code.ret(_ALLOW)

    code.label("socket")
    code.load(_ARGS)  # the domain
    code.jump_if(AF_UNIX, "refuse")
    code.ret(_ALLOW)

    code.label("socketpair")
    code.load(_ARGS + 8)  # the type
    code.mask(_SOCK_TYPE_MASK)
    code.jump_if(SOCK_DGRAM, "refuse")
    code.ret(_ALLOW)

    code.label("ioctl")
    code.load(_ARGS + 8)  # the request
    code.jump_if(TIOCSTI, "refuse")
    code.jump_if(TIOCLINUX, "refuse")
    code.ret(_ALLOW)

    code.label("refuse")
    code.ret(_ERRNO | errno.EPERM)
    code.label("no-such")
    code.ret(_ERRNO | errno.ENOSYS)
    code.label("other-abi")
    code.ret(_ERRNO | errno.ENOSYS)
    return code.assemble()


class _Assembler:
    """Classic BPF with forward jumps to labels; each jump is resolved once every label is placed."""

    def __init__(self) -> None:
        # (code, true target, false target, k): a target is a label's name, or None for the next one.
        self._lines: list[tuple[int, str | None, str | None, int]] = []
        self._labels: dict[str, int] = {}

    def load(self, offset: int) -> None:
        self._lines.append((_LD_W_ABS, None, None, offset))

    def mask(self, bits: int) -> None:
        self._lines.append((_AND, None, None, bits))

    def jump_if(self, value: int, label: str) -> None:
        self._lines.append((_JEQ, label, None, value))

    def jump_unless(self, value: int, label: str) -> None:
        self._lines.append((_JEQ, None, label, value))

    def jump_if_at_least(self, value: int, label: str) -> None:
        self._lines.append((_JGE, label, None, value))

    def ret(self, value: int) -> None:
        self._lines.append((_RET, None, None, value))

    def label(self, name: str) -> None:
        self._labels[name] = len(self._lines)

    def assemble(self) -> bytes:
        out = bytearray()
        for at, (code, true, false, k) in enumerate(self._lines):
            out += struct.pack("<HBBI", code, self._offset(at, true), self._offset(at, false), k)
        return bytes(out)

    def _offset(self, at: int, label: str | None) -> int:
        if label is None:
            return 0
        distance = self._labels[label] - at - 1
        if not 0 <= distance <= 255:
            raise ValueError(f"a jump to {label} of {distance} instructions does not fit classic BPF")
        return distance
