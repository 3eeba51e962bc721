"""Several implementations side by side: the matrix of statuses and where they disagree.

A matrix is built from one :class:`~cer.model.RunResult` per implementation, all of the
same suite. Each row is one case of the suite and holds each implementation's result;
each column is one implementation with its totals. Beside the verdicts, which compare
every implementation with the suite's expectation, the matrix compares the
implementations with *each other*: a row whose implementations observed different
things is a disagreement, whatever the suite expects, because a divergence between
implementations generated from the same module document is exactly what its author
needs to see, even when the expectation is missing or wrong.

By default implementations are compared on what the case asks about: the keys of its
``expect`` table and the verdict. A literal key is compared strictly
(:func:`cer.judge.equality.values_equal`: ``1`` is not ``1.0``); an operator key
(``error_includes``, ``elapsed_ms_max``) by whether it held. Two parsers that reject the
same input with differently worded errors agree; such a row is counted apart as *same
verdict, different words* (:attr:`Row.words_differ`), so the divergence stays visible
without drowning the ones that matter. ``agree_on`` chooses other keys, or ``all``: the
whole observation, without ``elapsed_ms`` (the runner's own measurement, different on
every call). A time bound that one implementation meets and another misses always
shows, as a difference of status.

Everything here is a frozen value computed from runs; nothing is run, printed or
imported from a user interface, so ``cer run`` and the terminal UI show the same matrix.
See docs/matrix.md.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from cer.engine.kinds import kind_of_id
from cer.judge.compare import compare, is_operator_key
from cer.judge.equality import values_equal
from cer.model import (
    CASE_CLASS_TO_ARRAY,
    MISSING,
    CaseResult,
    RunResult,
    Status,
    Suite,
    Summary,
)
from cer.results import serialize
from cer.results.labels import implementation_labels
from cer.results.labels import short_label as short_label  # importable from here as before
from cer.results.labels import unique_labels as unique_labels

IGNORED_KEYS: frozenset[str] = frozenset({"elapsed_ms"})
"""Observation keys left out when implementations are compared with each other."""

NO_TAG = "(no tag)"
"""The group of untagged cases when rows are grouped by tag."""

AGREE_ON_EXPECTED = "expected"
"""Compare on the keys of each case's ``expect`` table and the verdict (the default)."""
AGREE_ON_ALL = "all"
"""Compare whole observations (without :data:`IGNORED_KEYS`) and the verdict."""
AgreeOn = str | tuple[str, ...]
""":data:`AGREE_ON_EXPECTED`, :data:`AGREE_ON_ALL`, or the observation keys to compare."""


class Agreement(enum.StrEnum):
    """How the implementations' results for one case relate to each other."""

    AGREE = "agree"
    """Every implementation that ran the case observed the same thing, with the same
    status."""
    DISAGREE = "disagree"
    """They observed different things, or the same thing with different statuses."""
    ALL_ERRORED = "all_errored"
    """Every implementation that ran the case errored without an observation: they
    agree on the status, but there is nothing to compare."""
    NOT_COMPARED = "not_compared"
    """Fewer than two implementations ran the case (the others skipped it)."""


CellState = Literal["pass", "fail", "errored", "skipped", "known"]
"""What a cell shows: its status, or ``known`` for a failure (or error) the
implementation's baseline lists as such. A known failure is never a pass."""
STATES: tuple[CellState, ...] = ("pass", "fail", "errored", "skipped", "known")
GroupBy = Literal["tag", "array"]


@dataclass(frozen=True)
class Known:
    """A baseline entry that lists an implementation's failure of a case: why, and
    where to read more."""

    reason: str
    link: str | None = None


@dataclass(frozen=True)
class Column:
    """One implementation: its label and its run."""

    label: str
    run: RunResult
    observed: bool = True
    """False when every case it ran errored with nothing observed (it could not be
    loaded or started, say): such a column is left out of the agreement comparison, or
    every row would disagree with it. Its cells still show its errors."""
    known: Mapping[str, Known] = field(default_factory=dict)
    """Case name → the baseline entry, for the cases this implementation failed (or
    errored) exactly as its baseline lists them (:func:`cer.results.baseline.check_run`)."""

    @property
    def implementation_id(self) -> str:
        return self.run.implementation_id

    @property
    def summary(self) -> Summary:
        return self.run.summary


@dataclass(frozen=True)
class Group:
    """Implementations that observed the same thing for a case, with the same status."""

    labels: tuple[str, ...]
    status: Status
    observation: Mapping[str, Any] | None
    """The observation as compared (without :data:`IGNORED_KEYS`); None when nothing was
    observed (the case errored)."""
    reasons: tuple[str | None, ...]
    """Each implementation's reason, in the order of ``labels``."""


@dataclass(frozen=True)
class Row:
    """One case of the suite across every implementation."""

    case_name: str
    position: int
    case_class: str
    category: str
    cells: tuple[CaseResult | None, ...]
    """Each implementation's result, in column order; None when its run has no result
    for the case."""
    agreement: Agreement
    groups: tuple[Group, ...]
    """The implementations that ran the case, grouped by what they observed; the group of
    the first column first. Empty when none ran it."""
    differing_keys: tuple[str, ...]
    """Observation keys whose values differ between groups, sorted."""
    expect_empty: bool = False
    """The suite states no expectation for the case."""
    words_differ: bool = False
    """The implementations agree on what is compared (the verdict and the compared keys)
    yet their whole observations differ: *same verdict, different words*, an error
    message worded otherwise, say. Never true of a disagreement."""
    description: str | None = None
    tags: tuple[str, ...] = ()
    input: Mapping[str, Any] = field(default_factory=dict)
    """The case's input, as the suite states it."""
    states: tuple[CellState | None, ...] = ()
    """Each cell's state, in column order (:data:`CellState`); None where the run has
    no result."""

    @property
    def array(self) -> str:
        """The suite's array the case is declared in: ``cases``, ``adversarial``…"""
        return CASE_CLASS_TO_ARRAY.get(self.case_class, self.case_class)

    @property
    def statuses(self) -> tuple[Status | None, ...]:
        return tuple(None if cell is None else cell.status for cell in self.cells)

    @property
    def failing(self) -> bool:
        """Some implementation failed or errored the case."""
        return any(s in (Status.FAIL, Status.ERRORED) for s in self.statuses)

    @property
    def disagrees(self) -> bool:
        return self.agreement is Agreement.DISAGREE

    @property
    def all_passed(self) -> bool:
        return all(s is Status.PASS for s in self.statuses)

    @property
    def deselected(self) -> bool:
        """Every implementation skipped it as deselected: the row says nothing."""
        return all(
            cell is not None and cell.status is Status.SKIPPED and cell.reason == "deselected"
            for cell in self.cells
        )

    @property
    def rank(self) -> int:
        """Display order: 0 failing or disagreeing, 1 otherwise not all passed, 2 all
        passed, 3 deselected everywhere."""
        if self.failing or self.disagrees:
            return 0
        if self.deselected:
            return 3
        if not self.all_passed:
            return 1
        return 2


@dataclass(frozen=True)
class Standing:
    """One implementation's place in the ranking, with its counts."""

    rank: int
    label: str
    passed: int
    failed: int
    """Failed cases its baseline does not list (``known`` counts the others)."""
    errored: int
    """Errored cases its baseline does not list."""
    skipped: int
    known: int
    total: int

    @property
    def unsuccessful(self) -> int:
        """Cases it did not pass and ran: failed, errored and known failures alike."""
        return self.failed + self.errored + self.known

    @property
    def percent(self) -> float:
        """Passed cases as a share of all, rounded down to a tenth: 99.96 is 99.9, so
        only an implementation that passed everything shows 100.0."""
        if not self.total:
            return 0.0
        return (self.passed * 1000 // self.total) / 10

    def count(self, state: CellState) -> int:
        return {
            "pass": self.passed,
            "fail": self.failed,
            "errored": self.errored,
            "skipped": self.skipped,
            "known": self.known,
        }[state]


@dataclass(frozen=True)
class Matrix:
    """Cases by implementations."""

    columns: tuple[Column, ...]
    rows: tuple[Row, ...]
    """Failing and disagreeing cases first, then cases not passed everywhere, then cases
    passed everywhere, then cases deselected everywhere; declared order within each."""
    agree_on: AgreeOn = AGREE_ON_EXPECTED
    """What the implementations were compared on, beside the verdict."""

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(column.label for column in self.columns)

    @property
    def unobserved(self) -> tuple[str, ...]:
        """Labels of the columns left out of the comparison (see Column.observed)."""
        return tuple(column.label for column in self.columns if not column.observed)

    @property
    def totals(self) -> Mapping[str, Summary]:
        """Each implementation's counts, by label."""
        return {column.label: column.summary for column in self.columns}

    @cached_property
    def declared(self) -> tuple[Row, ...]:
        """The rows in the suite's declared order."""
        return tuple(sorted(self.rows, key=lambda row: row.position))

    @cached_property
    def disagreements(self) -> tuple[Row, ...]:
        """Cases the implementations observed differently, in declared order."""
        return tuple(row for row in self.declared if row.agreement is Agreement.DISAGREE)

    @cached_property
    def ranking(self) -> tuple[Standing, ...]:
        """The implementations by fewest unsuccessful cases (failed, errored, known
        failures), then fewest skipped, then column order."""
        counted = []
        for index, column in enumerate(self.columns):
            states = [row.states[index] for row in self.rows if row.states]
            counts = {state: states.count(state) for state in STATES}
            counted.append((index, column.label, counts, len(self.rows)))
        counted.sort(
            key=lambda item: (
                item[2]["fail"] + item[2]["errored"] + item[2]["known"],
                item[2]["skipped"],
                item[0],
            )
        )
        return tuple(
            Standing(
                rank,
                label,
                counts["pass"],
                counts["fail"],
                counts["errored"],
                counts["skipped"],
                counts["known"],
                total,
            )
            for rank, (_, label, counts, total) in enumerate(counted, 1)
        )

    def grouped(self, by: GroupBy) -> tuple[tuple[str, tuple[Row, ...]], ...]:
        """The rows (in display order) grouped as the suite groups its cases: by the
        array each is declared in (in the suite's order of arrays), or by tag (sorted;
        a case is under each of its tags, and untagged cases last under ``(no tag)``)."""
        groups: dict[str, list[Row]] = {}
        if by == "array":
            for array in CASE_CLASS_TO_ARRAY.values():
                groups[array] = []
            for row in self.rows:
                groups.setdefault(row.array, []).append(row)
        else:
            untagged: list[Row] = []
            for row in self.rows:
                for tag in row.tags:
                    groups.setdefault(tag, []).append(row)
                if not row.tags:
                    untagged.append(row)
            groups = dict(sorted(groups.items()))
            groups[NO_TAG] = untagged
        return tuple((name, tuple(rows)) for name, rows in groups.items() if rows)

    @cached_property
    def words_differ(self) -> tuple[Row, ...]:
        """Cases with the same verdict and compared keys everywhere but differently
        worded observations, in declared order."""
        return tuple(row for row in self.declared if row.words_differ)

    @cached_property
    def all_errored(self) -> tuple[Row, ...]:
        """Cases every implementation that ran them errored, in declared order."""
        return tuple(row for row in self.declared if row.agreement is Agreement.ALL_ERRORED)

    @cached_property
    def _by_name(self) -> Mapping[str, Row]:
        return {row.case_name: row for row in self.rows}

    def row(self, case_name: str) -> Row:
        """The row of ``case_name``; KeyError when the suite has no such case."""
        return self._by_name[case_name]

    def cell(self, case_name: str, label: str) -> CaseResult | None:
        """One implementation's result for one case; KeyError for an unknown label."""
        if label not in self.labels:
            raise KeyError(label)
        return self.row(case_name).cells[self.labels.index(label)]


def comparable(observation: Mapping[str, Any]) -> dict[str, Any]:
    """An observation as implementations are compared: without :data:`IGNORED_KEYS`."""
    return {key: value for key, value in observation.items() if key not in IGNORED_KEYS}


def _observed_nothing(cell: CaseResult | None) -> bool:
    return cell is not None and cell.status is Status.ERRORED and cell.observation is None


def _ran(cell: CaseResult | None) -> bool:
    return cell is not None and cell.status is not Status.SKIPPED


@dataclass(frozen=True)
class _Held:
    """Whether an operator key of ``expect`` held: what is compared of it."""

    held: bool


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, _Held) or isinstance(b, _Held):
        return isinstance(a, _Held) and isinstance(b, _Held) and a.held == b.held
    if a is MISSING or b is MISSING:
        return a is b
    return values_equal(a, b)


def _compared(
    observation: Mapping[str, Any] | None, expect: Mapping[str, Any], agree_on: AgreeOn
) -> dict[str, Any] | None:
    """What of ``observation`` is compared: the whole of it (``all``), or each chosen key
    (the case's expected keys by default, all of it when it expects nothing): its
    observed value, or for an operator key of ``expect`` the observation lacks, whether
    that expectation held."""
    if observation is None:
        return None
    if agree_on == AGREE_ON_ALL or (agree_on == AGREE_ON_EXPECTED and not expect):
        return comparable(observation)  # a case that asks nothing: all of it
    keys = [k for k in expect if isinstance(k, str)] if agree_on == AGREE_ON_EXPECTED else agree_on
    out: dict[str, Any] = {}
    for key in keys:
        if key in IGNORED_KEYS:
            continue
        if key in observation:
            out[key] = observation[key]
        elif is_operator_key(key) and key in expect:
            out[key] = _Held(not compare({key: expect[key]}, observation))
        else:
            out[key] = MISSING
    return out


def _same_compared(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a.keys() == b.keys() and all(_same(a[key], b[key]) for key in a)


def _group(
    columns: Sequence[Column],
    cells: Sequence[CaseResult | None],
    expect: Mapping[str, Any] | None = None,
    agree_on: AgreeOn = AGREE_ON_ALL,
) -> tuple[tuple[Group, ...], bool]:
    """Cells that ran, grouped by status and what is compared of their observations
    (:func:`_compared`); the cells of unobserved columns are left out. The second value
    says whether some group holds observations that differ outside what is compared."""
    found: list[
        tuple[Status, dict[str, Any] | None, dict[str, Any] | None, list[str], list[str | None]]
    ] = []
    worded = False
    for column, cell in zip(columns, cells, strict=True):
        label = column.label
        if cell is None or cell.status is Status.SKIPPED or not column.observed:
            continue
        observed = None if cell.observation is None else comparable(cell.observation)
        key = _compared(cell.observation, expect or {}, agree_on)
        for status, seen, seen_key, members, reasons in found:
            if status is cell.status and _same_compared(seen_key, key):
                members.append(label)
                reasons.append(cell.reason)
                if seen is not None and observed is not None and not values_equal(seen, observed):
                    worded = True
                break
        else:
            found.append((cell.status, observed, key, [label], [cell.reason]))
    groups = tuple(
        Group(tuple(members), status, seen, tuple(reasons))
        for status, seen, _, members, reasons in found
    )
    return groups, worded


def _differing_keys(groups: Sequence[Group]) -> tuple[str, ...]:
    return differing_keys([group.observation for group in groups if group.observation is not None])


def differing_keys(observed: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """Keys whose values are not strictly the same in every observation, sorted."""
    if len(observed) < 2:
        return ()
    keys: set[str] = set()
    for observation in observed:
        keys.update(observation)
    differing = []
    for key in keys:
        first = observed[0].get(key, MISSING)
        for other in observed[1:]:
            value = other.get(key, MISSING)
            if (first is MISSING) != (value is MISSING) or (
                first is not MISSING and not values_equal(first, value)
            ):
                differing.append(key)
                break
    return tuple(sorted(differing))


def _agreement(groups: Sequence[Group]) -> Agreement:
    if sum(len(group.labels) for group in groups) < 2:
        return Agreement.NOT_COMPARED
    if len(groups) > 1:
        return Agreement.DISAGREE
    (only,) = groups
    if only.observation is None and only.status is Status.ERRORED:
        return Agreement.ALL_ERRORED
    return Agreement.AGREE


def _state(cell: CaseResult | None, column: Column) -> CellState | None:
    if cell is None:
        return None
    if cell.status in (Status.FAIL, Status.ERRORED) and cell.case_name in column.known:
        return "known"
    return cell.status.value


def parse_agree_on(text: str) -> AgreeOn:
    """``--agree-on``: ``expected``, ``all``, or observation keys separated by commas;
    ValueError naming what is wrong."""
    words = [word.strip() for word in text.split(",")]
    if words == [AGREE_ON_EXPECTED] or words == [AGREE_ON_ALL]:
        return words[0]
    if any(not word for word in words):
        raise ValueError(f"an empty key in {text!r}")
    if AGREE_ON_EXPECTED in words or AGREE_ON_ALL in words:
        raise ValueError(f"'expected' and 'all' stand alone, got {text!r}")
    ignored = sorted(set(words) & IGNORED_KEYS)
    if ignored:
        raise ValueError(
            f"{ignored[0]} is the runner's measurement, never compared (a time bound "
            "met by one and missed by another already differs in status)"
        )
    return tuple(dict.fromkeys(words))


def describe_agree_on(agree_on: AgreeOn) -> str:
    """``the expected keys and the verdict``: what a report says was compared."""
    if agree_on == AGREE_ON_EXPECTED:
        return "the expected keys and the verdict"
    if agree_on == AGREE_ON_ALL:
        return "whole observations and the verdict"
    return f"{', '.join(agree_on)} and the verdict"


def build_matrix(
    suite: Suite,
    runs: Sequence[RunResult],
    labels: Sequence[str] | None = None,
    *,
    agree_on: AgreeOn = AGREE_ON_EXPECTED,
    known: Sequence[Mapping[str, Known] | None] | None = None,
) -> Matrix:
    """The matrix of ``runs`` (one per implementation) over the cases of ``suite``.

    ``labels`` name the columns (default: :func:`labels_for_runs`). Implementations are
    compared on ``agree_on`` and the verdict (:func:`parse_agree_on`). ``known`` holds,
    per run, the cases it failed as its baseline lists them (their cells are ``known``,
    never ``pass``). A column whose every case errored with nothing observed is left
    out of the comparison (Column.observed).
    Results are matched
    to cases by name; a run without a result for a case has None in that cell (a run
    still in progress, say), and results for cases the suite does not declare are not
    shown. ValueError when there is no run, or the labels do not fit the runs.
    """
    if not runs:
        raise ValueError("a matrix needs at least one run")
    names = tuple(labels) if labels is not None else labels_for_runs(runs)
    if len(names) != len(runs):
        raise ValueError(f"{len(names)} labels for {len(runs)} runs")
    if len(set(names)) != len(names):
        raise ValueError(f"labels must be unique: {', '.join(names)}")
    by_name = [{result.case_name: result for result in run.results} for run in runs]
    table = [tuple(results.get(case.name) for results in by_name) for case in suite.cases]

    def observed(index: int) -> bool:
        ran = [cells[index] for cells in table if _ran(cells[index])]
        return not ran or not all(_observed_nothing(cell) for cell in ran)

    listed = list(known) if known is not None else [None] * len(runs)
    if len(listed) != len(runs):
        raise ValueError(f"{len(listed)} known-failure lists for {len(runs)} runs")
    columns = tuple(
        Column(label, run, observed=observed(index), known=dict(listed[index] or {}))
        for index, (label, run) in enumerate(zip(names, runs, strict=True))
    )
    rows = []
    for case, cells in zip(suite.cases, table, strict=True):
        groups, worded = _group(columns, cells, case.expect, agree_on)
        agreement = _agreement(groups)
        rows.append(
            Row(
                case_name=case.name,
                position=case.position,
                case_class=case.case_class,
                category=case.category,
                cells=cells,
                agreement=agreement,
                groups=groups,
                differing_keys=_differing_keys(groups),
                expect_empty=not case.expect,
                words_differ=worded and agreement is Agreement.AGREE,
                description=case.description,
                tags=tuple(case.tags),
                input=case.input,
                states=tuple(
                    _state(cell, column) for cell, column in zip(cells, columns, strict=True)
                ),
            )
        )
    rows.sort(key=lambda row: (row.rank, row.position))
    return Matrix(columns, tuple(rows), agree_on)


# ---------------------------------------------------------------------------- labels


def _kind_of(run: RunResult) -> str:
    return kind_of_id(run.implementation_id, run.implementation).name


def labels_for_runs(runs: Sequence[RunResult]) -> tuple[str, ...]:
    """Unique short labels for runs, from what each run's implementation was named."""
    return implementation_labels(
        [(_kind_of(run), run.implementation or run.implementation_id) for run in runs]
    )


# ------------------------------------------------------------------------------ JSON

FORMAT = "cer-matrix"
FORMAT_VERSION = 1


def _case_fields(row: Row) -> dict[str, Any]:
    return {
        "case_name": row.case_name,
        "position": row.position,
        "case_class": row.case_class,
        "category": row.category,
    }


def _known_fields(matrix: Matrix, row: Row) -> dict[str, Any]:
    return {
        column.label: {"reason": entry.reason, "link": entry.link}
        for column, state in zip(matrix.columns, row.states, strict=True)
        if state == "known" and (entry := column.known.get(row.case_name)) is not None
    }


def ranking_to_dict(matrix: Matrix) -> list[dict[str, Any]]:
    """The ranking as JSON-ready data (the ``ranking`` list of the document)."""
    return [
        {
            "rank": standing.rank,
            "label": standing.label,
            "passed": standing.passed,
            "failed": standing.failed,
            "errored": standing.errored,
            "skipped": standing.skipped,
            "known": standing.known,
            "unsuccessful": standing.unsuccessful,
            "percent": standing.percent,
        }
        for standing in matrix.ranking
    ]


def matrix_to_dict(
    matrix: Matrix, suite: Suite, run_documents: Sequence[Mapping[str, Any]] | None = None
) -> dict[str, Any]:
    """The ``cer run --format json`` document of several implementations (docs/matrix.md).

    ``run_documents`` are the runs' own results documents in column order (the shape of
    a single run's ``--format json``); by default :func:`cer.results.serialize.run_to_dict`.
    Cases and agreement lists are in declared order.
    """
    if run_documents is None:
        run_documents = [serialize.run_to_dict(column.run) for column in matrix.columns]
    if len(run_documents) != len(matrix.columns):
        raise ValueError("one run document per implementation")
    declared = matrix.declared
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "suite": {
            "path": str(suite.path),
            "hash": suite.content_hash,
            "format_version": suite.format_version,
            "target_module": suite.target_module,
        },
        "implementations": [
            {
                "label": column.label,
                "compared": column.observed,
                "implementation": column.run.implementation,
                "implementation_id": column.implementation_id,
                "origin": None if column.run.origin is None else column.run.origin.to_dict(),
                "run_id": column.run.run_id,
                # the word its run's document states (decided with its coverage and scope)
                "summary": {
                    **serialize.summary_to_dict(column.summary),
                    "verdict": document["summary"]["verdict"],
                },
            }
            for column, document in zip(matrix.columns, run_documents, strict=True)
        ],
        "ranking": ranking_to_dict(matrix),
        "runs": [dict(document) for document in run_documents],
        "cases": [
            {
                **_case_fields(row),
                "statuses": {
                    label: None if status is None else status.value
                    for label, status in zip(matrix.labels, row.statuses, strict=True)
                },
                "states": dict(zip(matrix.labels, row.states, strict=True)),
                "agreement": row.agreement.value,
                "words_differ": row.words_differ,
                "array": row.array,
                "description": row.description,
                "tags": list(row.tags),
                "input": serialize.value_to_json(dict(row.input)),
                "known": _known_fields(matrix, row),
            }
            for row in declared
        ],
        "disagreements": [
            {
                **_case_fields(row),
                "expect_empty": row.expect_empty,
                "differing_keys": list(row.differing_keys),
                "groups": [
                    {
                        "labels": list(group.labels),
                        "status": group.status.value,
                        "observation": None
                        if group.observation is None
                        else serialize.value_to_json(dict(group.observation)),
                        "reasons": list(group.reasons),
                    }
                    for group in row.groups
                ],
            }
            for row in matrix.disagreements
        ],
        "all_errored": [
            {
                **_case_fields(row),
                "reasons": {
                    label: reason
                    for group in row.groups
                    for label, reason in zip(group.labels, group.reasons, strict=True)
                },
            }
            for row in matrix.all_errored
        ],
        "summary": {
            "implementations": len(matrix.columns),
            "cases_total": len(matrix.rows),
            "cases_compared": sum(
                1 for row in matrix.rows if row.agreement in (Agreement.AGREE, Agreement.DISAGREE)
            ),
            "disagreements": len(matrix.disagreements),
            "same_verdict_different_words": len(matrix.words_differ),
            "all_errored": len(matrix.all_errored),
            "agree_on": matrix.agree_on
            if isinstance(matrix.agree_on, str)
            else list(matrix.agree_on),
        },
    }
