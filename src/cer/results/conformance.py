"""The verdict as every surface states it: the run's word, what the baseline makes of
its failures, how much of the module's constraints the suite covers, and how much of
the suite the run stands for.

:func:`conformance_of` is the one place the verdict word is decided, and every surface
(the summary line, the JSON results and their ``summary.verdict``, the JSON-lines
trailer, the manifest, the JUnit, TAP, GitHub, HTML and Markdown reports, the Action's
output, cer-tui, the pytest plugin and the history) shows :attr:`Conformance.word` and
:attr:`Conformance.statement`:

    nonconformant: 12 known failures, no regressions, 6 of 7 constraints covered
    passed, coverage incomplete: 1 of 3 constraints without a case
    incomplete, selection passed: 12 of 70 cases
    shard 1/3: passed, 24 of 70 cases; cer merge of every shard gives the run's verdict

The word is one of :data:`WORDS`:

- ``conformant`` only when every case of the whole suite ran and passed and, with a
  module document, its coverage is complete (every constraint has a case, none needs
  repair, no ``verifies`` names an unknown constraint, the constraint block is well
  formed and declares at least one constraint);
- ``passed`` when every case the run answers for passed but that does not make the
  whole conformant: the coverage is incomplete, or the run is one shard of several (or
  a selection that its front end ends with 0: the pytest plugin under ``-k``);
- ``incomplete`` when nothing failed but a case was skipped, or the run ran a selection
  of the suite (``--case``, ``--category``, ``--failed``, ...);
- ``nonconformant`` when a case failed or errored (a known failure is still one).

A shard answers for its own cases only: its word is made from them, and its sentence
begins ``shard I/N``; only ``cer merge`` of every shard gives the run's verdict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from cer.constraints import Coverage
from cer.engine.options import OTHER_SHARD, STOPPED
from cer.model import CaseResult, RunResult, Status, Summary

if TYPE_CHECKING:  # a run without --baseline never imports the baseline
    from cer.results.baseline import BaselineCheck

__all__ = [
    "DESELECTED",
    "UNREADABLE",
    "WORDS",
    "Conformance",
    "CoverageCount",
    "Scope",
    "Word",
    "conformance_of",
    "scope_of",
    "word_of",
]

Word = Literal["conformant", "passed", "incomplete", "nonconformant"]
WORDS: tuple[Word, ...] = ("conformant", "passed", "incomplete", "nonconformant")

DESELECTED = "deselected"
"""The reason of every case a selection left out (:mod:`cer.engine.plan`)."""

_SHARD_NOTE = re.compile(r"^shard (\d+)/(\d+):")


@dataclass(frozen=True)
class CoverageCount:
    """The coverage figures the verdict states."""

    covered: int
    total: int
    needs_repair: int = 0
    """Constraints no case covers and no complete draft could (see :mod:`cer.review.derive`)."""
    unknown: int = 0
    """``verifies`` entries naming no declared constraint."""
    problems: int = 0
    """What is wrong in the module document's constraint block (a malformed bullet, no
    block, a duplicate name), or 1 when the document could not be read at all."""
    unreadable: bool = False
    """The module document exists but could not be read (:data:`UNREADABLE`)."""

    @classmethod
    def of(cls, coverage: Coverage, needs_repair: int = 0) -> CoverageCount:
        return cls(
            coverage.covered,
            coverage.total,
            needs_repair,
            len(coverage.unknown),
            len(coverage.problems),
        )

    @property
    def complete(self) -> bool:
        """At least one constraint, every one covered, none needing repair, no unknown
        name and nothing wrong in the block: "0 of 0" is not complete."""
        return (
            self.total > 0
            and self.covered == self.total
            and not self.needs_repair
            and not self.unknown
            and not self.problems
        )

    def phrase(self) -> str:
        """``3 of 3 constraints covered``, or ``coverage incomplete: …`` saying why."""
        if self.complete:
            return f"{self.covered} of {self.total} constraints covered"
        parts = []
        if self.unreadable:
            return "coverage incomplete: commonsformat.md cannot be read"
        if self.total == 0:
            parts.append("no constraint found in commonsformat.md")
        elif self.covered < self.total:
            parts.append(f"{self.total - self.covered} of {self.total} constraints without a case")
        else:
            parts.append(f"{self.covered} of {self.total} constraints covered")
        if self.needs_repair:
            parts.append(f"{self.needs_repair} need{'s' if self.needs_repair == 1 else ''} repair")
        if self.unknown:
            plural = "s" if self.unknown != 1 else ""
            parts.append(f"{self.unknown} unknown constraint{plural} in verifies")
        if self.problems:
            plural = "s" if self.problems != 1 else ""
            parts.append(f"{self.problems} problem{plural} in the constraint block")
        return "coverage incomplete: " + ", ".join(parts)


UNREADABLE = CoverageCount(0, 0, problems=1, unreadable=True)
"""The coverage of a module whose commonsformat.md exists but cannot be read."""


@dataclass(frozen=True)
class Scope:
    """How much of the suite a run stands for, read from its results: the cases a
    shard left to the others, the cases a selection left out, the cases a stopped run
    did not hand out."""

    total: int
    """Cases the suite declares."""
    owned: Summary
    """The counts of the cases the run answers for (all but those in another shard)."""
    shard: tuple[int, int] | None = None
    """``(I, N)`` of a shard, ``(0, 0)`` for a shard whose number is not known."""
    deselected: int = 0
    stopped: int = 0

    @property
    def kind(self) -> Literal["whole", "shard", "selection", "stopped"]:
        """What the run was: the whole suite, a shard, a selection, or stopped early."""
        if self.shard is not None:
            return "shard"
        if self.stopped:
            return "stopped"
        if self.deselected:
            return "selection"
        return "whole"

    @property
    def label(self) -> str:
        """``shard 1/3``, ``selection``, ``stopped early`` or ``whole suite``."""
        if self.shard is not None:
            index, count = self.shard
            return f"shard {index}/{count}" if count else "shard"
        return {"stopped": "stopped early", "selection": "selection"}.get(self.kind, "whole suite")

    @property
    def ran(self) -> int:
        """Cases the run ran or decided itself (not left out, not left to others)."""
        return self.owned.total - self.deselected - self.stopped


def scope_of(run: RunResult) -> Scope:
    """The scope of ``run`` (see :class:`Scope`)."""
    owned = [r for r in run.results if not _reason_is(r, OTHER_SHARD)]
    shard: tuple[int, int] | None = None
    if len(owned) < len(run.results):
        shard = (0, 0)
        for note in run.notes:
            found = _SHARD_NOTE.match(note)
            if found is not None:
                shard = (int(found[1]), int(found[2]))
                break
    deselected = sum(1 for r in owned if _reason_is(r, DESELECTED))
    stopped = sum(
        1 for r in owned if r.status is Status.SKIPPED and (r.reason or "").startswith(STOPPED)
    )
    return Scope(len(run.results), Summary.of(owned), shard, deselected, stopped)


def _reason_is(result: CaseResult, reason: str) -> bool:
    return result.status is Status.SKIPPED and result.reason == reason


def _word(
    summary: Summary,
    scope: Scope | None,
    coverage: CoverageCount | None,
    selection_passes: bool = False,
) -> Word:
    """The word (see the module): failures first, then what was skipped or left out,
    then what a pass stands for."""
    counts = summary if scope is None else scope.owned
    if counts.failed or counts.errored:
        return "nonconformant"
    left_out = 0 if scope is None else scope.deselected + scope.stopped
    if counts.skipped > left_out or counts.total == 0 or (scope is not None and scope.ran == 0):
        return "incomplete"
    if scope is not None and scope.stopped:
        return "incomplete"
    if scope is not None and scope.deselected:
        # a selection (a shard's too) left cases out: incomplete of the suite, as cer run
        # exits 3, unless the front end exits 0 for a selection that passed (pytest -k)
        return "passed" if selection_passes else "incomplete"
    if scope is not None and scope.kind == "shard":
        return "passed"
    if coverage is not None and not coverage.complete:
        return "passed"
    return "conformant"


@dataclass(frozen=True)
class Conformance:
    """A run's verdict with its qualifiers."""

    verdict: str
    """The word from the case results alone (:attr:`cer.model.Summary.verdict`)."""
    baseline: BaselineCheck | None = None
    coverage: CoverageCount | None = None
    recorded: str | None = None
    """The sentence a recorded run stated (``cer history --html``): shown as it was,
    since the baseline it was held against may have changed since."""
    scope: Scope | None = None
    """How much of the suite the run stands for; None: the whole suite."""
    decided: str | None = None
    """The word :func:`conformance_of` decided; None for a verdict made by hand, whose
    word is then :attr:`verdict` unless coverage or scope say otherwise."""

    @property
    def word(self) -> str:
        """The verdict word every surface shows (one of :data:`WORDS`)."""
        if self.decided is not None:
            return self.decided
        if self.recorded is not None:
            return self.verdict
        if self.verdict == "conformant" and self.coverage is not None:
            return "passed" if not self.coverage.complete else "conformant"
        return self.verdict

    @property
    def statement(self) -> str:
        """The one sentence every surface shows."""
        if self.recorded is not None:
            return self.recorded
        scope = self.scope
        head = self.word
        if scope is not None and scope.kind == "shard":
            head = f"{scope.label}: {head}"
        parts: list[str] = []
        if self.baseline is not None:
            parts.append(self.baseline.phrase())
        if scope is not None:
            ran = f"{scope.ran} of {scope.total} cases"
            clean = self.word in ("passed", "incomplete") and not (
                scope.owned.skipped > scope.deselected + scope.stopped
            )
            if scope.kind == "shard":
                parts.append(f"{ran}; cer merge of every shard gives the run's verdict")
            elif scope.kind == "stopped":
                parts.append(f"stopped early: {scope.stopped} of {scope.total} cases not run")
            elif scope.kind == "selection":
                passed = clean and self.word == "incomplete"
                parts.append(f"selection passed: {ran}" if passed else f"selection of {ran}")
        if self.coverage is not None:
            parts.append(self.coverage.phrase())
        if not parts:
            return head
        if self.baseline is not None:
            return f"{head}: {', '.join(parts)}"
        return ", ".join([head, *parts])

    def shortfall(self) -> str | None:
        """Why ``--require-coverage`` refuses this run, or None when it does not."""
        count = self.coverage
        if count is None or count.complete:
            return None
        parts = []
        if count.unreadable:
            return "commonsformat.md cannot be read, so no constraint is covered"
        if count.total == 0:
            parts.append("commonsformat.md declares no constraint (0 of 0)")
        elif count.covered < count.total:
            parts.append(f"{count.total - count.covered} of {count.total} constraints have no case")
        if count.needs_repair:
            parts.append(f"{count.needs_repair} cannot be drafted from their text (needs repair)")
        if count.unknown:
            parts.append(f"{count.unknown} verifies entries name no constraint")
        if count.problems:
            plural = "s" if count.problems != 1 else ""
            parts.append(f"the constraint block has {count.problems} problem{plural}")
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """The ``conformance`` object of the JSON results (the manifest keeps the
        sentence as its ``conformance`` string)."""
        return {
            "verdict": self.word,
            "statement": self.statement,
            "scope": "whole suite" if self.scope is None else self.scope.label,
            "cases_run": None if self.scope is None else self.scope.ran,
            "known_failures": None if self.baseline is None else len(self.baseline.known),
            "regressions": None if self.baseline is None else len(self.baseline.regressions),
            "stale": None if self.baseline is None else len(self.baseline.stale),
            "constraints_covered": None if self.coverage is None else self.coverage.covered,
            "constraints_total": None if self.coverage is None else self.coverage.total,
            "constraints_needs_repair": None
            if self.coverage is None
            else self.coverage.needs_repair,
            "unknown_constraints": None if self.coverage is None else self.coverage.unknown,
            "coverage_complete": None if self.coverage is None else self.coverage.complete,
        }


def conformance_of(
    run: RunResult | Summary,
    coverage: Coverage | CoverageCount | None = None,
    baseline: BaselineCheck | None = None,
    needs_repair: int = 0,
    *,
    selection_passes: bool = False,
) -> Conformance:
    """The verdict of ``run`` with this coverage and baseline check: the one place its
    word is decided. Given only a :class:`~cer.model.Summary`, the run is taken to be
    the whole suite. ``selection_passes``: the front end exits 0 for a selection whose
    cases all passed (the pytest plugin under ``-k``), so such a run is ``passed``, not
    ``incomplete`` (it is never ``conformant``)."""
    if isinstance(coverage, Coverage):
        count: CoverageCount | None = CoverageCount.of(coverage, needs_repair)
    else:
        count = coverage
    if isinstance(run, RunResult):
        summary = run.summary
        scope: Scope | None = scope_of(run)
        if scope is not None and scope.kind == "whole":
            scope = None
    else:
        summary, scope = run, None
    return Conformance(
        summary.verdict,
        baseline,
        count,
        scope=scope,
        decided=_word(summary, scope, count, selection_passes),
    )


def word_of(statement: str | None, fallback: str) -> str:
    """The verdict word a recorded sentence states (its first word, after a shard's
    ``shard I/N:``), or ``fallback`` (the counts' word) for a run recorded without one."""
    if not statement:
        return fallback
    text = re.sub(r"^shard(?: \d+/\d+)?:\s*", "", statement)
    first = re.split(r"[\s,:]", text, maxsplit=1)[0]
    return first if first in WORDS else fallback
