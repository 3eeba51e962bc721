"""Processes and their trees, for both sides of the pipe: find a process's children,
end a process with its tree, adopt orphans, end what is left, name a signal.

The worker uses :func:`kill_strays` and :func:`kill_process_tree` after each case; the
supervisor uses :func:`end_process` for one process it started (a worker, a command
harness, a per-case command) and :func:`end_strays` for what a run left. This module
imports nothing from either side (and not ``subprocess``, which the worker never loads).

A worker adopts what its cases leave behind (it is a Linux child subreaper) and kills
it after each case. That is not enough when the worker itself goes: a case that kills
its worker leaves the worker's adopted orphans (a daemon in a session of its own) to
the next subreaper above, and a command harness or a per-case command that
double-forks has no worker above it at all. So the supervisor becomes a subreaper too
(:func:`adopt_orphans`, done by the ``cer`` and ``cer-tui`` programs), and a run ends
every child of the supervisor it did not have when it started, with everything below
it (:func:`end_strays`), whenever a worker is lost and when the run ends, however it
ends. A process can leave a process group or a session, but not its subreaper.

Library callers (``run_suite`` in another program) are not made subreapers: their
process may have children of its own, and an adopted orphan would become their child.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import subprocess

__all__ = ["adopt_orphans", "adopting", "children", "end_process", "end_strays"]

_PR_SET_CHILD_SUBREAPER = 36
_ROUNDS = 100
"""Bound on the rounds of :func:`end_strays`: each round ends every stray found, and
what they had started is adopted and found in the next round."""

_adopting = False


def adopt_orphans() -> bool:
    """Make this process adopt the orphans of every process below it (Linux's
    ``PR_SET_CHILD_SUBREAPER``); False where that is not available."""
    global _adopting
    prctl = prctl_function()
    if prctl is None:
        return False
    if prctl(_PR_SET_CHILD_SUBREAPER, 1) != 0:
        return False
    _adopting = True
    return True


def adopting() -> bool:
    """Whether this process adopts orphans (see :func:`adopt_orphans`)."""
    return _adopting


def children() -> frozenset[int]:
    """The direct children of this process (on Linux; elsewhere none are found)."""
    return frozenset(children_of(os.getpid()))


def end_process(process: subprocess.Popen[Any]) -> None:
    """SIGKILL a process started in a session of its own (a worker, a command
    harness, a per-case command), everything below it and its process group, and
    reap it."""
    if process.poll() is None:  # still ours: its pid cannot have been reused
        kill_process_tree(process.pid)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    import subprocess  # not at the top: the worker imports this module, never subprocess

    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5)


def end_strays(keep: Collection[int]) -> int:
    """Kill every child of this process that is not in ``keep``, with every process
    below it, and reap it; returns how many children were ended.

    Does nothing unless this process adopts orphans: only then is every child not in
    ``keep`` known to come from the run (a worker's tree, a case's daemon).
    """
    if not _adopting:
        return 0
    ended = 0
    for _ in range(_ROUNDS):
        strays = [pid for pid in children() if pid not in keep]
        if not strays:
            break
        for pid in strays:
            kill_process_tree(pid)
        for pid in strays:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        ended += len(strays)
    return ended


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def prctl_function() -> Callable[[int, int], Any] | None:
    """Linux's prctl(2), or None where it is not available."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl: Callable[[int, int], Any] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return prctl


def become_subreaper() -> None:
    """Adopt the orphans of every process below this one (PR_SET_CHILD_SUBREAPER), so
    that a process a case started in a session of its own stays findable and killable."""
    prctl = prctl_function()
    if prctl is not None:
        prctl(36, 1)


def read_file(path: str) -> bytes:
    """The whole content of a (small) file, in as few system calls as possible: this
    runs twice per case."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def children_of(pid: int) -> list[int]:
    """The direct children of ``pid`` (on Linux; elsewhere none are found)."""
    found: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tids:
        try:
            listed = read_file(f"/proc/{pid}/task/{tid}/children")
            found.extend(int(word) for word in listed.split())
        except FileNotFoundError:
            if not os.path.exists(f"/proc/{pid}/task/{tid}"):
                continue  # the thread ended meanwhile
            return _children_by_scan(pid)
        except (OSError, ValueError):
            return _children_by_scan(pid)
    return found


def _children_by_scan(pid: int) -> list[int]:
    """The direct children of ``pid``, found by reading every /proc/PID/stat."""
    found: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
            ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid:
            found.append(int(entry))
    return found


def kill_strays(keep: frozenset[int] = frozenset()) -> int:
    """Kill and reap every child of this process not in ``keep``; returns how many.

    Called by the worker after each case, with ``keep`` the children it had before the
    case (helpers the implementation started when it was imported): the case's own
    process has been reaped by then, so any other child is something the case started
    that outlived it (adopted here because the worker is a subreaper). Their children
    are adopted in turn and killed in the next round.
    """
    me = os.getpid()
    killed = 0
    for _ in range(1000):
        strays = [pid for pid in children_of(me) if pid not in keep]
        if not strays:
            break
        for pid in strays:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for pid in strays:
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)
        killed += len(strays)
    return killed


def kill_process_tree(root: int) -> None:
    """SIGKILL ``root`` and every process below it.

    Everything is stopped first (a stopped process cannot fork), walking the tree again
    until a walk finds nothing new, then killed, so that nothing escapes by forking
    while the tree is being taken down.
    """
    stopped: list[int] = []
    known: set[int] = set()
    for _ in range(100):
        found_new = False
        stack = [root]
        visited: set[int] = set()
        while stack:
            pid = stack.pop()
            if pid in visited:
                continue
            visited.add(pid)
            if pid not in known:
                known.add(pid)
                stopped.append(pid)
                found_new = True
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGSTOP)
            stack.extend(children_of(pid))
        if not found_new:
            break
    for pid in stopped:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
