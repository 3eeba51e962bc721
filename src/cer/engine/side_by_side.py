"""Several implementations run at the same time, sharing one budget of workers.

A matrix (several ``--impl``) runs every implementation over the same suite. One after
another, a run of three implementations takes three times as long as one even on a
machine with CPUs to spare. Here each implementation's run is an ordinary
:func:`~cer.engine.runner.run_suite` in a thread of its own, and the ``-j`` budget is
shared out: with at least as many workers as implementations, each run gets its share
(a command implementation runs on one, the rest go to the Python ones); with fewer,
that many runs go at once, one worker each, and the next starts when one ends.

Every run is exactly the run it would be alone: its own workers, its own deadlines, one
result per case in declared order, so the results do not depend on what runs beside
it (times aside). Its events reach the caller from the calling thread only, tagged
with the implementation's index, and each finished run is handed over as soon as it
ends. The runs never end each other's processes (:mod:`cer.engine.spawned`). A Python
implementation's run is handed over with the installed distribution its module belongs
to, if any (:mod:`cer.engine.python.distribution`), for the matrix to name it by.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from cer.engine.kinds import kind_named
from cer.engine.options import RunCancelled, RunOptions, resolve_jobs, search_paths
from cer.engine.python.distribution import origin_of
from cer.engine.python.workerproc import WarmWorkers
from cer.engine.runner import run_suite
from cer.events import RunEvent
from cer.model import RunResult, Suite

__all__ = ["run_side_by_side", "share_jobs"]

_POLL = 0.1
"""How often the calling thread looks up from the queue (a signal is handled then)."""


def share_jobs(budget: int, implementations: Sequence[RunOptions]) -> tuple[int, list[int]]:
    """How many runs go at once and the workers of each: ``budget`` workers shared
    over ``implementations``; a command implementation always takes one."""
    count = len(implementations)
    if budget < count:
        return budget, [1] * count
    python = [i for i, options in enumerate(implementations) if kind_named(options.kind).python]
    jobs = [1] * count
    spare = budget - count
    for turn in range(spare):
        if not python:
            break
        jobs[python[turn % len(python)]] += 1
    return count, jobs


def run_side_by_side(
    suite: Suite,
    implementations: Sequence[RunOptions],
    *,
    on_event: Callable[[int, RunEvent], None] | None = None,
    on_finished: Callable[[int, RunResult], None] | None = None,
    warm: WarmWorkers | None = None,
) -> list[RunResult]:
    """Run ``suite`` against every implementation, several at once within the first
    one's ``jobs`` budget; returns the runs in the order given.

    ``on_event(index, event)`` and ``on_finished(index, run)`` are called from the
    calling thread only. ``warm`` goes to the first implementation's run. Any exception
    of a run (or a KeyboardInterrupt in the calling thread) cancels the others, waits
    for them to end their processes, and is raised here.
    """
    count = len(implementations)
    at_once, jobs = share_jobs(resolve_jobs(implementations[0].jobs), implementations)
    cancel = threading.Event()
    messages: queue.SimpleQueue[tuple[int, str, Any]] = queue.SimpleQueue()
    runs: list[RunResult | None] = [None] * count
    threads: list[threading.Thread] = []

    def work(index: int) -> None:
        options = replace(implementations[index], jobs=jobs[index])
        try:
            run = run_suite(
                suite,
                options,
                on_event=lambda event: messages.put((index, "event", event)),
                cancel=cancel,
                warm=warm if index == 0 else None,
            )
            if run.origin is None and kind_named(options.kind).python:
                origin, note = origin_of(options.impl, search_paths(suite, options), options.dist)
                run = replace(run, origin=origin, notes=(*run.notes, *((note,) if note else ())))
        except BaseException as exc:  # handed to the calling thread, raised there
            messages.put((index, "error", exc))
        else:
            messages.put((index, "done", run))

    waiting = list(range(count))
    running = 0
    failure: BaseException | None = None
    try:
        while waiting or running:
            while waiting and running < at_once and failure is None:
                thread = threading.Thread(
                    target=work, args=(waiting.pop(0),), name="cer-run", daemon=True
                )
                threads.append(thread)
                thread.start()
                running += 1
            if not running:
                break
            try:
                index, kind, payload = messages.get(timeout=_POLL)
            except queue.Empty:
                continue
            if kind == "event":
                if on_event is not None and failure is None:
                    on_event(index, payload)
                continue
            running -= 1
            if kind == "error":
                if failure is None and not isinstance(payload, RunCancelled):
                    failure = payload
                    cancel.set()
                continue
            runs[index] = payload
            if on_finished is not None and failure is None:
                on_finished(index, payload)
    except BaseException:
        cancel.set()
        for thread in threads:
            thread.join()
        raise
    if failure is not None:
        for thread in threads:
            thread.join()
        raise failure
    for thread in threads:
        thread.join()
    return [run for run in runs if run is not None]
