"""The HTML page of a matrix: several implementations of one suite, to share.

One self-contained page, as the single-run page (:mod:`cer.reports.html`) is: inline
CSS and SVG, no script, a Content-Security-Policy that forbids loading anything, Jinja2
with autoescaping and every value made :func:`~cer.reports.html.visible` first. At the
top the ranking (a bar and the share passed per implementation) and what each
implementation is; then every case as a row of status chips, narrowed with radio
buttons and CSS alone (only what one implementation fails, errors or knows to fail,
only the disagreements, one tag or array), each opening onto its description, input,
expectation and, per implementation, its status, reason, observation, captured output
and known-failure entry. Everything the implementations said is untrusted text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from cer import __version__
from cer.model import CaseResult, ImplementationOrigin, Suite
from cer.reports import html
from cer.reports.context import suite_display_path
from cer.results.matrix import STATES, Agreement, GroupBy, Matrix, Row, describe_agree_on

__all__ = ["TEMPLATE", "page_model", "render"]

TEMPLATE = "matrix.html.j2"
CASE_ROWS = 20_000
"""Cases the page lists; past them it says how many it left out."""
FULL_CELLS = 2_000
"""Matrices of up to this many cells (cases times implementations) show every case
whole; a larger one lists the cases every implementation passed alike by name, one
line each (disagreements, failures, errors and skips stay whole), so that the page of
700 cases by 12 implementations stays a few megabytes: the json document has the
values of every cell."""
_VERBS = {"fail": "fails", "errored": "errors on", "known": "knows to fail", "skipped": "skips"}
WORDS = {"pass": "pass", "fail": "fail", "errored": "error", "skipped": "skip", "known": "known"}


@dataclass(frozen=True)
class Segment:
    state: str
    x: float
    width: float
    count: int


@dataclass(frozen=True)
class Standing:
    rank: int
    label: str
    percent: str
    counts: tuple[tuple[str, int], ...]
    segments: tuple[Segment, ...]
    summary: str


@dataclass(frozen=True)
class Implementation:
    number: int
    label: str
    implementation_id: str
    origin: str
    verdict: str


@dataclass(frozen=True)
class Cell:
    label: str
    state: str
    word: str
    reason: str
    observed: str
    streams: tuple[tuple[str, str], ...]
    known_reason: str
    known_link: str


@dataclass(frozen=True)
class Case:
    name: str
    array: str
    category: str
    description: str
    tags: str
    where: str
    input: str
    expected: str
    agreement: str
    classes: str
    cells: tuple[Cell, ...]
    brief: bool = False
    """Every implementation passed it alike in a large matrix (:data:`FULL_CELLS`):
    shown by its name alone."""


@dataclass(frozen=True)
class Filter:
    id: str
    text: str
    selector: str
    """The class a row must have to stay shown."""


@dataclass(frozen=True)
class Page:
    title: str
    suite: str
    suite_hash: str
    agree_on: str
    summary: str
    implementations: tuple[Implementation, ...]
    ranking: tuple[Standing, ...]
    filters: tuple[Filter, ...]
    groups: tuple[Filter, ...]
    cases: tuple[Case, ...]
    cut: int
    version: str
    generated: str
    brief: bool = False
    """Whether some cases are listed by name alone (:data:`FULL_CELLS`)."""


def _segments(counts: Sequence[tuple[str, int]]) -> tuple[Segment, ...]:
    total = sum(n for _, n in counts)
    out: list[Segment] = []
    x = 0.0
    for state, n in counts:
        if not n:
            continue
        width = max(n * 1000 / total, 4.0)  # one failure in thousands still shows
        out.append(Segment(state, round(x, 2), round(width, 2), n))
        x += width
    if out and x > 1000:  # the widened parts take their room from the widest
        widest = max(out, key=lambda s: s.width)
        scale = (widest.width - (x - 1000)) / widest.width
        fixed, x = [], 0.0
        for s in out:
            width = s.width * scale if s is widest else s.width
            fixed.append(Segment(s.state, round(x, 2), round(width, 2), s.count))
            x += width
        out = fixed
    return tuple(out)


def _origin(origin: ImplementationOrigin | None) -> str:
    if origin is None:
        return ""
    said = " (as the harness declared itself)" if origin.source == "harness" else ""
    return f"{origin.name} {origin.version}{said}"


def _cell(row: Row, index: int, label: str, result: CaseResult | None, matrix: Matrix) -> Cell:
    state = row.states[index] if row.states else None
    if result is None or state is None:
        return Cell(label, "none", "no result", "", "", (), "", "")
    known = matrix.columns[index].known.get(row.case_name) if state == "known" else None
    observed = "" if result.observation is None else html._toml_lines(dict(result.observation))
    return Cell(
        label=label,
        state=state,
        word=WORDS[state],
        reason=html._cut(result.reason or ""),
        observed=observed,
        streams=html._streams(result),
        known_reason="" if known is None else known.reason,
        known_link="" if known is None or known.link is None else known.link,
    )


def page_model(matrix: Matrix, suite: Suite, statements: Sequence[str] | None = None) -> Page:
    """The page of ``matrix`` over ``suite``; ``statements`` are the runs' verdict
    sentences in column order (their summaries' verdicts by default)."""
    cases_by_name = {case.name: case for case in suite.cases}
    implementations = tuple(
        Implementation(
            number=index,
            label=column.label,
            implementation_id=column.implementation_id,
            origin=_origin(column.run.origin),
            verdict=statements[index] if statements else column.summary.verdict,
        )
        for index, column in enumerate(matrix.columns)
    )
    order = ("pass", "known", "fail", "errored", "skipped")
    ranking = []
    for standing in matrix.ranking:
        counts = tuple((state, standing.count(state)) for state in order)  # type: ignore[arg-type]
        ranking.append(
            Standing(
                standing.rank,
                standing.label,
                f"{standing.percent:.1f}%",
                counts,
                _segments(counts),
                ", ".join(f"{n} {WORDS[s]}" for s, n in counts if n),
            )
        )
    filters = [
        Filter("f-all", "every case", "row"),
        Filter("f-disagree", f"disagreements ({len(matrix.disagreements)})", "disagree"),
    ]
    if matrix.words_differ:
        filters.append(
            Filter(
                "f-worded", f"same verdict, different words ({len(matrix.words_differ)})", "worded"
            )
        )
    for index, column in enumerate(matrix.columns):
        for state in ("fail", "errored", "known", "skipped"):
            count = sum(1 for row in matrix.rows if row.states and row.states[index] == state)
            if count:
                text = f"only what {column.label} {_VERBS[state]} ({count})"
                filters.append(Filter(f"f-{index}-{state}", text, f"c{index}-{state}"))
    groups = [Filter("g-all", "every group", "row")]
    numbers: dict[str, int] = {}
    kinds: tuple[GroupBy, ...] = ("array", "tag")
    for by in kinds:
        for name, rows in matrix.grouped(by):
            key = f"{by}:{name}"
            numbers[key] = len(numbers)
            shown = f"[[{name}]]" if by == "array" else f"tag {name}"
            groups.append(Filter(f"g-{numbers[key]}", f"{shown} ({len(rows)})", f"g{numbers[key]}"))
    cases = []
    large = len(matrix.rows) * len(matrix.columns) > FULL_CELLS
    for row in matrix.declared[:CASE_ROWS]:
        case = cases_by_name.get(row.case_name)
        classes = ["row"]
        if row.agreement is Agreement.DISAGREE:
            classes.append("disagree")
        if row.words_differ:
            classes.append("worded")
        classes += [f"c{i}-{state}" for i, state in enumerate(row.states) if state is not None]
        classes.append(f"g{numbers[f'array:{row.array}']}")
        classes += [f"g{numbers[f'tag:{tag}']}" for tag in row.tags if f"tag:{tag}" in numbers]
        if not row.tags and "tag:(no tag)" in numbers:
            classes.append(f"g{numbers['tag:(no tag)']}")
        if (
            large
            and row.agreement is Agreement.AGREE
            and not row.words_differ
            and row.states
            and all(state == "pass" for state in row.states)
        ):
            brief = Case(row.case_name, row.array, row.category, "", "", "", "", "", "", "", ())
            cases.append(replace(brief, classes=" ".join(classes), brief=True))
            continue
        where = suite_display_path(suite)
        if case is not None and case.line:
            where += f":{case.line}"
        cases.append(
            Case(
                name=row.case_name,
                array=row.array,
                category=row.category,
                description=row.description or "",
                tags=", ".join(row.tags),
                where=f"{where} [[{row.array}]]",
                input=html._toml_lines(dict(row.input)),
                expected="" if case is None else html._toml_lines(dict(case.expect)),
                agreement={
                    Agreement.DISAGREE: "≠ differ",
                    Agreement.ALL_ERRORED: "‼ all errored",
                }.get(row.agreement, "worded differently" if row.words_differ else ""),
                classes=" ".join(classes),
                cells=tuple(
                    _cell(row, i, label, cell, matrix)
                    for i, (label, cell) in enumerate(zip(matrix.labels, row.cells, strict=True))
                ),
            )
        )
    target = matrix.columns[0].run.target_module
    if suite.target_version:
        target += f" {suite.target_version}"
    worded = len(matrix.words_differ)
    summary = (
        f"{len(matrix.columns)} implementations × {len(matrix.rows)} cases · "
        f"{len(matrix.disagreements)} disagreements"
        + (f", {worded} worded differently" if worded else "")
        + (f" · {len(matrix.all_errored)} all errored" if matrix.all_errored else "")
    )
    return Page(
        title=f"{target} · {len(matrix.columns)} implementations",
        suite=suite_display_path(suite),
        suite_hash=suite.content_hash,
        agree_on=describe_agree_on(matrix.agree_on),
        summary=summary,
        implementations=implementations,
        ranking=tuple(ranking),
        filters=tuple(filters),
        groups=tuple(groups),
        cases=tuple(cases),
        cut=max(len(matrix.rows) - CASE_ROWS, 0),
        brief=any(case.brief for case in cases),
        version=__version__,
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
    )


def render(matrix: Matrix, suite: Suite, statements: Sequence[str] | None = None) -> str:
    """The matrix as one self-contained HTML page; ImportError without Jinja2."""
    page = page_model(matrix, suite, statements)
    text = html._environment().get_template(TEMPLATE).render(page=page, states=STATES)
    return text if text.endswith("\n") else text + "\n"
