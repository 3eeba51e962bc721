"""The HTML report: one self-contained page that people would rather look at than read.

The verdict and counts at the top, a stacked bar per group of cases (case class,
category, each tag prefix such as ``upstream-section:``), the counts of the recorded runs
of the suite as a chart (a line per implementation, full runs only), every failed and
errored case with its reason, diff and captured output (collapsible), every case with
its input, expected and observed (collapsed, narrowed by status and group with CSS
alone), constraint coverage and the conditions of the run.

The page needs nothing but itself: inline CSS, charts as inline SVG, no script, and a
Content-Security-Policy that forbids loading anything. It is rendered by a Jinja2
template shipped in the package (``templates/report.html.j2``) with autoescaping on, and
every value passes :func:`visible` first, so that text the implementation controls
(reasons, captured output, observations) and names from the suite show as text: markup
is escaped, control characters, lone surrogates and bidirectional overrides are written
as ``\\xNN``/``\\uNNNN`` escapes. Jinja2 is a dependency, imported only when a page is
rendered; :func:`missing_dependency` says how to install it where it is missing all the
same.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from cer import __version__
from cer.judge.compare import shown_measurement, shown_mismatch_observed
from cer.judge.equality import format_value
from cer.model import (
    CASE_CLASS_TO_ARRAY,
    CASE_CLASSES,
    MISSING,
    Case,
    CaseResult,
    Mismatch,
    Status,
)
from cer.reports.context import ReportContext, iso_time, suite_display_path
from cer.results.baseline import BaselineCheck
from cer.text.safetext import INVISIBLE_CHARS
from cer.text.tomltext import inline, shown_input, table_lines

if TYPE_CHECKING:
    from jinja2 import Environment

    from cer.history.records import RunRecord

__all__ = [
    "INSTALL_HINT",
    "missing_dependency",
    "page_model",
    "render",
    "visible",
]

INSTALL_HINT = "pip install 'jinja2>=3.1,<4'"
"""How to get the optional dependency of the HTML report."""

TEMPLATE = "report.html.j2"
DIFF_LINES = 400
"""Lines of a diff shown before the rest is cut (with a note saying how much)."""
VALUE_LIMIT = 4000
TEXT_LIMIT = 20_000
"""Characters of a reason or a captured stream shown; the rest is cut with a note."""
DETAILED_FAILURES = 2000
"""Failures shown with their diffs and captured output; later ones show their reason
only, so that a huge failing suite still makes a page a browser can open."""
"""Characters of an expected or observed value shown when it is not a string."""
CASE_ROWS = 20_000
"""Cases the list of every case shows; past them it says how many it left out."""
FULL_PASSES = 2_000
"""Runs of up to this many cases show each pass with what it was given, expected and
observed; a larger run lists its passes by name, one line each (its failures, errors
and skips stay whole), so that the page of a suite of 20,000 cases stays a few
megabytes: the json report has every pass's values."""
CHART_WIDTH = 720
CHART_HEIGHT = 160
CHART_LEFT = 36
CHART_BOTTOM = 20
COLUMN_MAX = 48
"""Widest a run's column is drawn (a few runs do not fill the chart)."""

ORDER: tuple[Status, ...] = (Status.PASS, Status.FAIL, Status.ERRORED, Status.SKIPPED)
WORDS = {
    Status.PASS: "passed",
    Status.FAIL: "failed",
    Status.ERRORED: "errored",
    Status.SKIPPED: "skipped",
}

_INVISIBLE = re.compile(
    f"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f{INVISIBLE_CHARS}\ud800-\udfff\ufffe\uffff]|\r(?!\n)"
)


def missing_dependency() -> str | None:
    """Why HTML reports cannot be written here (Jinja2 is missing), or None."""
    try:
        import jinja2  # noqa: F401
    except ImportError:
        return f"the html report needs Jinja2, which is not installed: {INSTALL_HINT}"
    return None


def _escape_char(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every character a page would hide or that would break it (C0 and
    C1 controls but tab and newline, lone surrogates, bidirectional overrides,
    noncharacters) written as a ``\\xNN`` or ``\\uNNNN`` escape. Markup is left to the
    template's autoescaping."""
    return _INVISIBLE.sub(_escape_char, text)


# --- the page model --------------------------------------------------------------------


@dataclass(frozen=True)
class Segment:
    """One status's share of a bar, in the bar's own units (0 to 1000)."""

    status: str
    count: int
    x: float
    width: float


@dataclass(frozen=True)
class Bar:
    """A stacked bar of the four statuses of some cases."""

    label: str
    total: int
    counts: tuple[tuple[str, int], ...]
    """(status, count) for each status present, in pass, fail, errored, skipped order."""
    segments: tuple[Segment, ...]

    def count(self, status: str) -> int:
        return dict(self.counts).get(status, 0)

    @property
    def passed(self) -> int:
        return self.count(Status.PASS.value)

    @property
    def summary(self) -> str:
        words = ", ".join(f"{n} {WORDS[Status(s)]}" for s, n in self.counts)
        return f"{self.label}: {words}" if words else f"{self.label}: no cases"


@dataclass(frozen=True)
class GroupSet:
    """The bars of one way of grouping the cases (by category, by a tag prefix...)."""

    title: str
    bars: tuple[Bar, ...]


@dataclass(frozen=True)
class Column:
    """One recorded run in the history chart, its stack drawn bottom up."""

    x: float
    width: float
    rects: tuple[tuple[str, float, float], ...]
    """(status, y, height) in chart units."""
    title: str
    current: bool


@dataclass(frozen=True)
class Chart:
    """The counts of the recorded runs, oldest left."""

    columns: tuple[Column, ...]
    ticks: tuple[tuple[float, int], ...]
    """(y, count) for the axis labels."""
    width: int
    height: int
    left: int
    bottom: float
    runs: int
    first_label: str
    last_label: str
    """Start time of the newest run; empty when its column is too close to the first's."""
    last_x: float
    pass_line: str
    """SVG points of the pass counts of this run's implementation's full runs, when
    there are at least two."""
    series: tuple[Series, ...] = ()
    """One line of pass counts per implementation, over its full runs only."""
    partial: tuple[PartialMark, ...] = ()
    """Runs of part of the suite: marked where they fall, never counted in a line."""


@dataclass(frozen=True)
class Series:
    """The pass counts of one implementation's full runs, oldest first."""

    label: str
    points: str
    """SVG points, ``x,y`` each; one point draws a dot."""
    index: int
    """Which of the page's series styles draws it (0 to 5)."""
    runs: int


@dataclass(frozen=True)
class PartialMark:
    """A run that ran part of the suite, marked under the axis."""

    x: float
    title: str


@dataclass(frozen=True)
class DiffLine:
    kind: Literal["add", "del", "ctx", "hunk", "note"]
    text: str


@dataclass(frozen=True)
class MismatchView:
    path: str
    message: str
    diff: tuple[DiffLine, ...]
    expected: str | None
    observed: str | None


@dataclass(frozen=True)
class Failure:
    """A failed or errored case, as the page shows it."""

    number: int
    name: str
    status: str
    category: str
    case_class: str
    where: str
    reason: str
    mismatches: tuple[MismatchView, ...]
    streams: tuple[tuple[str, str], ...]
    """(name, text) of stdout, stderr and the traceback, those that are not empty."""
    elapsed_ms: int | None
    flaky: bool
    tags: tuple[str, ...]
    detailed: bool = True
    """False past :data:`DETAILED_FAILURES`: no mismatches or streams shown."""
    input: str = ""
    """The case's input on one line (:func:`cer.text.tomltext.shown_input`), cut when long."""
    input_whole: str = ""
    """The whole input as ``key = value`` lines, when :attr:`input` was cut."""
    expected: str = ""
    """The case's expect table as ``key = value`` lines."""
    same_cause_as: str = ""
    """The first case not run for the same cause (an implementation that could not be
    loaded or started), whose card shows the captured output: said once, not per case."""


@dataclass(frozen=True)
class CaseRow:
    """One case in the list of every case: collapsed, with what it was given, what
    was expected and what was observed, so that a pass says why it passed."""

    name: str
    status: str
    where: str
    reason: str
    input: str
    expected: str
    observed: str
    groups: str
    """The CSS classes of the filter groups it is in (``g1 g4``)."""
    brief: bool = False
    """A pass of a large run (:data:`FULL_PASSES`): shown by its name alone."""


@dataclass(frozen=True)
class CaseGroup:
    """A group the list of every case can be narrowed to, without a script."""

    number: int
    label: str
    count: int


@dataclass(frozen=True)
class CoverageView:
    total: int
    covered: int
    verified: int
    evaluated: bool
    bar: Bar
    needs_a_case: tuple[tuple[str, str], ...]
    not_verified: tuple[tuple[str, str], ...]
    unknown: tuple[str, ...]
    problems: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class Page:
    """Everything the template shows; built by :func:`page_model`."""

    title: str
    target: str
    implementation: str
    verdict: str
    statement: str
    """The verdict with its baseline and coverage qualifiers (cer.results.conformance)."""
    seconds: float
    overall: Bar
    groups: tuple[GroupSet, ...]
    chart: Chart | None
    history_note: str
    failures: tuple[Failure, ...]
    rows: tuple[CaseRow, ...]
    case_groups: tuple[CaseGroup, ...]
    rows_cut: int
    """Cases past :data:`CASE_ROWS` that the list leaves out (the json report has them)."""
    skipped: tuple[tuple[str, int], ...]
    flaky: tuple[str, ...]
    coverage: CoverageView | None
    baseline: tuple[tuple[str, tuple[str, ...]], ...]
    """With a baseline: (heading, lines) for regressions, stale entries, known failures."""
    conditions: tuple[tuple[str, str], ...]
    notes: tuple[str, ...]
    generated: str
    version: str

    @property
    def brief_passes(self) -> bool:
        """Whether the list shows passes by name alone (:data:`FULL_PASSES`)."""
        return any(row.brief for row in self.rows)


def _bar(label: str, statuses: Iterable[Status]) -> Bar:
    counts = Counter(statuses)
    total = sum(counts.values())
    present = tuple((s.value, counts[s]) for s in ORDER if counts[s])
    segments = []
    x = 0.0
    for status, count in present:
        width = 1000 * count / total
        segments.append(Segment(status, count, round(x, 2), round(width, 2)))
        x += width
    return Bar(label, total, present, tuple(segments))


def _groups(context: ReportContext) -> tuple[GroupSet, ...]:
    """Bars by case class, by category, and by each tag prefix (``area:x`` → ``area``);
    groups in order of first appearance. A way of grouping with one group only is left
    out: it would repeat the overall bar."""
    declared = {case.name: case for case in context.suite.cases}
    by_class: dict[str, list[Status]] = {name: [] for name in CASE_CLASSES}
    by_category: dict[str, list[Status]] = {}
    by_tag: dict[str, dict[str, list[Status]]] = {}
    for result in context.run.results:
        by_class.setdefault(result.case_class, []).append(result.status)
        by_category.setdefault(result.category, []).append(result.status)
        case = declared.get(result.case_name)
        for tag in case.tags if case is not None else ():
            prefix, colon, value = tag.partition(":")
            if colon and prefix and value:
                by_tag.setdefault(prefix, {}).setdefault(value, []).append(result.status)
            else:
                by_tag.setdefault("", {}).setdefault(tag, []).append(result.status)
    sets = []
    classes = {name: statuses for name, statuses in by_class.items() if statuses}
    for title, groups in (("case class", classes), ("category", by_category)):
        if len(groups) > 1:
            sets.append(
                GroupSet(title, tuple(_bar(name, statuses) for name, statuses in groups.items()))
            )
    for prefix, groups in by_tag.items():
        title = f"tag {prefix}:" if prefix else "tag"
        sets.append(
            GroupSet(title, tuple(_bar(name, statuses) for name, statuses in groups.items()))
        )
    return tuple(sets)


def _run_label(record: RunRecord) -> str:
    return datetime.fromtimestamp(record.started_at_ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M")


def _implementation(record: RunRecord) -> str:
    return record.implementation or record.implementation_id.partition("@")[0]


def _chart(records: Sequence[RunRecord], current: str, implementation: str = "") -> Chart | None:
    """The counts of ``records`` (newest first, as history lists them): a stacked
    column for each full run of ``implementation`` (this run's), a line of pass counts
    per implementation over its full runs, and a mark for each run of part of the
    suite, which no line or column counts (its counts are not comparable)."""
    if not records:
        return None
    runs = list(reversed(records))
    top = max(max(r.summary.total for r in runs), 1)
    plot_w = CHART_WIDTH - CHART_LEFT - 4
    plot_h = CHART_HEIGHT - CHART_BOTTOM - 8
    base = CHART_HEIGHT - CHART_BOTTOM
    step = min(plot_w / len(runs), COLUMN_MAX)
    gap = min(step * 0.2, 4.0) if len(runs) > 1 else step * 0.6
    columns = []
    points = []
    lines: dict[str, list[str]] = {}
    partial: list[PartialMark] = []
    for index, record in enumerate(runs):
        s = record.summary
        x = CHART_LEFT + index * step + gap / 2
        middle = x + (step - gap) / 2
        if record.partial:
            partial.append(
                PartialMark(
                    round(middle, 2),
                    f"{record.short_id} · {_run_label(record)} UTC · {record.implementation_id}"
                    f"\npartial run: {s.total - s.skipped} of {s.total} cases ran; not counted",
                )
            )
            continue
        y_pass = base - plot_h * s.passed / top
        lines.setdefault(_implementation(record), []).append(f"{middle:.2f},{y_pass:.2f}")
        if implementation and _implementation(record) != implementation:
            continue
        y = float(base)
        rects = []
        for status, count in (
            (Status.PASS, s.passed),
            (Status.FAIL, s.failed),
            (Status.ERRORED, s.errored),
            (Status.SKIPPED, s.skipped),
        ):
            if not count:
                continue
            height = plot_h * count / top
            y -= height
            rects.append((status.value, round(y, 2), round(height, 2)))
        title = (
            f"{record.short_id} · {_run_label(record)} UTC · {record.implementation_id}\n"
            f"{s.passed} passed, {s.failed} failed, {s.errored} errored, {s.skipped} skipped"
            f" — {record.verdict}"
        )
        columns.append(
            Column(round(x, 2), round(step - gap, 2), tuple(rects), title, record.run_id == current)
        )
        points.append(f"{middle:.2f},{y_pass:.2f}")
    ticks = tuple(
        (round(base - plot_h * value / top, 2), value) for value in sorted({0, top // 2, top})
    )
    return Chart(
        columns=tuple(columns),
        ticks=ticks,
        width=CHART_WIDTH,
        height=CHART_HEIGHT,
        left=CHART_LEFT,
        bottom=base,
        runs=len(runs),
        first_label=_run_label(runs[0]),
        last_label=_run_label(runs[-1]) if len(runs) * step > 220 else "",
        last_x=round(CHART_LEFT + len(runs) * step, 2),
        pass_line=" ".join(points) if len(points) > 1 else "",
        series=tuple(
            Series(label, " ".join(found), number % 6, len(found))
            for number, (label, found) in enumerate(lines.items())
        ),
        partial=tuple(partial),
    )


def _shown(value: Any) -> str:
    if value is MISSING:
        return "nothing"
    return format_value(value, VALUE_LIMIT)


def _diff(expected: str, observed: str) -> tuple[DiffLine, ...]:
    """A unified line diff of two strings, cut after :data:`DIFF_LINES` lines."""
    lines: list[DiffLine] = []
    raw = difflib.unified_diff(
        expected.splitlines(), observed.splitlines(), "expected", "observed", lineterm="", n=3
    )
    for number, line in enumerate(raw):
        if number < 2:
            continue  # the ---/+++ header: the legend says which side is which
        if len(lines) >= DIFF_LINES:
            lines.append(DiffLine("note", "… the rest of the diff is not shown"))
            break
        kind: Literal["add", "del", "ctx", "hunk"]
        if line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "ctx"
        lines.append(DiffLine(kind, line))
    if not lines and expected != observed:
        # Same lines, different line endings or a trailing newline.
        lines.append(DiffLine("note", "the lines are equal; the line endings differ"))
        lines.append(DiffLine("del", "-" + format_value(expected, VALUE_LIMIT)))
        lines.append(DiffLine("add", "+" + format_value(observed, VALUE_LIMIT)))
    return tuple(lines)


def _mismatch(mismatch: Mismatch) -> MismatchView:
    expected, observed = mismatch.expected, mismatch.observed
    if isinstance(expected, str) and isinstance(observed, str):
        return MismatchView(mismatch.path, mismatch.message, _diff(expected, observed), None, None)
    # A missed bound on a measurement reads as people read it (1129 ms), told apart
    # from its bound; every other value is shown exactly.
    shown = shown_mismatch_observed(mismatch) or _shown(observed)
    return MismatchView(mismatch.path, mismatch.message, (), _shown(expected), shown)


NOT_RUN = "not run: "
"""How the reason of a case that never ran begins (its cause follows)."""


def _failures(context: ReportContext) -> tuple[Failure, ...]:
    declared = {case.name: case for case in context.suite.cases}
    file = suite_display_path(context.suite)
    flaky = context.flaky or frozenset()
    failures = []
    bad = [r for r in context.run.results if r.status in (Status.FAIL, Status.ERRORED)]
    first_of_cause: dict[str, str] = {}
    for number, result in enumerate(bad, start=1):
        case = declared.get(result.case_name)
        same_cause_as = ""
        if (result.reason or "").startswith(NOT_RUN):
            same_cause_as = first_of_cause.setdefault(result.reason or "", result.case_name)
            if same_cause_as == result.case_name:
                same_cause_as = ""
        where = file
        if case is not None and case.line:
            where += f":{case.line}"
        if case is not None:
            where += f" [[{CASE_CLASS_TO_ARRAY.get(case.case_class, case.case_class)}]]"
        detailed = number <= DETAILED_FAILURES
        failures.append(
            Failure(
                number=number,
                name=result.case_name,
                status=result.status.value,
                category=result.category,
                case_class=result.case_class,
                where=where,
                reason=_cut(result.reason or ""),
                mismatches=tuple(_mismatch(m) for m in result.mismatches) if detailed else (),
                streams=_streams(result) if detailed and not same_cause_as else (),
                same_cause_as=same_cause_as,
                elapsed_ms=result.elapsed_ms,
                flaky=result.case_name in flaky,
                tags=case.tags if case is not None else (),
                detailed=detailed,
                **_declared(case),
            )
        )
    return tuple(failures)


def _declared(case: Case | None) -> dict[str, str]:
    """A case's input (shortened, and whole when it was cut) and its expect, as TOML."""
    if case is None:
        return {}
    shown = shown_input(case.input)
    whole = "\n".join(table_lines(case.input)) if shown.cut else ""
    return {
        "input": shown.text,
        "input_whole": _cut(whole),
        "expected": _cut("\n".join(table_lines(case.expect))),
    }


def _toml_lines(table: Any) -> str:
    if not isinstance(table, dict):
        return _shown(table)
    return _cut("\n".join(table_lines(table)))


def _observed_lines(observation: Mapping[str, Any], expect: Mapping[str, Any]) -> str:
    """The observation as ``key = value`` lines; a measurement held only to bounds
    (``elapsed_ms``, ``resident_memory_mb``) as people read it, ``elapsed_ms = 1129 ms``,
    told apart from its bounds (:func:`cer.judge.compare.shown_measurement`)."""
    lines = []
    for key, value in observation.items():
        line = table_lines({key: value})[0]
        shown = shown_measurement(str(key), value, expect)
        if shown is not None:  # the key as TOML writes it, then the value for people
            line = f"{line[: len(line) - len(inline(value))]}{shown}"
        lines.append(line)
    return _cut("\n".join(lines))


def _rows(context: ReportContext) -> tuple[tuple[CaseRow, ...], tuple[CaseGroup, ...], int]:
    """Every case (up to :data:`CASE_ROWS`) for the list, and the groups it can be
    narrowed to: each case class and each category present."""
    declared = {case.name: case for case in context.suite.cases}
    file = suite_display_path(context.suite)
    numbers: dict[str, int] = {}
    counts: Counter[str] = Counter()
    results = context.run.results
    for result in results:
        for label in (f"class {result.case_class}", f"category {result.category}"):
            numbers.setdefault(label, len(numbers) + 1)
            counts[label] += 1
    rows = []
    brief_passes = len(results) > FULL_PASSES
    for result in results[:CASE_ROWS]:
        labels = (f"class {result.case_class}", f"category {result.category}")
        classes = " ".join(f"g{numbers[label]}" for label in labels)
        if brief_passes and result.status is Status.PASS:
            rows.append(CaseRow(result.case_name, "pass", "", "", "", "", "", classes, brief=True))
            continue
        case = declared.get(result.case_name)
        where = file + (f":{case.line}" if case is not None and case.line else "")
        rows.append(
            CaseRow(
                name=result.case_name,
                status=result.status.value,
                where=where,
                reason=(result.reason or "").split("\n", 1)[0][:300],
                input="" if case is None else shown_input(case.input).text,
                expected="" if case is None else _toml_lines(dict(case.expect)),
                observed=""
                if result.observation is None
                else _observed_lines(result.observation, {} if case is None else case.expect),
                groups=classes,
            )
        )
    groups = tuple(CaseGroup(number, label, counts[label]) for label, number in numbers.items())
    return tuple(rows), groups, max(0, len(results) - CASE_ROWS)


def _cut(text: str) -> str:
    if len(text) <= TEXT_LIMIT:
        return text
    return (
        f"{text[:TEXT_LIMIT]}\n… {len(text) - TEXT_LIMIT} more characters (the json report has all)"
    )


def _streams(result: CaseResult) -> tuple[tuple[str, str], ...]:
    pairs = (("stdout", result.stdout), ("stderr", result.stderr), ("traceback", result.traceback))
    return tuple((name, _cut(text)) for name, text in pairs if text)


def _coverage(context: ReportContext) -> CoverageView | None:
    coverage = context.coverage
    if coverage is None:
        return None
    statuses = []
    for item in coverage.constraints:
        if not item.covered:
            statuses.append(Status.SKIPPED)
        elif not coverage.evaluated or item.verified:
            statuses.append(Status.PASS)
        else:
            statuses.append(Status.FAIL)
    not_verified = tuple(
        (item.name, ", ".join(f"{name} {status}" for name, status in item.not_passed))
        for item in coverage.constraints
        if item.covered and item.verified is False
    )
    return CoverageView(
        total=coverage.total,
        covered=coverage.covered,
        verified=coverage.verified,
        evaluated=coverage.evaluated,
        bar=_bar("constraints", statuses),
        needs_a_case=tuple((c.name, c.text) for c in coverage.constraints if not c.covered),
        not_verified=not_verified,
        unknown=tuple(reference.message for reference in coverage.unknown),
        problems=tuple(coverage.problems),
        source=coverage.source.name,
    )


def _conditions(context: ReportContext) -> tuple[tuple[str, str], ...]:
    """What the run records about itself, as (label, value) rows."""
    run, suite = context.run, context.suite
    rows = [
        ("target", run.target_module),
        ("target version", suite.target_version or ""),
        ("implementation", run.implementation or run.implementation_id.split("@")[0]),
        ("implementation id", run.implementation_id),
        ("suite", suite_display_path(suite)),
        ("suite sha256", run.suite_hash or suite.content_hash),
        ("format version", run.format_version or suite.format_version),
        ("run id", run.run_id),
        ("started", iso_time(run.started_at_ms)),
        ("completed", iso_time(run.completed_at_ms)),
        ("history", "not used" if context.flaky is None else "recorded"),
    ]
    conditions = run.conditions
    if conditions is None:
        rows.append(("conditions", "not recorded (a run from before cer recorded them)"))
    else:
        remaps = ", ".join(f"{name} → {model}" for name, model in conditions.category_remaps)
        rows += [
            ("isolation", conditions.isolation),
            ("sandbox", conditions.sandbox),
            ("network", conditions.network),
            ("timeout per case", f"{conditions.timeout:g} s"),
            ("workers", str(conditions.jobs)),
            ("category remaps", remaps),
            ("cer version", conditions.cer_version),
            ("python version", conditions.python_version),
            ("memory measured by", conditions.memory),
            ("selection", conditions.selection.describe()),
            ("platform", conditions.platform),
            ("import paths lent (--path)", ", ".join(conditions.paths)),
            ("sandbox reads lent (--sandbox-read)", ", ".join(conditions.sandbox_read)),
            (
                "baseline",
                f"{conditions.baseline} (sha256 {conditions.baseline_sha256})"
                if conditions.baseline
                else "",
            ),
            ("coverage required", "yes" if conditions.require_coverage else "no"),
        ]
    return tuple((label, value) for label, value in rows if value)


def _baseline(check: BaselineCheck | None) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The baseline section: regressions first, then stale entries, then the known
    failures (the case names come from the suite, the reasons from the baseline)."""
    if check is None:
        return ()
    return (
        (
            f"regressions ({len(check.regressions)})",
            tuple(f"{r.case_name}: {r.status}, {r.why}" for r in check.regressions),
        ),
        (
            f"stale entries ({len(check.stale)}): the case passes, remove it from the baseline",
            tuple(f"{s.case_name} (line {s.entry.line})" for s in check.stale),
        ),
        (
            f"known failures ({len(check.known)})",
            tuple(f"{k.case_name}: {k.status}, {k.entry.reason}" for k in check.known),
        ),
    )


def page_model(context: ReportContext) -> Page:
    """What the page shows, computed from the context (no markup)."""
    run = context.run
    skipped = Counter(r.reason or "" for r in run.results if r.status is Status.SKIPPED)
    flaky = context.flaky or frozenset()
    target = run.target_module
    if context.suite.target_version:
        target += f" {context.suite.target_version}"
    rows, case_groups, rows_cut = _rows(context)
    history_note = ""
    records = context.history
    if not records:
        history_note = "No recorded runs: run with the history on to see the trend."
    elif all(record.run_id != run.run_id for record in records):
        history_note = "This run is not among the recorded runs shown."
    verdict = context.verdict()
    return Page(
        title=f"{target} · {run.implementation_id} · {verdict.statement}",
        target=target,
        implementation=run.implementation_id,
        verdict=verdict.word,
        statement=verdict.statement,
        baseline=_baseline(verdict.baseline),
        seconds=(run.completed_at_ms - run.started_at_ms) / 1000,
        overall=_bar("all cases", (r.status for r in run.results)),
        groups=_groups(context),
        chart=_chart(
            records, run.run_id, run.implementation or run.implementation_id.partition("@")[0]
        ),
        history_note=history_note,
        failures=_failures(context),
        rows=rows,
        case_groups=case_groups,
        rows_cut=rows_cut,
        skipped=tuple(sorted(skipped.items(), key=lambda item: (-item[1], item[0]))),
        flaky=tuple(r.case_name for r in run.results if r.case_name in flaky),
        coverage=_coverage(context),
        conditions=_conditions(context),
        notes=run.notes,
        generated=datetime.now(tz=UTC).isoformat(timespec="seconds"),
        version=__version__,
    )


# --- rendering --------------------------------------------------------------------------


def _finalize(value: Any) -> Any:
    """Applied to every ``{{ value }}`` before autoescaping: None prints nothing, text
    is made :func:`visible`."""
    from markupsafe import Markup

    if value is None:
        return ""
    if isinstance(value, Markup):
        return value
    return visible(str(value))


@functools.cache
def _environment() -> Environment:
    from jinja2 import Environment, PackageLoader, StrictUndefined

    return Environment(
        loader=PackageLoader("cer.reports", "templates"),
        autoescape=True,
        finalize=_finalize,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render(context: ReportContext) -> str:
    """The run as one self-contained HTML page; ImportError without Jinja2."""
    page = page_model(context)
    text = (
        _environment()
        .get_template(TEMPLATE)
        .render(
            page=page,
            words=WORDS,
            Status=Status,
            detailed_failures=DETAILED_FAILURES,
            full_passes=f"{FULL_PASSES:,}",
        )
    )
    return text if text.endswith("\n") else text + "\n"
