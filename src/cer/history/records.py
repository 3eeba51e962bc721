"""What the history gives back, as frozen values: a recorded run, one case's entries
across runs, flaky and failed cases, approvals, the difference between two runs, and
the errors a history raises."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cer.constraints import CoverageFigures
from cer.engine.options import OTHER_SHARD
from cer.model import Status, Summary

NOT_SELECTED = ("deselected", OTHER_SHARD)
"""The reasons of a skipped case that was only not selected for a run: they prove
nothing about it."""


class HistoryError(Exception):
    """The history database cannot be opened, read or written; the message says why."""


class HistoryUntrusted(HistoryError):
    """The file holds something cer did not make: a trigger, a view, an altered table,
    another application's tables. A trigger could rewrite every run recorded from then
    on, so such a database is neither read nor written; the message says what was found
    and how to start afresh."""

    def __init__(self, path: Path, problems: Sequence[str]) -> None:
        self.path = path
        self.problems = tuple(problems)
        aside = f"{path}.suspect"
        super().__init__(
            f"{path} is not a history cer made: {'; '.join(self.problems)}. cer neither "
            f"reads nor writes it; move it aside (mv {path} {aside}) to start a new "
            "history, or run with --no-history"
        )


def suite_key(suite_path: str | Path) -> str:
    """How a suite file is matched across runs: its absolute, normalised path."""
    return os.path.normcase(os.path.abspath(Path(suite_path)))


@dataclass(frozen=True)
class RunRecord:
    """One recorded run as listed by ``cer history``."""

    run_id: str
    target_module: str
    implementation_id: str
    started_at_ms: int
    completed_at_ms: int
    summary: Summary
    suite_path: str = ""
    suite_hash: str = ""
    format_version: str = ""
    implementation: str = ""
    notes: tuple[str, ...] = ()
    seq: int | None = None
    """Order of recording; None for a run written by another tool (schema tables only)."""
    flaky: tuple[str, ...] = ()
    """Cases flaky under this run's implementation id and suite hash."""
    coverage: CoverageFigures | None = None
    """The run's constraint coverage figures; None when none were recorded."""
    partial: bool = False
    """The run left cases of the suite out (deselected, or in another shard): it ran
    part of the suite. Known for the runs :meth:`History.runs` lists."""
    statement: str | None = None
    """The verdict sentence the run's reports stated (``nonconformant: 12 known
    failures, no regressions, 6 of 7 constraints covered``); None for a run recorded
    without one (by an older cer, or another tool)."""
    baseline: str | None = None
    """The baseline file the run was held against, when it was."""

    @property
    def verdict(self) -> str:
        """What the run's verdict was: its recorded sentence, else the word its
        counts give (never a sentence made up afterwards)."""
        return self.statement or self.summary.verdict

    @property
    def short_id(self) -> str:
        return self.run_id[:8]


@dataclass(frozen=True)
class ApprovalEvent:
    """A person approved a draft: it became a case of the suite.

    ``text_hash`` is the SHA-256 of the approved case's canonical text (see
    :mod:`cer.review.provenance`), so that a later edit of the case can be told apart.
    """

    suite_path: str
    case_name: str
    constraints: tuple[str, ...]
    approver: str
    approved_at_ms: int
    text_hash: str
    from_observation: bool
    observed_from: str | None = None


@dataclass(frozen=True)
class CaseEntry:
    """One case's result in one recorded run, for ``cer history --case``."""

    run_id: str
    started_at_ms: int
    implementation_id: str
    suite_hash: str
    status: str
    reason: str | None
    elapsed_ms: int | None
    flaky: bool
    fail_class: str | None = None
    """The fail class of a failed or errored result; None otherwise, and for a run
    recorded before classes were."""


@dataclass(frozen=True)
class FlakyCase:
    """A case whose status differed between runs of one implementation id on one suite."""

    case_name: str
    implementation_id: str
    suite_hash: str
    statuses: tuple[tuple[str, int], ...]
    """Each status seen, with how many runs reported it (deselected runs not counted)."""


@dataclass(frozen=True)
class FailedCases:
    """The cases that failed or errored in one recorded run, in declared order."""

    run_id: str
    names: tuple[str, ...]


@dataclass(frozen=True)
class CaseChange:
    """One case compared between two runs; None where the case is absent."""

    case_name: str
    before: str | None
    after: str | None
    reason: str | None = None
    """The later run's reason (the earlier one's for a removed case)."""
    before_class: str | None = None
    """The earlier run's fail class of the case (``mismatch``, ``timed_out``, ...);
    None for a pass or a skip, or a run recorded before classes were."""
    after_class: str | None = None
    """The later run's fail class of the case."""

    @property
    def class_changed(self) -> bool:
        """Whether both runs name the case's fail class and they differ."""
        return (
            self.before_class is not None
            and self.after_class is not None
            and self.before_class != self.after_class
        )


@dataclass(frozen=True)
class RunDiff:
    """What changed from ``before`` to ``after``."""

    before: str
    after: str
    regressions: tuple[CaseChange, ...] = ()
    """Passed before, failed or errored now."""
    fixes: tuple[CaseChange, ...] = ()
    """Failed or errored before, passed now."""
    changed: tuple[CaseChange, ...] = ()
    """Any other change of status (to or from skipped, fail to errored, ...), and a
    change of fail class alone (``mismatch -> timed_out``)."""
    new: tuple[CaseChange, ...] = ()
    removed: tuple[CaseChange, ...] = ()
    unchanged: int = 0

    @property
    def is_empty(self) -> bool:
        return not (self.regressions or self.fixes or self.changed or self.new or self.removed)


BAD_STATUSES = frozenset({Status.FAIL.value, Status.ERRORED.value})


StatusRow = tuple[str, str, str | None]
"""(case name, status, reason) of one result, in declared order."""


def diff_statuses(
    before: Sequence[StatusRow],
    after: Sequence[StatusRow],
    *,
    before_id: str = "",
    after_id: str = "",
    classes: tuple[Mapping[str, str], Mapping[str, str]] = ({}, {}),
) -> RunDiff:
    """Compare two runs' results; each list is (name, status, reason) in declared order.
    ``classes`` holds each run's fail classes by case name (:meth:`History.fail_classes`):
    a case whose status stayed but whose class changed is a change too."""
    old = {name: (status, reason) for name, status, reason in before}
    old_classes, new_classes = classes
    seen: set[str] = set()
    regressions: list[CaseChange] = []
    fixes: list[CaseChange] = []
    changed: list[CaseChange] = []
    new: list[CaseChange] = []
    unchanged = 0
    for name, status, reason in after:
        seen.add(name)
        if name not in old:
            new.append(CaseChange(name, None, status, reason, None, new_classes.get(name)))
            continue
        was = old[name][0]
        change = CaseChange(name, was, status, reason, old_classes.get(name), new_classes.get(name))
        if was == status and not change.class_changed:
            unchanged += 1
        elif was == Status.PASS.value and status in BAD_STATUSES:
            regressions.append(change)
        elif was in BAD_STATUSES and status == Status.PASS.value:
            fixes.append(change)
        else:
            changed.append(change)
    removed = [
        CaseChange(name, status, None, reason, old_classes.get(name))
        for name, status, reason in before
        if name not in seen
    ]
    return RunDiff(
        before=before_id,
        after=after_id,
        regressions=tuple(regressions),
        fixes=tuple(fixes),
        changed=tuple(changed),
        new=tuple(new),
        removed=tuple(removed),
        unchanged=unchanged,
    )
