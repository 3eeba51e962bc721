"""What the detail panes say about a case when several implementations ran it.

Each pane shows every implementation, labelled: the Reason pane opens with their
observations side by side (a table, one column per implementation, the keys whose
values differ marked ``≠``), then each one's status, reason and mismatches; the Diff
pane opens with the differences *between* implementations that observed different
things, whatever the suite expects, then each one's diff against the suite; Output and
Coverage have a section per implementation. Pure Rich, no Textual: the app calls
:func:`render_details_many` from its detail worker, as it calls
:func:`~cer.tui.state.details.render_details` for one implementation.

Implementations are compared as :mod:`cer.results.matrix` compares them (strictly, without
``elapsed_ms``), on the results the list shows now, so the panes agree with the cells
even while a run is in flight.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Group, RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text

from cer.judge.equality import format_value, values_equal
from cer.model import MISSING, Case, CaseResult, Mismatch, SourceAccess, Status
from cer.results.matrix import IGNORED_KEYS, comparable, differing_keys
from cer.tui.state.board import Row
from cer.tui.state.coverage_view import CoverageView, render_coverage
from cer.tui.state.details import (
    Details,
    render_case,
    render_details,
    render_output,
    render_reason,
)
from cer.tui.state.diffing import Sides, describe_value, render_mismatch, render_result_diff
from cer.tui.state.formatting import SYMBOLS, column_labels, format_ms
from cer.tui.state.styles import DetailStyles

CELL_LIMIT = 60
"""Characters of a value shown in a cell of the side-by-side table."""


@dataclass(frozen=True)
class LaneRow:
    """One lane's row of the selected case, with what the panes say beside it."""

    label: str
    row: Row
    """A snapshot of the implementation's row, taken on the event loop."""
    flaky: bool = False
    notes: tuple[str, ...] = ()
    access: SourceAccess | None = None
    """Which implementation files its code frame may show (cer.text.tracebacks)."""
    known: str | None = None
    """What the known-failures baseline says of the row (a known failure and why, a
    stale entry, a regression of a listed case); None when it is not listed."""


@dataclass(frozen=True)
class Side:
    """Implementations that observed the same thing for the case, with the same status."""

    labels: tuple[str, ...]
    status: Status
    observation: Mapping[str, Any] | None
    """As compared (without ``elapsed_ms``); None when nothing was observed."""
    reasons: tuple[str | None, ...]


@dataclass(frozen=True)
class Comparison:
    """How the implementations that ran the case compare with each other."""

    sides: tuple[Side, ...]
    differing_keys: tuple[str, ...]
    left_out: tuple[str, ...] = ()
    """Labels not compared: they observed nothing in their whole run (see
    :attr:`cer.results.matrix.Matrix.unobserved`)."""

    @property
    def compared(self) -> int:
        return sum(len(side.labels) for side in self.sides)

    @property
    def disagree(self) -> bool:
        return self.compared >= 2 and len(self.sides) > 1

    @property
    def all_errored(self) -> bool:
        return (
            self.compared >= 2
            and len(self.sides) == 1
            and self.sides[0].observation is None
            and self.sides[0].status is Status.ERRORED
        )


def compare_lanes(lanes: Sequence[LaneRow], unobserved: Sequence[str] = ()) -> Comparison:
    """Group the implementations that ran the case by status and strictly equal
    observation; the first implementation's group first. ``unobserved`` labels are left
    out, as the matrix leaves them out."""
    found: list[tuple[Status, dict[str, Any] | None, list[str], list[str | None]]] = []
    left_out = []
    for lane in lanes:
        result = lane.row.result
        if result is None or result.status is Status.SKIPPED:
            continue
        if lane.label in unobserved:
            left_out.append(lane.label)
            continue
        observed = None if result.observation is None else comparable(result.observation)
        for status, seen, labels, reasons in found:
            same = (seen is None and observed is None) or (
                seen is not None and observed is not None and values_equal(seen, observed)
            )
            if status is result.status and same:
                labels.append(lane.label)
                reasons.append(result.reason)
                break
        else:
            found.append((result.status, observed, [lane.label], [result.reason]))
    sides = tuple(
        Side(tuple(labels), status, seen, tuple(reasons)) for status, seen, labels, reasons in found
    )
    return Comparison(sides, _differing(sides), tuple(left_out))


def _differing(sides: Sequence[Side]) -> tuple[str, ...]:
    observed = [side.observation for side in sides if side.observation is not None]
    return differing_keys(observed)


def render_details_many(
    case: Case | None,
    lanes: Sequence[LaneRow],
    styles: DetailStyles,
    *,
    coverages: Sequence[tuple[str, CoverageView]] = (),
    unobserved: Sequence[str] = (),
    suite_name: str = "evals.toml",
) -> Details:
    """Every pane for ``case`` across ``lanes`` (one per implementation, in column order);
    None: no case is selected. ``coverages`` are each implementation's label and
    coverage, in column order; ``unobserved`` the labels the matrix leaves out of the
    comparison."""
    coverage = render_coverage_many(case, coverages, styles, suite_name)
    if case is None:
        empty = Text("No case selected.")
        return Details(empty, [empty], [empty], empty, coverage)
    comparison = compare_lanes(lanes, unobserved)
    return Details(
        reason=render_reason_many(case, lanes, comparison, styles),
        diff=render_diff_many(lanes, comparison, styles),
        output=render_output_many(lanes, styles),
        case=render_case(case, styles),
        coverage=coverage,
    )


def render_selected(
    case: Case | None,
    rows: Sequence[LaneRow],
    styles: DetailStyles,
    *,
    coverages: Sequence[tuple[str, CoverageView]],
    unobserved: Sequence[str] = (),
    suite_name: str = "evals.toml",
) -> Details:
    """Every pane for the selected case (None: none is): one lane's as the panes of one
    implementation, several lanes' side by side. ``rows`` and ``coverages`` hold each
    lane's, in column order."""
    if len(coverages) > 1:
        return render_details_many(
            case, rows, styles, coverages=coverages, unobserved=unobserved, suite_name=suite_name
        )
    only = rows[0] if case is not None and rows else None
    return render_details(
        None if only is None else only.row,
        styles,
        () if only is None else only.notes,
        flaky=only is not None and only.flaky,
        access=None if only is None else only.access,
        known=None if only is None else only.known,
        coverage=coverages[0][1] if coverages else None,
        suite_name=suite_name,
    )


def render_coverage_many(
    case: Case | None,
    coverages: Sequence[tuple[str, CoverageView]],
    styles: DetailStyles,
    suite_name: str,
) -> RenderableType:
    """Each implementation's coverage, under its label: the constraints a case verifies
    may be verified by one implementation and not by another."""
    parts: list[RenderableType] = []
    for number, (label, view) in enumerate(coverages):
        if number:
            parts.append(Text(""))
        parts.append(_heading(label, styles))
        parts.append(render_coverage(view, case, styles, suite_name))
    return Group(*parts)


def _heading(label: str, styles: DetailStyles) -> Text:
    return Text(f"── {label} ──", styles.heading)


def headline(comparison: Comparison, styles: DetailStyles) -> Text:
    """One line: whether the implementations agree, and on what they differ."""
    text = Text()
    if comparison.disagree:
        text.append("≠ the implementations disagree", styles.heading)
        if comparison.differing_keys:
            text.append(f" on {', '.join(comparison.differing_keys)}", styles.heading)
        elif len({side.status for side in comparison.sides}) > 1:
            ignored = ", ".join(sorted(IGNORED_KEYS))
            text.append(
                f": the same observation (apart from {ignored}), other statuses",
                styles.heading,
            )
        if not any(side.status is Status.PASS for side in comparison.sides):
            text.append("  (no implementation passes)", styles.label)
    elif comparison.all_errored:
        text.append("‼ every implementation errored: nothing to compare", styles.heading)
    elif comparison.compared >= 2:
        text.append("= every implementation observed the same", styles.label)
    else:
        text.append("fewer than two implementations ran it: not compared", styles.label)
    text.append("\n")
    for label in comparison.left_out:
        text.append(
            f"{label} observed nothing in its whole run; it is left out of the comparison\n",
            styles.label,
        )
    return text


def render_reason_many(
    case: Case, lanes: Sequence[LaneRow], comparison: Comparison, styles: DetailStyles
) -> RenderableType:
    """The agreement, the observations side by side, then each implementation's reason."""
    top = Text()
    top.append(f"{case.name}\n", styles.heading)
    top.append_text(headline(comparison, styles))
    parts: list[RenderableType] = [top, observation_table(lanes, comparison, styles)]
    for lane in lanes:
        parts.append(Text(""))
        parts.append(_heading(lane.label, styles))
        body = render_reason(
            lane.row, styles, lane.notes, flaky=lane.flaky, access=lane.access, known=lane.known
        )
        # render_reason opens with the case's name, which the pane already shows once.
        first_end = body.plain.find("\n")
        body = body[first_end + 1 :] if first_end >= 0 else body
        body.rstrip()
        parts.append(body)
    return Group(*parts)


def observation_table(
    lanes: Sequence[LaneRow], comparison: Comparison, styles: DetailStyles
) -> Table:
    """Status, time and every observation key, one column per implementation; keys
    whose values differ between implementations are marked ``≠`` and come first."""
    table = Table(box=None, padding=(0, 1), show_edge=False, pad_edge=False)
    table.add_column("", style=styles.label, no_wrap=True)
    for head in column_labels([lane.label for lane in lanes]):
        table.add_column(head, header_style=styles.heading, overflow="fold")
    table.add_row(
        "status",
        *(
            Text(
                f"{SYMBOLS[lane.row.status]} "
                f"{'not run yet' if lane.row.status is None else lane.row.status.value}"
                + (" (stale)" if lane.row.stale else ""),
                styles.statuses.get(lane.row.status, Style()),
            )
            for lane in lanes
        ),
    )
    table.add_row(
        "time",
        *(
            format_ms(lane.row.result.elapsed_ms if lane.row.result is not None else None)
            for lane in lanes
        ),
    )
    observations = [_observation(lane.row.result) for lane in lanes]
    keys: set[str] = set()
    for observation in observations:
        if observation is not None:
            keys.update(observation)
    differing = set(comparison.differing_keys)
    for key in sorted(keys, key=lambda k: (k not in differing, k)):
        mark = "≠ " if key in differing else "  "
        cells: list[Text] = []
        for observation in observations:
            if observation is None:
                cells.append(Text("—", styles.label))
                continue
            value = observation.get(key, MISSING)
            cells.append(Text(cell_value(value), styles.heading if mark.strip() else ""))
        table.add_row(
            Text(f"{mark}{key}", styles.heading if mark.strip() else styles.label), *cells
        )
    if not keys:
        table.add_row("observed", *(Text("nothing", styles.label) for _ in lanes))
    return table


def cell_value(value: Any) -> str:
    """A value for the side-by-side table: with its type where the text alone could
    mislead (``int 2`` beside ``float 2.0``), bare where it cannot (strings are quoted,
    ``True`` and ``None`` are what they are)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return format_value(value, CELL_LIMIT)
    return describe_value(value, CELL_LIMIT)


def _observation(result: CaseResult | None) -> Mapping[str, Any] | None:
    if result is None or result.observation is None:
        return None
    return comparable(result.observation)


def render_diff_many(
    lanes: Sequence[LaneRow], comparison: Comparison, styles: DetailStyles
) -> list[Text]:
    """First the differences between implementations (each group against the first
    one), then each implementation's diff against the suite."""
    diff = styles.diff
    lines: list[Text] = []
    if comparison.disagree:
        first = comparison.sides[0]
        for other in comparison.sides[1:]:
            if lines:
                lines.append(Text(""))
            lines.extend(_between(first, other, styles))
    elif comparison.compared >= 2:
        lines.append(Text(headline(comparison, styles).plain.rstrip("\n"), diff.note))
    for lane in lanes:
        lines.append(Text(""))
        lines.append(Text(f"── {lane.label} against the suite ──", styles.heading))
        result = lane.row.result
        if result is None:
            lines.append(Text("Not run yet.", diff.note))
        else:
            lines.extend(render_result_diff(result, diff))
    if lines and not lines[0].plain:
        lines.pop(0)
    return lines


def _between(first: Side, other: Side, styles: DetailStyles) -> list[Text]:
    """The difference between two groups of implementations."""
    diff = styles.diff
    before = ", ".join(first.labels)
    after = ", ".join(other.labels)
    lines = [
        Text.assemble(
            (f"≠ {before} ", styles.heading),
            (
                f"{SYMBOLS[first.status]} {first.status.value}",
                styles.statuses.get(first.status, Style()),
            ),
            ("  against  ", styles.label),
            (f"{after} ", styles.heading),
            (
                f"{SYMBOLS[other.status]} {other.status.value}",
                styles.statuses.get(other.status, Style()),
            ),
        )
    ]
    for side in (first, other):
        if side.observation is None:
            reason = " ".join((side.reasons[0] or "").splitlines()[:1])
            lines.append(
                Text(
                    f"  {', '.join(side.labels)} observed nothing: {reason}".rstrip(": "), diff.note
                )
            )
    if first.observation is None or other.observation is None:
        return lines
    keys = differing_keys([first.observation, other.observation])
    if not keys:
        ignored = ", ".join(sorted(IGNORED_KEYS))
        lines.append(
            Text(
                f"  the same observation (apart from {ignored}); only the status differs", diff.note
            )
        )
        return lines
    sides = Sides(before, after, typed=True)
    for key in keys:
        mismatch = Mismatch(
            key, "", first.observation.get(key, MISSING), other.observation.get(key, MISSING)
        )
        lines.extend(render_mismatch(mismatch, diff, sides))
    return lines


def render_output_many(lanes: Sequence[LaneRow], styles: DetailStyles) -> list[Text]:
    """Each implementation's captured output, under its label."""
    lines: list[Text] = []
    for number, lane in enumerate(lanes):
        if number:
            lines.append(Text(""))
        lines.append(Text(f"══ {lane.label} ══", styles.heading))
        lines.extend(render_output(lane.row.result, styles))
    return lines
