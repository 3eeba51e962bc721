"""The verdict as every surface states it: the run's word, what the baseline makes of
its failures, and how much of the module's constraints the suite covers.

:attr:`cer.model.Summary.verdict` is the word the case results alone give
(``conformant``, ``incomplete``, ``nonconformant``). :class:`Conformance` adds what a
reader needs beside it, in one sentence that the summary line, the JSON results, the
manifest, the HTML and Markdown reports and the history all carry:

    nonconformant: 12 known failures, no regressions, 6 of 7 constraints covered

A known failure is still a failure, so the word is never ``conformant`` while one
exists. With a module document the sentence always states K of N (and the constraints
that need repair, and the unknown names in ``verifies``); :meth:`Conformance.shortfall`
is what ``--require-coverage`` refuses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cer.coverage import Coverage
from cer.model import Summary
from cer.results.baseline import BaselineCheck

__all__ = ["Conformance", "CoverageCount", "conformance_of"]


@dataclass(frozen=True)
class CoverageCount:
    """The coverage figures the verdict states."""

    covered: int
    total: int
    needs_repair: int = 0
    """Constraints no case covers and no complete draft could (see :mod:`cer.review.derive`)."""
    unknown: int = 0
    """``verifies`` entries naming no declared constraint."""

    @classmethod
    def of(cls, coverage: Coverage, needs_repair: int = 0) -> CoverageCount:
        return cls(coverage.covered, coverage.total, needs_repair, len(coverage.unknown))

    @property
    def complete(self) -> bool:
        """Every constraint covered, none needing repair, no unknown name."""
        return self.covered == self.total and not self.needs_repair and not self.unknown


@dataclass(frozen=True)
class Conformance:
    """A run's verdict with its qualifiers."""

    verdict: str
    """The word from the case results alone."""
    baseline: BaselineCheck | None = None
    coverage: CoverageCount | None = None
    recorded: str | None = None
    """The sentence a recorded run stated (``cer history --html``): shown as it was,
    since the baseline it was held against may have changed since."""

    @property
    def statement(self) -> str:
        """The one sentence every surface shows."""
        if self.recorded is not None:
            return self.recorded
        text = self.verdict
        if self.baseline is not None:
            text += f": {self.baseline.phrase()}"
        if self.coverage is not None:
            count = self.coverage
            text += f", {count.covered} of {count.total} constraints covered"
            if count.needs_repair:
                text += (
                    f", {count.needs_repair} need{'s' if count.needs_repair == 1 else ''} repair"
                )
            if count.unknown:
                plural = "s" if count.unknown != 1 else ""
                text += f", {count.unknown} unknown constraint{plural} in verifies"
        return text

    def shortfall(self) -> str | None:
        """Why ``--require-coverage`` refuses this run, or None when it does not."""
        count = self.coverage
        if count is None or count.complete:
            return None
        parts = []
        if count.covered < count.total:
            parts.append(f"{count.total - count.covered} of {count.total} constraints have no case")
        if count.needs_repair:
            parts.append(f"{count.needs_repair} cannot be drafted from their text (needs repair)")
        if count.unknown:
            parts.append(f"{count.unknown} verifies entries name no constraint")
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """The ``conformance`` object of the JSON results (the manifest keeps the
        sentence as its ``conformance`` string)."""
        return {
            "verdict": self.verdict,
            "statement": self.statement,
            "known_failures": None if self.baseline is None else len(self.baseline.known),
            "regressions": None if self.baseline is None else len(self.baseline.regressions),
            "stale": None if self.baseline is None else len(self.baseline.stale),
            "constraints_covered": None if self.coverage is None else self.coverage.covered,
            "constraints_total": None if self.coverage is None else self.coverage.total,
            "constraints_needs_repair": None
            if self.coverage is None
            else self.coverage.needs_repair,
            "unknown_constraints": None if self.coverage is None else self.coverage.unknown,
        }


def conformance_of(
    summary: Summary,
    coverage: Coverage | None = None,
    baseline: BaselineCheck | None = None,
    needs_repair: int = 0,
) -> Conformance:
    """The verdict of a run with these counts, coverage and baseline check."""
    count = None if coverage is None else CoverageCount.of(coverage, needs_repair)
    return Conformance(summary.verdict, baseline, count)
