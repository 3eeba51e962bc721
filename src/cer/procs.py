"""The supervisor's hold on every process of a run: end a process with its tree,
adopt orphans, and end what is left.

:func:`end_process` ends one process the supervisor started (a worker, a command
harness, a per-case command) with everything below it; the process-tree walking
itself is shared with the worker (``cer.worker.main.kill_process_tree``, which the worker
uses after each case).

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
import subprocess
from collections.abc import Collection
from typing import Any

from cer.worker.main import _children, _prctl, kill_process_tree

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
    prctl = _prctl()
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
    return frozenset(_children(os.getpid()))


def end_process(process: subprocess.Popen[Any]) -> None:
    """SIGKILL a process started in a session of its own (a worker, a command
    harness, a per-case command), everything below it and its process group, and
    reap it."""
    if process.poll() is None:  # still ours: its pid cannot have been reused
        kill_process_tree(process.pid)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
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
