"""The processes the supervisor started, and which run started each, so that runs side by
side in one process (several implementations at once, :mod:`cer.engine.side_by_side`)
never end each other's processes.

A run ends every child of the supervisor it did not start and did not have when it
began (:meth:`cer.engine.execution.Execution.end_strays`): the orphans the run's
processes left, adopted by ``cer``. Another run's workers, started meanwhile, are
children of the supervisor too; they are registered here when they start, under the
run of the thread that started them, and a run keeps every live process another run
(or no run: the warm workers) started. Starting a process and ending strays take the
same lock, so a process is never seen before it is registered.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import subprocess

__all__ = ["LOCK", "current", "new_token", "others_alive", "owned_by", "started"]

LOCK = threading.RLock()
"""Held while a process is started and registered, and while strays are found and
ended."""

_started: dict[int, tuple[int, subprocess.Popen[Any]]] = {}
_owner = threading.local()
_tokens = itertools.count(1)


def new_token() -> int:
    """A number for a new run (0 stands for no run: the warm workers)."""
    return next(_tokens)


def current() -> int:
    """The run of this thread (see :func:`owned_by`), 0 outside any."""
    token: int = getattr(_owner, "token", 0)
    return token


@contextmanager
def owned_by(token: int) -> Iterator[None]:
    """Register the processes this thread starts meanwhile under the run ``token``."""
    before = getattr(_owner, "token", 0)
    _owner.token = token
    try:
        yield
    finally:
        _owner.token = before


def started(process: subprocess.Popen[Any]) -> None:
    """Register ``process``, just started by this thread (call it holding :data:`LOCK`)."""
    _started[process.pid] = (getattr(_owner, "token", 0), process)


def others_alive(token: int) -> set[int]:
    """The pids of the live processes that the run ``token`` did not start (call it
    holding :data:`LOCK`); the ended ones are forgotten."""
    alive: set[int] = set()
    for pid, (owner, process) in list(_started.items()):
        if process.poll() is not None:
            del _started[pid]
        elif owner != token:
            alive.add(pid)
    return alive
