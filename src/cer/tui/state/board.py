"""The state behind the case list: one row per case, the filters, the groups.

Kept free of Textual so that it can be tested directly and so that the widgets only
draw it. Counts are maintained incrementally: with 65,000 cases, recounting on every
streamed batch of results would cost more than drawing them.
"""

from __future__ import annotations

import enum
import fnmatch
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from cer.model import Case, CaseResult, RunResult, Status, Suite
from cer.results.matrix import Agreement
from cer.suite.selection import Selection
from cer.tui.state.kept import KeptResult
from cer.tui.state.known import KnownFailures, Listing

FAILING: frozenset[Status] = frozenset({Status.FAIL, Status.ERRORED})
"""Statuses that count as a failure for failures-only, rerun-failed and regressions."""

_WORST_FIRST: tuple[Status | None, ...] = (
    Status.ERRORED,
    Status.FAIL,
    None,
    Status.SKIPPED,
    Status.PASS,
)
"""How several implementations' statuses of one case fold into one for the group-by
view: the worst wins, so that a group's pass rate counts the cases every implementation
passed."""


GroupKind = Literal["category", "case_class", "severity", "constraint", "tag"]
"""What a group of the group-by view gathers cases by."""


NO_CONSTRAINT = "(none)"
"""The constraint group of the cases whose ``verifies`` is empty."""


@dataclass(frozen=True)
class EditedSelection(Selection):
    """What a run after an edit of the suite file alone runs: the cases the edit changed
    or added, those some implementation failed or errored, and those without a current
    result (``names``). Every other row keeps its last result as the current one, not as
    a result of an earlier run: its case is declared exactly as it was when that result
    was made, by the same implementation, so running it again could only say the same
    (cer.tui.controller decides which rows qualify)."""

    kept: int = 0
    """How many cases keep their last result."""
    left: frozenset[str] = frozenset()
    """The cases without a current result that the selection leaves out (outside the
    run pattern): they stay as they are, results of an earlier run. Every other case
    not selected keeps its result as the current one (its row is not dimmed)."""


class Change(enum.Enum):
    """How a case's status moved since the previous completed run."""

    FIXED = "fixed"
    REGRESSED = "regressed"


@dataclass(eq=False, slots=True)
class Row:
    """One case and what is known about it right now.

    ``kept`` is the case's latest result as the row keeps it (see
    :class:`~cer.tui.state.kept.KeptResult`: status and time at hand, the evidence
    packed); ``stale`` means it predates the run in flight; ``baseline`` is the status
    at the end of the previous completed run, against which changes are marked.
    """

    case: Case
    kept: KeptResult | None = None
    stale: bool = False
    baseline: Status | None = None

    @property
    def name(self) -> str:
        return self.case.name

    @property
    def status(self) -> Status | None:
        return None if self.kept is None else self.kept.status

    @property
    def elapsed_ms(self) -> int | None:
        return None if self.kept is None else self.kept.elapsed_ms

    @property
    def not_run(self) -> bool:
        """Whether the latest result is the runner's ``not run: <cause>``."""
        return self.kept is not None and self.kept.not_run

    @property
    def result(self) -> CaseResult | None:
        """The whole result, unpacked for a screen (each call unpacks it again: ask
        once per rendering, never for every row)."""
        return None if self.kept is None else self.kept.result()

    def snapshot(self) -> Row:
        """A copy of the row as it is now, for a worker thread to read."""
        return Row(self.case, self.kept, self.stale, self.baseline)

    @property
    def change(self) -> Change | None:
        status = self.status
        if status is None or self.baseline is None:
            return None
        if status is Status.PASS and self.baseline in FAILING:
            return Change.FIXED
        if status in FAILING and self.baseline is Status.PASS:
            return Change.REGRESSED
        return None


@dataclass(frozen=True)
class GroupKey:
    """A group of cases the list can be narrowed to; ``tag`` values may be globs."""

    kind: GroupKind
    value: str

    @property
    def label(self) -> str:
        return f"{self.kind.replace('_', ' ')} = {self.value}"

    def contains(self, case: Case) -> bool:
        if self.kind == "category":
            return case.category == self.value
        if self.kind == "case_class":
            return case.case_class == self.value
        if self.kind == "severity":
            return (case.severity or "none") == self.value
        if self.kind == "constraint":
            return self.value in case.verifies if self.value != NO_CONSTRAINT else not case.verifies
        if self.kind == "tag":
            return any(fnmatch.fnmatchcase(tag, self.value) for tag in case.tags)
        return False


@dataclass
class GroupStats:
    """Counts of one group, for the group-by view."""

    key: GroupKey
    total: int = 0
    passed: int = 0
    failed: int = 0
    errored: int = 0
    skipped: int = 0
    pending: int = 0

    def add(self, status: Status | None) -> None:
        self.total += 1
        if status is None:
            self.pending += 1
        elif status is Status.PASS:
            self.passed += 1
        elif status is Status.FAIL:
            self.failed += 1
        elif status is Status.ERRORED:
            self.errored += 1
        else:
            self.skipped += 1

    @property
    def pass_rate(self) -> float | None:
        """Passed over decided (passed, failed, errored); None when nothing was decided."""
        decided = self.passed + self.failed + self.errored
        return None if decided == 0 else self.passed / decided


@dataclass(frozen=True)
class GroupSection:
    """A titled list of groups: one per category, per case class, per tag prefix..."""

    title: str
    groups: tuple[GroupStats, ...]


@dataclass
class Counts:
    """Status counts over every row, including stale ones."""

    passed: int = 0
    failed: int = 0
    errored: int = 0
    skipped: int = 0
    pending: int = 0
    fixed: int = 0
    regressed: int = 0
    known: int = 0
    """Rows failing as the baseline lists them (known failures)."""
    stale: int = 0
    """Rows the baseline lists that pass: entries to remove."""

    def as_tuple(self) -> tuple[int, int, int, int]:
        return (self.passed, self.failed, self.errored, self.skipped)


@dataclass
class Filters:
    """What narrows the visible rows: failures only, a text query, a group."""

    failures_only: bool = False
    text: str = ""
    group: GroupKey | None = None

    @property
    def active(self) -> bool:
        return self.failures_only or bool(self.text.strip()) or self.group is not None

    def describe(self) -> list[str]:
        """The filters in force, as the summary bar names them."""
        described = []
        if self.failures_only:
            described.append("failures only")
        if self.text.strip():
            described.append(f"“{self.text.strip()}”")
        if self.group is not None:
            described.append(self.group.label)
        return described


@dataclass
class Board:
    """Rows in declared order, the run in flight, and the visible subset."""

    rows: list[Row] = field(default_factory=list)
    filters: Filters = field(default_factory=Filters)
    counts: Counts = field(default_factory=Counts)
    running: bool = False
    done: int = 0
    total: int = 0
    run_selection: Selection = field(default_factory=Selection)
    last_run: RunResult | None = None
    """The last finished run's own facts (its id, times, notes), without its results:
    the rows hold those."""
    unlisted: tuple[KeptResult, ...] = ()
    """The last finished run's results of cases it did not run and the list shows no
    result for (see :meth:`finish_run`)."""
    flaky: frozenset[str] = frozenset()
    """Names the history marks flaky for the implementation and suite of the last run."""
    peers: tuple[Board, ...] = ()
    """With several implementations, this board holds the first one's results and owns
    the filters; ``peers`` hold the others', one board each, their rows parallel to these
    (the app gives every board the same suite). Failures-only, rerun-failed and the
    group-by view then look at every implementation."""
    agreements: dict[str, Agreement] = field(default_factory=dict)
    """How the implementations' observations of each case compare, from the last matrix
    built (several implementations only)."""
    known: KnownFailures | None = None
    """The known-failures baseline as this board's implementation reads it (None
    without one): what each row's status makes of its entry (:meth:`listing`)."""
    _index: dict[str, int] = field(default_factory=dict)
    _visible: Sequence[int] | None = None
    _last_run_completed: bool = True
    _aside: list[KeptResult] = field(default_factory=list)
    """Results of the run in flight the rows did not take (cases it did not run)."""

    # -- suite and runs -------------------------------------------------------------

    def set_suite(self, suite: Suite) -> None:
        """Rebuild the rows for ``suite``, keeping what is known about same-named cases."""
        rows_now = self.rows
        if len(rows_now) == len(suite.cases) and all(
            map(str.__eq__, (case.name for case in suite.cases), (row.name for row in rows_now))
        ):
            # The same cases in the same order (an edit of some of them, as a watch
            # session sees most): each row takes its case as declared now, and keeps its
            # result, so the counts, which go by name and result, stay as they are.
            for row, case in zip(rows_now, suite.cases, strict=True):
                if row.case is not case:
                    row.case = case
            self._visible = None
            return
        old = {row.name: row for row in self.rows}
        rows: list[Row] = []
        for case in suite.cases:
            previous = old.get(case.name)
            if previous is None:
                rows.append(Row(case))
            elif previous.case is case:  # a reload that took the case as it was
                rows.append(previous)
            else:
                rows.append(Row(case, previous.kept, previous.stale, previous.baseline))
        self.rows = rows
        self._index = {row.name: i for i, row in enumerate(rows)}
        self._recount()
        self._visible = None

    def begin_run(self, selection: Selection) -> None:
        """Mark the rows the run will execute as stale; they keep their old result."""
        self.running = True
        self.run_selection = selection
        self._aside = []
        self.done = 0
        self.total = 0
        if self._last_run_completed:
            for row in self.rows:
                row.baseline = row.status
            # Every row's baseline is now its status: nothing counts as fixed or
            # regressed (the other counts go by status, not by staleness).
            self.counts.fixed = self.counts.regressed = 0
        self._last_run_completed = False
        if isinstance(selection, EditedSelection):
            # The rows it keeps are current (dimmed only when the file that did not load
            # dimmed them): all but those it runs and those it leaves out.
            left, chosen = selection.left, selection.names or frozenset()
            for row in self.rows:
                if row.stale and row.name not in left and row.name not in chosen:
                    row.stale = False
        if selection.names is not None and len(selection.names) < len(self.rows):
            for name in selection.names:  # a few names of many rows: those rows alone
                index = self._index.get(name)
                if index is not None and selection.selects(self.rows[index].case):
                    self.rows[index].stale = True
            return
        everything = selection.is_everything
        for row in self.rows:
            if everything or selection.selects(row.case):
                row.stale = True

    def record(
        self, results: Iterable[CaseResult | KeptResult], done: int, total: int
    ) -> list[int] | None:
        """Take results streamed from the run in flight (a :class:`CaseResult` is kept
        as a :class:`KeptResult`).

        Returns the indexes into ``rows`` of the rows that took a result, so that the
        list redraws only those of them on screen; None when the visible rows changed
        (failures only, and a row started or stopped failing): the list must then be
        laid out again.
        """
        self.done, self.total = done, total
        failures_only = self.filters.failures_only
        changed: list[int] = []
        for result in results:
            kept = result if isinstance(result, KeptResult) else KeptResult.of(result)
            index = self._index.get(kept.case_name)
            if index is None:
                self._aside.append(kept)
                continue
            row = self.rows[index]
            if not self._executed(row.case):
                self._aside.append(kept)
                continue
            was_failing = row.status in FAILING
            self._uncount(row)
            row.kept = kept
            row.stale = False
            self._count(row)
            changed.append(index)
            if failures_only and was_failing != (row.status in FAILING):
                self._visible = None
        return None if self._visible is None else changed

    def finish_run(
        self,
        run: RunResult,
        results: Sequence[CaseResult | KeptResult] | None = None,
        count: int | None = None,
    ) -> None:
        """Take the end of a run; it becomes the baseline for the next one.

        ``results`` are the run's results the board has not taken yet through
        :meth:`record` (by default all of ``run.results``), ``count`` how many results
        the run has in all (by default as many as ``results``): the app streams them
        as they come, so that the end of a run of 100,000 cases neither takes them all
        again nor holds a second copy of them in ``last_run``.
        """
        if results is None:
            results = run.results
        count = len(results) if count is None else count
        self.record(results, count, count)
        selection = self.run_selection
        # After an edit, the rows not run keep their result as the current one (see
        # EditedSelection): they were not marked stale, and stay as they are.
        if not isinstance(selection, EditedSelection):
            partial = selection.names is not None
            for row in self.rows:
                # A partial run (one case, a pattern, the failed ones) leaves the rest
                # shown as they were, dimmed: not run this time.
                row.stale = partial and row.kept is not None and not self._executed(row.case)
        # What the run reported for cases it did not run (deselected), where the list
        # shows nothing else for them: the matrix counts these as the lane's results.
        self.unlisted = tuple(
            kept
            for kept in self._aside
            if (index := self._index.get(kept.case_name)) is None or self.rows[index].kept is None
        )
        self._aside = []
        self.running = False
        self.last_run = replace(run, results=()) if run.results else run
        self._last_run_completed = True
        self._visible = None

    def abandon_run(self) -> None:
        """Forget the run in flight (cancelled or failed); its rows stay stale."""
        self.running = False

    def fail_suite(self) -> None:
        """The suite no longer loads: the run that was to start never will."""
        self.running = False
        for row in self.rows:
            row.stale = True

    def _executed(self, case: Case) -> bool:
        selection = self.run_selection
        return selection.is_everything or selection.selects(case)

    # -- counting -------------------------------------------------------------------

    def _count(self, row: Row, sign: int = 1) -> None:
        counts = self.counts
        status = row.status
        if status is None:
            counts.pending += sign
        elif status is Status.PASS:
            counts.passed += sign
        elif status is Status.FAIL:
            counts.failed += sign
        elif status is Status.ERRORED:
            counts.errored += sign
        else:
            counts.skipped += sign
        change = row.change
        if change is Change.FIXED:
            counts.fixed += sign
        elif change is Change.REGRESSED:
            counts.regressed += sign
        if self.known is not None and status is not None:
            listing = self.known.listing(row.case.name, status, not_run=row.not_run)
            if listing == "known":
                counts.known += sign
            elif listing == "stale":
                counts.stale += sign

    def _uncount(self, row: Row) -> None:
        self._count(row, -1)

    def _recount(self) -> None:
        self.counts = Counts()
        for row in self.rows:
            self._count(row)

    # -- lookups and filters ----------------------------------------------------------

    def set_known(self, known: KnownFailures | None) -> None:
        """Take the baseline as this board's implementation reads it (None: none)."""
        self.known = known
        self._recount()

    def listing(self, row: Row) -> Listing | None:
        """What the row's latest status makes of its baseline entry (None: not listed,
        no baseline, no result yet, or skipped)."""
        if self.known is None:
            return None
        return self.known.listing(row.case.name, row.status, not_run=row.not_run)

    def row(self, name: str) -> Row | None:
        index = self._index.get(name)
        return None if index is None else self.rows[index]

    def index_of(self, name: str) -> int | None:
        """Where the case called ``name`` sits in ``rows`` (and in every peer's)."""
        return self._index.get(name)

    def lanes_at(self, index: int) -> tuple[Row, ...]:
        """Every implementation's row at ``index``: this board's, then each peer's."""
        return (self.rows[index], *(peer.rows[index] for peer in self.peers))

    def status_at(self, index: int) -> Status | None:
        """The status of the case at ``index``, folded over every implementation (the
        worst wins); this board's own status when it has no peers."""
        row = self.rows[index]
        if not self.peers:
            return row.status
        statuses = {lane.status for lane in self.lanes_at(index)}
        return next(status for status in _WORST_FIRST if status in statuses)

    def failing_at(self, index: int) -> bool:
        """Whether some implementation failed or errored the case at ``index``."""
        if self.rows[index].status in FAILING:
            return True
        return any(peer.rows[index].status in FAILING for peer in self.peers)

    def refilter(self) -> None:
        """Recompute the visible rows on the next look (a peer's results changed)."""
        if self.filters.failures_only:
            self._visible = None

    def set_agreements(self, agreements: dict[str, Agreement]) -> None:
        """Take the agreement of each case from a newly built matrix."""
        self.agreements = agreements

    def set_flaky(self, names: frozenset[str]) -> bool:
        """Take the history's flaky names; True when they changed."""
        if names == self.flaky:
            return False
        self.flaky = names
        return True

    @property
    def flaky_count(self) -> int:
        """How many of the rows are flaky."""
        return sum(1 for name in self.flaky if name in self._index)

    def unsettled_names(self) -> frozenset[str]:
        """Cases without a current result in some implementation: none yet, or one that
        predates a run that did not get to them (stale)."""
        boards = (self, *self.peers)
        return frozenset(
            row.name for board in boards for row in board.rows if row.stale or row.kept is None
        )

    def failed_names(self) -> frozenset[str]:
        """Cases some implementation failed or errored."""
        if not self.peers:
            return frozenset(row.name for row in self.rows if row.status in FAILING)
        return frozenset(row.name for index, row in enumerate(self.rows) if self.failing_at(index))

    def visible(self) -> Sequence[int]:
        """Indexes into ``rows`` of the rows the filters let through, in declared order
        (every row: a ``range``, not a list of 100,000 numbers)."""
        if self._visible is None:
            if self.filters.active:
                self._visible = [i for i, row in enumerate(self.rows) if self._shows(i, row)]
            else:
                self._visible = range(len(self.rows))
        return self._visible

    @property
    def visible_settled(self) -> bool:
        """Whether the visible rows are computed and unchanged since the last look."""
        return self._visible is not None

    def visible_position(self, name: str) -> int | None:
        """Where the row called ``name`` sits among the visible rows, if it is visible."""
        index = self._index.get(name)
        if index is None:
            return None
        return self.visible_position_of(index)

    def visible_position_of(self, index: int) -> int | None:
        """Where the row at ``index`` (into ``rows``) sits among the visible rows, if it
        is visible."""
        visible = self.visible()
        position = bisect_left(visible, index)
        if position < len(visible) and visible[position] == index:
            return position
        return None

    def set_filters(
        self,
        *,
        failures_only: bool | None = None,
        text: str | None = None,
        group: GroupKey | bool | None = False,
    ) -> None:
        """Change some filters; ``group=None`` clears the group, ``False`` leaves it."""
        if failures_only is not None:
            self.filters.failures_only = failures_only
        if text is not None:
            self.filters.text = text
        if group is None or isinstance(group, GroupKey):
            self.filters.group = group
        self._visible = None

    def _shows(self, index: int, row: Row) -> bool:
        filters = self.filters
        if filters.failures_only and not self.failing_at(index):
            return False
        if filters.group is not None and not filters.group.contains(row.case):
            return False
        return all(_matches(row.case, term) for term in filters.text.lower().split())

    # -- groups ---------------------------------------------------------------------

    def groups(self) -> tuple[GroupSection, ...]:
        """Counts per category, case class, severity, tag prefix and plain tag."""
        by_kind: dict[GroupKind, dict[str, GroupStats]] = {
            "category": {},
            "case_class": {},
            "severity": {},
            "constraint": {},
        }
        prefixed: dict[str, dict[str, GroupStats]] = {}
        plain: dict[str, GroupStats] = {}

        def bump(
            table: dict[str, GroupStats], kind: GroupKind, value: str, status: Status | None
        ) -> None:
            stats = table.get(value)
            if stats is None:
                stats = table[value] = GroupStats(GroupKey(kind, value))
            stats.add(status)

        for index, row in enumerate(self.rows):
            case, status = row.case, self.status_at(index)
            bump(by_kind["category"], "category", case.category, status)
            bump(by_kind["case_class"], "case_class", case.case_class, status)
            bump(by_kind["severity"], "severity", case.severity or "none", status)
            for name in case.verifies or (NO_CONSTRAINT,):
                bump(by_kind["constraint"], "constraint", name, status)
            prefixes_seen: set[str] = set()
            for tag in case.tags:
                prefix, colon, _ = tag.partition(":")
                if colon:
                    table = prefixed.setdefault(prefix, {})
                    if prefix not in prefixes_seen:
                        prefixes_seen.add(prefix)
                        bump(table, "tag", f"{prefix}:*", status)
                    bump(table, "tag", tag, status)
                else:
                    bump(plain, "tag", tag, status)

        sections = [
            GroupSection("Category", tuple(by_kind["category"].values())),
            GroupSection("Case class", tuple(by_kind["case_class"].values())),
            GroupSection("Severity", tuple(by_kind["severity"].values())),
            GroupSection("Constraint", tuple(by_kind["constraint"].values())),
        ]
        for prefix in sorted(prefixed):
            table = prefixed[prefix]
            everything = table.pop(f"{prefix}:*")
            sections.append(
                GroupSection(
                    f"Tag {prefix}:*",
                    (everything, *sorted(table.values(), key=lambda g: g.key.value)),
                )
            )
        if plain:
            sections.append(
                GroupSection("Tag", tuple(sorted(plain.values(), key=lambda g: g.key.value)))
            )
        return tuple(sections)


def _matches(case: Case, term: str) -> bool:
    """Whether a lower-cased filter term occurs in the case's name, category, class,
    tags or the constraints it verifies."""
    if term in case.name.lower() or term in case.category.lower():
        return True
    if term in case.case_class.lower():
        return True
    if any(term in name.lower() for name in case.verifies):
        return True
    return any(term in tag.lower() for tag in case.tags)
