"""What the verdict of a finished run is held against, for ``cer run`` and ``cer merge``
alike: the module's constraints as read before the run, the known-failures baseline and
whether coverage is required."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cer.cli.exits import ExitCode, exit_code_for, print_error, print_warning
from cer.results.conformance import Conformance, CoverageCount, conformance_of

if TYPE_CHECKING:
    from cer.config import ResolvedRun
    from cer.constraints import ConstraintSet, Coverage, CoverageFigures
    from cer.model import RunResult, Suite
    from cer.results.baseline import Baseline


@dataclass(frozen=True)
class ModuleDoc:
    """The module's commonsformat.md as read before the run: coverage is judged on this
    snapshot, whatever the implementation does to the file while it runs."""

    declared: ConstraintSet | None
    problem: str | None = None

    @classmethod
    def read(cls, suite: Suite) -> ModuleDoc:
        from cer.constraints import CoverageError, read_module_doc

        try:
            return cls(read_module_doc(suite))
        except CoverageError as exc:
            return cls(None, str(exc))

    def coverage(self, suite: Suite, run: RunResult, *, warn: bool = True) -> Coverage | None:
        """Coverage of ``run`` on the snapshot; a warning when the file was unreadable."""
        if self.problem is not None and warn:
            print_warning(f"coverage: {self.problem}")
        if self.declared is None:
            return None
        from cer.constraints import suite_coverage

        return suite_coverage(suite, run, self.declared)


@dataclass(frozen=True)
class Verdicts:
    """What the verdict of each run is held against besides its cases: the baseline
    (read and checked against the suite before anything runs) and whether coverage is
    required."""

    baseline: Baseline | None = None
    require_coverage: bool = False

    @classmethod
    def prepare(cls, resolved: ResolvedRun, suite: Suite, module_doc: ModuleDoc) -> Verdicts | None:
        """Read the baseline; None after printing why the run cannot start (a bad
        baseline, an entry naming no case, coverage required without a module document)."""
        return cls.load(resolved.baseline, resolved.require_coverage, suite, module_doc)

    @classmethod
    def load(
        cls,
        path: str | Path | None,
        require_coverage: bool,
        suite: Suite,
        module_doc: ModuleDoc,
    ) -> Verdicts | None:
        """:meth:`prepare` for a baseline file and a coverage requirement given as such
        (``cer merge``)."""
        baseline = None
        if path is not None:
            from cer.results.baseline import BaselineError, load_baseline, unmatched_entries

            try:
                baseline = load_baseline(path)
            except BaselineError as exc:
                print_error(f"baseline: {exc}")
                return None
            problems = unmatched_entries(baseline, suite)
            for problem in problems:
                print_error(f"baseline: {problem}; remove the entry or correct its case")
            if problems:
                return None
        if require_coverage and module_doc.declared is None:
            why = module_doc.problem or f"there is no commonsformat.md beside {suite.path}"
            print_error(f"--require-coverage: {why}, so there are no constraints to cover")
            return None
        return cls(baseline, require_coverage)

    def held(self) -> dict[str, Any]:
        """The baseline (its path and hash) and the coverage requirement, as the fields
        of the same names of RunOptions and RunConditions: a run's conditions say what
        its verdict was held against."""
        baseline = self.baseline
        return {
            "baseline": "" if baseline is None else str(baseline.path),
            "baseline_sha256": "" if baseline is None else baseline.sha256,
            "require_coverage": self.require_coverage,
        }

    def onto(self, resolved: ResolvedRun) -> ResolvedRun:
        """``resolved`` with :meth:`held` in each implementation's options."""
        held = self.held()
        return replace(
            resolved,
            options=replace(resolved.options, **held),
            implementations=tuple(replace(o, **held) for o in resolved.implementations),
        )

    def conformance(
        self,
        suite: Suite,
        run: RunResult,
        coverage: Coverage | CoverageCount | None,
        figures: CoverageFigures | None,
        label: str,
        others: Sequence[str] = (),
    ) -> Conformance:
        check = None
        if self.baseline is not None:
            from cer.results.baseline import check_run  # only with --baseline

            check = check_run(self.baseline, suite, run, label, others)
        needs_repair = 0 if figures is None else figures.needs_repair
        return conformance_of(run, coverage, check, needs_repair)

    def exit_code(self, run: RunResult, conformance: Conformance) -> ExitCode:
        return exit_code_for(run, conformance, require_coverage=self.require_coverage)


def figures_of(coverage: Coverage | None, suite: Suite) -> CoverageFigures | None:
    """The coverage figures the history keeps and the verdict counts (needs repair)."""
    if coverage is None:
        return None
    from cer.review.derive import coverage_figures  # only with a module document

    return coverage_figures(coverage, suite)
