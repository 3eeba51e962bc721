"""The system calls the sandbox refuses that Landlock has no rule for: a seccomp filter.

Landlock confines files, TCP, signals and tracing; it says nothing of the calls that
act on the machine or on other processes without a path. The implementation's side
(the worker once it is confined, every case process it forks, a command harness and a
per-case command through the launcher of :mod:`cer.sandbox.landlock`) therefore also runs
under this filter, which refuses with ``EPERM`` (the call fails, the process goes on):

- ``prlimit64`` on any process but the caller (pid 0): changing the supervisor's CPU or
  file-size limit would let the kernel kill it, or keep its record from being written;
  ``setrlimit`` on itself stays allowed (glibc sends it as ``prlimit64(0, …)``, so
  naming itself by its pid is refused too);
- the clock and time setters (``clock_settime``, ``settimeofday``, ``adjtimex``,
  ``clock_adjtime``), which bend what the supervisor measures;
- ``ptrace``, ``process_vm_readv``/``writev``, ``kcmp``: reading or comparing other
  processes;
- ``mknod``/``mknodat``: device nodes;
- the keyrings (``add_key``, ``request_key``, ``keyctl``), ``perf_event_open``,
  ``bpf``, ``open_by_handle_at``;
- namespaces and mounts: ``unshare``, ``setns``, ``mount``, ``umount2``,
  ``pivot_root``, the new mount API (``fsopen``, ``fsconfig``, ``fsmount``,
  ``fspick``, ``move_mount``, ``open_tree``, ``open_tree_attr``, ``mount_setattr``),
  and ``clone`` with any ``CLONE_NEW*`` flag. ``clone3``, whose flags sit in memory a
  filter cannot read, answers ``ENOSYS``, so that the C library falls back to
  ``clone``;
- on x86_64, every x32 call, and on either machine any call of another architecture.

The program is assembled by hand (classic BPF, as the kernel reads it) once per
process that installs it, for x86_64 and aarch64; elsewhere :func:`install` says why
not. Like :mod:`cer.sandbox.landlock`, this module imports nothing but the standard library
and nothing of ``cer``: the launcher loads it by path.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys

__all__ = ["BLOCKED", "install", "program"]

_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7, "arm64": 0xC00000B7}
_X32_BIT = 0x40000000

BLOCKED: dict[str, tuple[int, int]] = {
    # name: (x86_64, aarch64); -1 where the machine has no such call
    "ptrace": (101, 117),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
    "kcmp": (312, 272),
    "mknod": (133, -1),
    "mknodat": (259, 33),
    "add_key": (248, 217),
    "request_key": (249, 218),
    "keyctl": (250, 219),
    "perf_event_open": (298, 241),
    "bpf": (321, 280),
    "open_by_handle_at": (304, 265),
    "unshare": (272, 97),
    "setns": (308, 268),
    "mount": (165, 40),
    "umount2": (166, 39),
    "pivot_root": (155, 41),
    "open_tree": (428, 428),
    "move_mount": (429, 429),
    "fsopen": (430, 430),
    "fsconfig": (431, 431),
    "fsmount": (432, 432),
    "fspick": (433, 433),
    "mount_setattr": (442, 442),
    "open_tree_attr": (467, 467),
    "clock_settime": (227, 112),
    "settimeofday": (164, 170),
    "adjtimex": (159, 171),
    "clock_adjtime": (305, 266),
}
"""Every call refused outright, with its number on each machine."""

_PRLIMIT64 = (302, 261)
_CLONE = (56, 220)
_CLONE3 = 435
_SECCOMP = (317, 277)
_CLONE_NEW = 0x7E020000
"""CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID and NEWNET (CLONE_NEWTIME
shares its bit with clone's exit signal and is only taken by unshare and clone3)."""

_LD_W_ABS = 0x20
_JEQ = 0x15
_JGE = 0x35
_JSET = 0x45
_RET = 0x06
_ALLOW = 0x7FFF0000
_EPERM = 0x00050000 | 1
_ENOSYS = 0x00050000 | 38
_NR, _ARCH, _ARG0 = 0, 4, 16  # offsets in struct seccomp_data (arg0's low half)


def _machine() -> str:
    return os.uname().machine


def program(machine: str | None = None) -> bytes | None:
    """The filter as the kernel reads it (struct sock_filter after struct sock_filter),
    for ``machine`` (this one by default); None where no filter is written for it."""
    machine = machine or _machine()
    arch = _AUDIT_ARCH.get(machine)
    if arch is None:
        return None
    column = 0 if arch == 0xC000003E else 1
    code: list[tuple[int, int, int, int]] = [
        (_LD_W_ABS, 0, 0, _ARCH),
        (_JEQ, 1, 0, arch),
        (_RET, 0, 0, _EPERM),
        (_LD_W_ABS, 0, 0, _NR),
    ]
    if column == 0:
        code += [(_JGE, 0, 1, _X32_BIT), (_RET, 0, 0, _EPERM)]
    for numbers in BLOCKED.values():
        if numbers[column] >= 0:
            code += [(_JEQ, 0, 1, numbers[column]), (_RET, 0, 0, _EPERM)]
    code += [(_JEQ, 0, 1, _CLONE3), (_RET, 0, 0, _ENOSYS)]
    code += [
        (_JEQ, 0, 4, _PRLIMIT64[column]),
        (_LD_W_ABS, 0, 0, _ARG0),  # the pid: 0 is the caller itself
        (_JEQ, 1, 0, 0),
        (_RET, 0, 0, _EPERM),
        (_RET, 0, 0, _ALLOW),
    ]
    code += [
        (_JEQ, 0, 3, _CLONE[column]),
        (_LD_W_ABS, 0, 0, _ARG0),  # clone's flags (their low half holds every CLONE_NEW*)
        (_JSET, 0, 1, _CLONE_NEW),
        (_RET, 0, 0, _EPERM),
        (_RET, 0, 0, _ALLOW),
    ]
    return b"".join(struct.pack("=HBBI", *insn) for insn in code)


class _Program(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


def install(code: bytes | None = None) -> str | None:
    """Put this process (every thread of it) and everything it starts from now on under
    the filter; None when it is in place, else why not. The caller has set
    ``no_new_privs`` (Landlock's confinement does), or holds CAP_SYS_ADMIN."""
    if not sys.platform.startswith("linux"):
        return "seccomp is a Linux feature"
    if code is None:
        code = program()
    if code is None:
        return f"no seccomp filter is written for {_machine()}"
    column = 0 if _AUDIT_ARCH[_machine()] == 0xC000003E else 1
    buffer = ctypes.create_string_buffer(code, len(code))
    prog = _Program(len(code) // 8, ctypes.addressof(buffer))
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError as exc:
        return f"the C library is not available ({exc})"
    libc.syscall.restype = ctypes.c_long
    # seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog): every thread.
    result = libc.syscall(
        ctypes.c_long(_SECCOMP[column]), ctypes.c_uint(1), ctypes.c_uint(1), ctypes.byref(prog)
    )
    if result != 0:
        return f"the seccomp filter was refused: {os.strerror(ctypes.get_errno())}"
    return None
