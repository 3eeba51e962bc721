"""Isolation of one case from the next: the forked child a case runs in (its output
read with bounds, its parent-death signal), the rehearsal that warms the fork path,
and what may not happen inside a case (new processes under the sandbox, rebound
builtins)."""

from __future__ import annotations

import array
import contextlib
import fcntl
import os
import signal
import sys
import termios
from collections.abc import Callable
from typing import Any

from cer.process_tree import prctl_function
from cer.wire import plaindata
from cer.worker.call import (
    execute_case,
)
from cer.worker.target import Target


def _rehearsal_target() -> dict[str, Any]:
    return {"output": ["text", 1, 2.5, None, True, {"nested": [0]}]}


_REHEARSAL = plaindata.dumps(
    {
        "name": "rehearsal",
        "case_class": "functional",
        "category": "functional",
        "tags": [],
        "model": "call",
        "input": {},
    }
)


_REHEARSAL_TARGET = Target(_rehearsal_target)
"""Made once in the worker (finding a signature runs much of ``inspect``), inherited."""


def rehearse() -> None:
    """Run the runner's own part of a case once, with nothing of the implementation's.

    A forked process pays for every memory page it first writes to (copy on write),
    and Python writes to every object it touches. A spare does this while it waits
    for its case (while the previous case runs), so that what is left for the case is
    the implementation's own pages. Nothing is written anywhere and no state is kept.
    """
    with contextlib.suppress(Exception):
        execute_case(_REHEARSAL_TARGET, plaindata.loads(_REHEARSAL))


_LD, _JEQ, _JGE, _JSET, _RET, _AND = 0x20, 0x15, 0x35, 0x45, 0x06, 0x54
"""The classic BPF instructions the filters here are written with."""
_ALLOW, _KILL, _ENOSYS = 0x7FFF0000, 0x80000000, 0x00050000 | 38
"""Their answers. An attempt is not refused but ends the process (SIGSYS): a refusal
the runner caused must never look like the implementation's own failure or refusal."""
_ARCHES = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7, "arm64": 0xC00000B7}


def _start(machine: str) -> list[tuple[int, int, int, int]]:
    """The start of every filter here: a call of another architecture, and on x86_64
    an x32 one, ends the process; then the call's number is loaded."""
    arch = _ARCHES[machine]
    program = [(_LD, 0, 0, 4), (_JEQ, 1, 0, arch), (_RET, 0, 0, _KILL), (_LD, 0, 0, 0)]
    if machine == "x86_64":
        program += [(_JGE, 0, 1, 0x40000000), (_RET, 0, 0, _KILL)]  # the x32 system calls
    return program


def confine_memory_case() -> str | None:
    """Keep this process's memory where the kernel's account of it sees it, with a
    seccomp filter: no new process (threads it still may start) and no other program,
    so that this one process is all its case used; no socket but a Unix stream one
    (or a pair), and no ``connect``, so that
    it can neither hand its data to another process over the network (a helper that
    another worker of the run started) nor keep it in the kernel's network buffers,
    which cgroup v1 does not charge; and no ``io_uring``, which opens sockets without
    a system call the filter sees. An attempt kills the process with SIGSYS. Returns
    None when the filter is in place, else why not."""
    if not sys.platform.startswith("linux"):
        return "only Linux can forbid new processes (seccomp)"
    import platform

    machine = platform.machine()
    forks: tuple[int, ...]
    if machine == "x86_64":
        forks, clone, clone3, socket, connect = (57, 58, 59, 322), 56, 435, 41, 42
    elif machine in ("aarch64", "arm64"):
        forks, clone, clone3, socket, connect = (221, 281), 220, 435, 198, 203
    else:
        return f"no seccomp filter is written for {machine}"
    io_uring = (425, 426, 427)  # io_uring_setup, io_uring_enter, io_uring_register
    af_unix = 1
    program = _start(machine)
    # connect: a Unix socket reaches a server by its path (a helper another worker
    # started, which would hold the case's memory for it), and Landlock does not check
    # that path; a socket pair is connected already.
    for number in (*forks, *io_uring, connect):
        program += [(_JEQ, 0, 1, number), (_RET, 0, 0, _KILL)]
    program += [(_JEQ, 0, 1, clone3), (_RET, 0, 0, _ENOSYS)]  # threads fall back to clone
    program += [
        (_JEQ, 0, 7, socket),
        (_LD, 0, 0, 16),  # the socket's family
        (_JEQ, 0, 4, af_unix),
        (_LD, 0, 0, 24),  # its type: a datagram one sends to a path without connect
        (_AND, 0, 0, 0xF),
        (_JEQ, 1, 0, 2),  # SOCK_DGRAM
        (_RET, 0, 0, _ALLOW),
        (_RET, 0, 0, _KILL),
    ]
    program += [
        (_JEQ, 0, 3, clone),
        (_LD, 0, 0, 16),  # the low half of clone's flags
        (_JSET, 1, 0, 0x00010000),  # CLONE_THREAD: a thread, not a process
        (_RET, 0, 0, _KILL),
        (_RET, 0, 0, _ALLOW),
    ]
    return _install(program)


def confine_memory_buffers() -> str | None:
    """Where no memory cgroup counts a measured case, forbid it every pipe and socket
    too (a second filter, once its world is built, which makes a socket of its own):
    the kernel's buffers of the pipes and socket pairs a process fills are counted by
    no resident figure, and 120 MiB held that way once passed a 50 MiB bound at 16
    MiB. An attempt kills the process with SIGSYS. Returns None when the filter is in
    place, else why not."""
    if not sys.platform.startswith("linux"):
        return "only Linux can forbid pipes and sockets (seccomp)"
    import platform

    machine = platform.machine()
    buffers: tuple[int, ...]
    if machine == "x86_64":
        buffers = (22, 293, 53, 41)  # pipe, pipe2, socketpair, socket
    elif machine in ("aarch64", "arm64"):
        buffers = (59, 199, 198)  # pipe2, socketpair, socket
    else:
        return f"no seccomp filter is written for {machine}"
    program = _start(machine)
    for number in buffers:
        program += [(_JEQ, 0, 1, number), (_RET, 0, 0, _KILL)]
    program.append((_RET, 0, 0, _ALLOW))
    return _install(program)


def _install(program: list[tuple[int, int, int, int]]) -> str | None:
    """Put this process under the classic BPF ``program`` (no_new_privs set first);
    None when it is in place, else why not."""
    import ctypes

    class Filter(ctypes.Structure):
        _fields_ = [
            ("code", ctypes.c_ushort),
            ("jt", ctypes.c_ubyte),
            ("jf", ctypes.c_ubyte),
            ("k", ctypes.c_uint32),
        ]

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Filter))]

    filters = (Filter * len(program))(*[Filter(*insn) for insn in program])
    prog = Program(len(program), filters)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError) as exc:
        return f"prctl is not available ({exc})"
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    if prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        return f"PR_SET_NO_NEW_PRIVS failed: {os.strerror(ctypes.get_errno())}"
    if prctl(22, 2, ctypes.addressof(prog), 0, 0) != 0:  # PR_SET_SECCOMP, FILTER
        return f"the seccomp filter was refused: {os.strerror(ctypes.get_errno())}"
    return None


def flush_std_streams() -> None:
    """Flush the standard streams (the current ones and the original ones, each once)."""
    out, err, first_out, first_err = sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__
    for stream in (
        out,
        err if err is not out else None,
        first_out if first_out is not out and first_out is not err else None,
        first_err if first_err is not out and first_err is not err else None,
    ):
        if stream is not None:
            try:  # noqa: SIM105 - cheaper than suppress(), and run twice a case
                stream.flush()
            except BaseException:
                pass


def parent_death_signal_setter() -> Callable[[], None]:
    """A function that asks Linux to kill the calling child if the worker dies, so no
    case outlives its run; resolved once in the worker, called in each child."""
    prctl = prctl_function()
    if prctl is None:
        return lambda: None

    def set_signal() -> None:
        prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG

    return set_signal


def close_quietly(fd: int) -> None:
    """Close ``fd``, already closed or not: a ``try`` rather than ``contextlib.suppress``,
    whose object costs more than the system call, on a path that runs several times a
    case, in the worker and in each case's process."""
    try:  # noqa: SIM105
        os.close(fd)
    except OSError:
        pass


def read_available(fd: int, sink: bytearray, limit: int) -> tuple[bool, int]:
    """Read what ``fd`` has now. Returns (still open, bytes dropped past ``limit``)."""
    try:
        chunk = os.read(fd, 1 << 16)
    except BlockingIOError:
        return True, 0
    except OSError:
        return False, 0
    if not chunk:
        return False, 0
    room = max(0, limit - len(sink))
    sink += chunk[:room]
    return True, len(chunk) - min(room, len(chunk))


def _unread_bytes(fd: int) -> int:
    """How many bytes wait in the pipe ``fd`` belongs to (either end); -1 if unknown."""
    buffer = array.array("i", [0])
    try:
        fcntl.ioctl(fd, _FIONREAD, buffer, True)
    except OSError:
        return -1
    return buffer[0]


class Child:
    """A process forked for one case: a spare waiting for its case, or the case running.

    The worker forks the next case's process while the current case runs (a *spare*),
    so that forking costs no time between cases. A spare runs nothing but the runner's
    own code until it reads its case; it proves it started the case by writing
    :data:`_STARTED` first on its result pipe, and it accepts only a case frame that
    begins with its own random token, chosen after every other case's process was
    forked, so that bytes some other process wrote into its pipe are never run.
    """

    __slots__ = (
        "err_r",
        "input_w",
        "out_r",
        "pid",
        "pidfd",
        "result_r",
        "token",
    )

    def __init__(
        self,
        pid: int,
        token: bytes,
        input_w: int,
        result_r: int,
        out_r: int,
        err_r: int,
        pidfd: int,
    ) -> None:
        self.pid = pid
        self.token = token
        self.input_w = input_w
        self.result_r = result_r
        self.out_r = out_r
        self.err_r = err_r
        self.pidfd = pidfd

    def worker_fds(self) -> tuple[int, ...]:
        """The descriptors the worker holds for this process."""
        return tuple(
            fd
            for fd in (self.input_w, self.result_r, self.out_r, self.err_r, self.pidfd)
            if fd != NO_FD
        )

    def untouched(self) -> bool:
        """Whether this spare is alive, not stopped, and nothing touched its pipes.

        Checked right before a case is handed over, when nothing of the previous case
        is left alive: a spare that anything could have disturbed is replaced.
        """
        try:
            waited, _ = os.waitpid(self.pid, os.WNOHANG | os.WUNTRACED)
        except ChildProcessError:
            return False
        if waited:
            return False
        return all(
            _unread_bytes(fd) == 0 for fd in (self.input_w, self.result_r, self.out_r, self.err_r)
        )

    def close_fds(self) -> None:
        for fd in (self.input_w, self.result_r, self.out_r, self.err_r, self.pidfd):
            if fd != NO_FD:
                close_quietly(fd)
        self.input_w = self.result_r = self.out_r = self.err_r = self.pidfd = NO_FD

    def discard(self) -> None:
        """Kill this process and its group, reap it and close its pipes."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)
        self.close_fds()


NO_FD = -1


_FIONREAD = termios.FIONREAD
