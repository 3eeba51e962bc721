"""What both front ends (``cer run`` and ``cer-tui``) ask of the history around a run:
record it and read back its flaky cases, and find what failed last time, each
implementation found by its id without the hash (:func:`implementation_stem`).

The front ends differ in how they tell the user (a line on stderr, a message on
screen); what they read and write is decided here, once.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cer.engine.kinds import kind_named
from cer.engine.options import RunOptions
from cer.model import RunResult, Status, Suite

if TYPE_CHECKING:
    from cer.constraints import CoverageFigures
    from cer.history.database import History
    from cer.results.conformance import Conformance

__all__ = [
    "LastFailures",
    "failed_last_time",
    "implementation_stem",
    "record_run",
]


_FAILED = (Status.FAIL.value, Status.ERRORED.value)


def record_run(
    history: History,
    run: RunResult,
    suite: Suite,
    coverage: CoverageFigures | None = None,
    verdict: Conformance | None = None,
) -> frozenset[str]:
    """Record ``run`` (with its coverage figures, when they were judged, and the verdict
    sentence its reports stated) and return the cases the history now marks flaky for
    its implementation on this suite. Raises :class:`~cer.history.records.HistoryError` (and
    :class:`~cer.history.records.HistoryUntrusted`) as the history does."""
    history.record(run, suite, coverage, verdict)
    return history.flaky_names(run.implementation_id, run.suite_hash or suite.content_hash)


def implementation_stem(options: RunOptions) -> str:
    """An implementation id without its hash, as the runner forms it for ``options``
    (``MODULE:ATTR``; ``cmd:`` or ``cmd-per-case:`` and the command's words): what
    finds an implementation's own runs in the history whatever its code is today."""
    kind = kind_named(options.kind)
    if kind.python:
        return kind.id_stem(options.impl)
    try:
        return kind.id_stem(shlex.join(shlex.split(options.impl)))
    except ValueError:
        return kind.id_stem(options.impl)


@dataclass(frozen=True)
class LastFailures:
    """The cases that failed or errored in the newest recorded run of each
    implementation, with the short ids of the runs read; ``missing`` is the first
    implementation that has no recorded run (then ``names`` is not meaningful)."""

    names: frozenset[str]
    run_ids: tuple[str, ...]
    missing: RunOptions | None = None


def failed_last_time(
    history: History, suite_path: Path, implementations: Sequence[RunOptions]
) -> LastFailures:
    """What failed last time, over every implementation (matched by the implementation
    as given and the kind of its id), so that each reruns the same cases and a matrix
    stays complete. Raises :class:`~cer.history.records.HistoryError` as the history does."""
    names: set[str] = set()
    run_ids: list[str] = []
    for options in implementations:
        record = history.newest_run_of(
            options.impl, implementation_stem(options), suite_path=suite_path
        )
        if record is None:
            return LastFailures(frozenset(names), tuple(run_ids), missing=options)
        run_ids.append(record.short_id)
        names.update(
            name for name, status, _ in history.statuses(record.run_id) if status in _FAILED
        )
    return LastFailures(frozenset(names), tuple(run_ids))
