"""What the Coverage pane says: the module's constraints against the suite and its results.

Pure Rich, no Textual. :func:`read_doc` reads ``commonsformat.md`` once, when a run
loads its suite and before the implementation runs (the implementation must not decide
which constraints it is judged against); :func:`compute_view` judges that snapshot's
constraints after the run (the app calls both from thread workers);
:func:`render_coverage` turns the result into text for the pane, with the selected case's
own constraints first, and runs in the detail worker with the other panes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.console import Group, RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text

from cer.constraints import (
    MODULE_DOC,
    ConstraintCoverage,
    ConstraintSet,
    Coverage,
    CoverageError,
    CoverageFigures,
    compute_coverage,
    describe_unknown,
    find_module_doc,
    read_constraints,
)
from cer.model import Case, RunResult, Status, Suite
from cer.tui.state.styles import DetailStyles

VERIFIED = "✔"
NOT_VERIFIED = "✘"
NEEDS_A_CASE = "○"
UNKNOWN = "‼"
"""Marks of the pane, so that no state depends on colour alone."""

BOLD = Style(bold=True)


@dataclass(frozen=True)
class CoverageView:
    """The coverage the pane shows, or why it shows none.

    Exactly one of ``coverage`` and ``message`` is set once a run has been judged;
    neither while no run has finished yet.
    """

    coverage: Coverage | None = None
    message: str | None = None
    """Plain words for the user: no commonsformat.md, or it cannot be read."""
    error: bool = False
    """``message`` reports a problem (an unreadable document), not an absence."""
    trend: tuple[CoverageFigures, ...] = ()
    """The coverage figures of the recorded runs, oldest first: the sparkline."""

    @property
    def pending(self) -> bool:
        return self.coverage is None and self.message is None


@dataclass(frozen=True)
class ModuleDoc:
    """The module's ``commonsformat.md`` as read before a run, or why there is none."""

    suite_path: Path
    declared: ConstraintSet | None = None
    problem: str | None = None
    """Why the document could not be read; None when it was read or does not exist."""


def read_doc(suite_path: Path) -> ModuleDoc:
    """Read the ``commonsformat.md`` beside ``suite_path`` now (file I/O)."""
    doc = find_module_doc(suite_path)
    if doc is None:
        return ModuleDoc(suite_path)
    try:
        return ModuleDoc(suite_path, read_constraints(doc))
    except CoverageError as error:
        return ModuleDoc(suite_path, problem=str(error))


def compute_view(doc: ModuleDoc, suite: Suite, run: RunResult | None) -> CoverageView:
    """Coverage of the constraints ``doc`` holds, judged by ``run``'s results.

    ``run`` may merge several runs (the app passes what its list shows, so that a rerun
    of the failed cases does not turn every other constraint unverified).
    """
    if doc.problem is not None:
        return CoverageView(message=doc.problem, error=True)
    if doc.declared is None:
        return CoverageView(
            message=f"This module has no {MODULE_DOC} beside {doc.suite_path.name}, so it "
            "declares no constraints: there is no coverage to show."
        )
    return CoverageView(coverage=compute_coverage(suite, doc.declared, run))


def headline(coverage: Coverage) -> str:
    """``K of N constraints covered, M verified`` (without ``verified`` before a run)."""
    text = f"{coverage.covered} of {coverage.total} constraints covered"
    if coverage.evaluated:
        text += f", {coverage.verified} verified"
    return text


def render_coverage(
    view: CoverageView, case: Case | None, styles: DetailStyles, suite_name: str = "evals.toml"
) -> RenderableType:
    """The pane's content: headline, the selected case's constraints, errors, gaps, and
    every constraint's status. Tables keep wrapped lines under their own column."""
    if view.coverage is None:
        if view.message is None:
            return Text("Coverage is computed when a run finishes.", styles.label)
        text = Text()
        if view.error:
            text.append(f"{UNKNOWN} ", _status(styles, Status.ERRORED))
        text.append(view.message)
        return text
    coverage = view.coverage
    parts: list[RenderableType] = []
    top = Text()
    top.append(f"Constraints of {coverage.source.name}\n", styles.label)
    top.append(headline(coverage), styles.heading)
    gaps = []
    if coverage.needs_a_case:
        count = len(coverage.needs_a_case)
        gaps.append(f"{count} need{'s' if count == 1 else ''} a case")
    if coverage.unknown:
        count = len(coverage.unknown)
        gaps.append(f"{count} unknown constraint{'s' if count != 1 else ''} in verifies")
    if gaps:
        top.append("\n" + " · ".join(gaps), styles.label)
    parts.append(top)
    if len(view.trend) > 1:
        parts.append(_trend(view.trend, styles))
    by_name = {item.name: item for item in coverage.constraints}
    if case is not None:
        parts.extend(_case_section(case, by_name, coverage, styles))
    if coverage.unknown:
        errored = _status(styles, Status.ERRORED)
        parts.append(_title(f"{UNKNOWN} Errors: verifies names no such constraint", styles))
        table = _grid()
        for reference in coverage.unknown:
            table.add_row(Text(" "), Text(describe_unknown(reference, suite_name), errored))
        parts.append(table)
    if coverage.problems:
        parts.append(_title(f"{UNKNOWN} Problems in {coverage.source.name}", styles))
        table = _grid()
        for problem in coverage.problems:
            table.add_row(Text(" "), Text(f"line {problem}" if problem[:1].isdigit() else problem))
        parts.append(table)
    if coverage.needs_a_case:
        parts.append(_title(f"{NEEDS_A_CASE} Needs a case", styles))
        skipped = _status(styles, Status.SKIPPED)
        parts.append(Text("\n".join(f"  {name}" for name in coverage.needs_a_case), skipped))
    if coverage.constraints:
        parts.append(_title("Every constraint", styles))
        table = _grid(name_column=True)
        for item in coverage.constraints:
            mark, style, word = _state(item, styles, short=True)
            table.add_row(
                Text(f"  {mark}", style), Text(item.name, style), Text(word, styles.label)
            )
        parts.append(table)
    return Group(*parts)


def _case_section(
    case: Case,
    by_name: dict[str, ConstraintCoverage],
    coverage: Coverage,
    styles: DetailStyles,
) -> list[RenderableType]:
    """Which constraints the selected case verifies, and how each of them stands."""
    parts: list[RenderableType] = [_title(f"{case.name} verifies", styles)]
    names = tuple(dict.fromkeys(case.verifies))
    if not names:
        parts.append(Text("  no constraint (its verifies list is empty)", styles.label))
        return parts
    suggestions = {
        ref.constraint: ref.suggestion for ref in coverage.unknown if ref.case_name == case.name
    }
    table = _grid()
    for name in names:
        item = by_name.get(name)
        if item is None:
            style = _status(styles, Status.ERRORED)
            body = Text()
            body.append(name, style + BOLD)
            body.append(": error, no such constraint", style)
            hint = suggestions.get(name)
            if hint:
                body.append(f' (did you mean "{hint}"?)', styles.label)
            table.add_row(Text(f"  {UNKNOWN}", style), body)
            continue
        mark, style, word = _state(item, styles)
        body = Text()
        body.append(name, style + BOLD)
        body.append(f": {word}", styles.label)
        if item.text:
            body.append(f"\n{item.text}")
        for other, status in item.not_passed:
            body.append("\n")
            body.append(f"{'not run' if status == 'missing' else status}", style)
            body.append(f" {other}")
        table.add_row(Text(f"  {mark}", style), body)
    parts.append(table)
    return parts


SPARKS = "▁▂▃▄▅▆▇█"
"""A sparkline's eight heights, lowest first."""


def sparkline(ratios: Sequence[float | None]) -> str:
    """One character per ratio (0 to 1): ``▁`` for none of the constraints, ``█`` for
    all of them; a space where a run has no such figure."""
    top = len(SPARKS) - 1
    return "".join(
        " " if ratio is None else SPARKS[round(min(max(ratio, 0.0), 1.0) * top)] for ratio in ratios
    )


def _ratio(part: int | None, total: int) -> float | None:
    return None if part is None or total <= 0 else part / total


def _trend(trend: Sequence[CoverageFigures], styles: DetailStyles) -> Group:
    """The coverage over the recorded runs, oldest first: covered and verified as
    sparklines, with where each started and where it stands."""
    first, last = trend[0], trend[-1]
    table = Table.grid(padding=(0, 1))
    table.add_column(no_wrap=True)
    table.add_column(no_wrap=True)
    table.add_column(ratio=1, overflow="fold")
    covered = sparkline([_ratio(f.covered, f.total) for f in trend])
    table.add_row(
        Text("  covered"),
        Text(covered, styles.heading),
        Text(f"{first.covered}/{first.total} → {last.covered}/{last.total}", styles.label),
    )
    if any(f.verified is not None for f in trend):
        verified = sparkline([_ratio(f.verified, f.total) for f in trend])
        was = "-" if first.verified is None else f"{first.verified}/{first.total}"
        now = "-" if last.verified is None else f"{last.verified}/{last.total}"
        table.add_row(
            Text("  verified"),
            Text(verified, _status(styles, Status.PASS)),
            Text(f"{was} → {now}", styles.label),
        )
    return Group(_title(f"Over {len(trend)} recorded runs", styles), table)


def _title(title: str, styles: DetailStyles) -> Text:
    return Text(f"\n{title}", styles.heading)


def _grid(*, name_column: bool = False) -> Table:
    """A borderless table: a mark, optionally a name that never wraps, and a body that
    wraps under itself."""
    table = Table.grid(padding=(0, 1))
    table.add_column(no_wrap=True)
    if name_column:
        table.add_column(no_wrap=True, max_width=28, overflow="ellipsis")
    table.add_column(ratio=1, overflow="fold")
    return table


def _state(
    item: ConstraintCoverage, styles: DetailStyles, *, short: bool = False
) -> tuple[str, Style, str]:
    """Mark, style and words for one constraint's status (``short`` for the list of
    every constraint, where the mark already says whether it is verified)."""
    count = len(item.cases)
    cases = f"{count} case{'s' if count != 1 else ''}"
    if not item.covered:
        return NEEDS_A_CASE, _status(styles, Status.SKIPPED), "needs a case"
    if item.verified:
        return VERIFIED, _status(styles, Status.PASS), f"verified, {cases} passed"
    if item.verified is None:
        return VERIFIED, styles.label, f"covered by {cases}"
    failing = f"{len(item.not_passed)} of {cases} not passing"
    return (
        NOT_VERIFIED,
        _status(styles, Status.FAIL),
        failing if short else f"not verified, {failing}",
    )


def _status(styles: DetailStyles, status: Status) -> Style:
    return styles.statuses.get(status, Style())
