"""A report's context rebuilt from the history: ``cer history --html``.

The newest recorded run of a suite is loaded back whole (results with their evidence),
with the recorded runs before it for the chart, the flaky cases history knows and the
verdict sentence the run stated. The
suite file is read again for what the history does not keep (lines, tags, constraint
coverage); when it is gone, unreadable or changed since the run, a stand-in made from
the recorded results is used instead, and the caller is told why.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cer.constraints import CoverageError, suite_coverage
from cer.history.database import History
from cer.history.records import RunRecord
from cer.model import ARRAY_TO_CASE_CLASS, CASE_CLASS_TO_ARRAY, Case, RunResult, Suite
from cer.reports.context import ReportContext
from cer.results.conformance import Conformance, word_of
from cer.suite.loader import SuiteError, load_suite

__all__ = ["RecordedContext", "recorded_context", "stand_in_suite"]


@dataclass(frozen=True)
class RecordedContext:
    """The context of one recorded run, and what could not be recovered (warnings)."""

    context: ReportContext
    warnings: tuple[str, ...] = ()


def stand_in_suite(run: RunResult, record: RunRecord) -> Suite:
    """A suite with one case per recorded result (no input, expectation, line or tag),
    for a run whose suite file cannot be read as it was."""
    counters: dict[str, int] = dict.fromkeys(ARRAY_TO_CASE_CLASS.values(), 0)
    cases = []
    for position, result in enumerate(run.results, start=1):
        case_class = result.case_class if result.case_class in CASE_CLASS_TO_ARRAY else "functional"
        counters[case_class] += 1
        cases.append(
            Case(
                name=result.case_name,
                case_class=case_class,
                category=result.category,
                position=position,
                array_index=counters[case_class],
                input={},
                expect={},
            )
        )
    return Suite(
        path=Path(record.suite_path or "evals.toml"),
        format_version=record.format_version,
        target=run.target_module,
        target_version=None,
        cases=tuple(cases),
        content_hash=record.suite_hash,
    )


def recorded_context(
    history: History, suite_path: str | Path | None, limit: int | None
) -> RecordedContext | None:
    """The newest recorded run of ``suite_path`` (of any suite when None) with the
    ``limit`` newest runs of the same suite; None when nothing is recorded. Raises
    HistoryError when the history cannot be read."""
    newest = history.latest_run(suite_path=suite_path)
    if newest is None:
        return None
    run = history.load_run(newest.run_id)
    if suite_path is not None:
        records = history.runs(limit, suite_path=suite_path)
    else:
        records = tuple(r for r in history.runs(None) if r.suite_path == newest.suite_path)[:limit]
    flaky = history.flaky_names(run.implementation_id, run.suite_hash)
    warnings: list[str] = []
    suite: Suite | None = None
    where = suite_path if suite_path is not None else newest.suite_path
    if where:
        try:
            suite = load_suite(where)
        except SuiteError as exc:
            warnings.append(
                f"the suite cannot be read ({exc}); tags, lines and coverage are left out"
            )
        else:
            if newest.suite_hash and suite.content_hash != newest.suite_hash:
                warnings.append(
                    f"{where} changed since the run; tags, lines and coverage are left out"
                )
                suite = None
    stated = None
    if newest.statement is not None:
        word = word_of(newest.statement, run.summary.verdict)
        stated = Conformance(word, recorded=newest.statement)
    if suite is None:
        context = ReportContext(
            run, stand_in_suite(run, newest), None, flaky, records, conformance=stated
        )
        return RecordedContext(context, tuple(warnings))
    coverage = None
    try:
        coverage = suite_coverage(suite, run)
    except CoverageError as exc:
        warnings.append(f"coverage: {exc}")
    context = ReportContext(run, suite, coverage, flaky, records, conformance=stated)
    return RecordedContext(context, tuple(warnings))
