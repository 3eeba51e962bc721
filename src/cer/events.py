"""What a run reports while it happens, for shells that show progress (CLI, TUI).

A run calls its ``on_event`` callback with these values, from the thread that runs it,
in this order: ``RunStarted``; then ``ImplementationLoaded`` or ``ImplementationFailed``;
then one ``CaseFinished`` per case (in completion order; ``result.position`` tells where
the case sits in declared order); then ``RunFinished``. ``ImplementationLoaded`` comes
again among the ``CaseFinished`` events whenever a case loaded files the id did not
cover yet (a lazy import): it then holds the grown id and every file so far.
"""

from __future__ import annotations

from dataclasses import dataclass

from cer.model import CaseResult, RunConditions, RunResult, Suite


@dataclass(frozen=True)
class RunStarted:
    run_id: str
    suite: Suite
    implementation: str
    total: int
    conditions: RunConditions | None = None
    """What the run runs under, as known when it starts (how memory is measured is
    known only once a case asked about it: the finished run's conditions say it)."""


@dataclass(frozen=True)
class ImplementationLoaded:
    implementation_id: str
    source_files: tuple[str, ...]
    """Files the implementation's import (and, when it comes again, its cases) loaded
    from outside the standard library (installed packages included), as checked and
    hashed by the supervisor: the files the implementation id covers, and what a
    watcher should watch."""


@dataclass(frozen=True)
class ImplementationFailed:
    """The implementation could not be imported; every case will be errored."""

    reason: str
    traceback: str


@dataclass(frozen=True)
class CaseFinished:
    result: CaseResult
    done: int
    total: int


@dataclass(frozen=True)
class RunFinished:
    run: RunResult


RunEvent = RunStarted | ImplementationLoaded | ImplementationFailed | CaseFinished | RunFinished
