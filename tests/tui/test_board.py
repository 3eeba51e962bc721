"""The board: rows, stale marks, fixed/regressed, filters and groups, without Textual."""

from __future__ import annotations

from cer.model import RunResult, Status
from cer.suite.selection import Selection
from cer.tui.state.board import Board, Change, GroupKey

from .helpers import passing, result_for, triage_outcome, triage_suite


def run_of(results: list) -> RunResult:  # type: ignore[type-arg]
    return RunResult("r", "calc", "impl", 0, 10, tuple(results))


def test_rows_counts_and_baselines() -> None:
    suite = triage_suite()
    board = Board()
    board.set_suite(suite)
    assert board.counts.pending == 12
    board.begin_run(Selection())
    assert all(row.stale for row in board.rows)
    first = [triage_outcome(case) for case in suite.cases]
    board.finish_run(run_of(first))
    assert board.counts.as_tuple() == (7, 3, 1, 1)
    assert board.counts.fixed == board.counts.regressed == 0

    board.begin_run(Selection())
    fixed = suite.case("renders-tabs")
    broken = suite.case("adds-integers")
    board.record([passing(fixed), result_for(broken, Status.FAIL)], 2, 12)
    assert board.row("renders-tabs").change is Change.FIXED  # type: ignore[union-attr]
    assert board.row("adds-integers").change is Change.REGRESSED  # type: ignore[union-attr]
    assert (board.counts.fixed, board.counts.regressed) == (1, 1)
    # Rows not rerun yet keep their old result, marked stale.
    stale = board.row("divides-by-zero")
    assert stale is not None and stale.stale and stale.status is Status.FAIL

    # A cancelled run does not become the baseline of the next one.
    board.abandon_run()
    board.begin_run(Selection())
    assert board.row("renders-tabs").change is Change.FIXED  # type: ignore[union-attr]


def test_partial_runs_keep_deselected_results() -> None:
    suite = triage_suite()
    board = Board()
    board.set_suite(suite)
    board.begin_run(Selection())
    board.finish_run(run_of([triage_outcome(case) for case in suite.cases]))
    failed = board.failed_names()
    assert failed == {
        "renders-tabs",
        "keeps-final-newline",
        "survives-deep-nesting",
        "divides-by-zero",
    }
    selection = Selection(names=failed)
    board.begin_run(selection)
    assert not board.row("adds-integers").stale  # type: ignore[union-attr]
    results = [
        passing(case) if case.name in failed else result_for(case, Status.SKIPPED)
        for case in suite.cases
    ]
    board.finish_run(run_of(results))
    assert board.row("adds-integers").status is Status.PASS  # type: ignore[union-attr]
    assert board.row("bounded-memory").status is Status.SKIPPED  # type: ignore[union-attr]
    assert board.counts.as_tuple() == (11, 0, 0, 1)
    assert board.counts.fixed == 4


def test_filters_and_visible_positions() -> None:
    suite = triage_suite()
    board = Board()
    board.set_suite(suite)
    board.begin_run(Selection())
    board.finish_run(run_of([triage_outcome(case) for case in suite.cases]))
    board.set_filters(failures_only=True)
    assert [board.rows[i].name for i in board.visible()] == [
        "renders-tabs",
        "keeps-final-newline",
        "survives-deep-nesting",
        "divides-by-zero",
    ]
    assert board.visible_position("divides-by-zero") == 3
    assert board.visible_position("adds-integers") is None
    board.set_filters(failures_only=False, text="ADV hostile")
    assert [board.rows[i].name for i in board.visible()] == [
        "rejects-empty",
        "survives-deep-nesting",
    ]
    board.set_filters(text="", group=GroupKey("tag", "upstream-section:*"))
    assert len(board.visible()) == 6
    board.set_filters(group=GroupKey("severity", "none"))
    assert len(board.visible()) == 9
    board.set_filters(group=None)
    assert len(board.visible()) == 12


def test_groups_give_pass_rates_per_tag_prefix() -> None:
    suite = triage_suite()
    board = Board()
    board.set_suite(suite)
    board.begin_run(Selection())
    board.finish_run(run_of([triage_outcome(case) for case in suite.cases]))
    sections = {section.title: section for section in board.groups()}
    assert list(sections) == [
        "Category",
        "Case class",
        "Severity",
        "Constraint",
        "Tag upstream-section:*",
        "Tag",
    ]
    upstream = {g.key.value: g for g in sections["Tag upstream-section:*"].groups}
    assert next(iter(upstream)) == "upstream-section:*"
    assert upstream["upstream-section:*"].total == 6
    arithmetic = upstream["upstream-section:Arithmetic"]
    assert (arithmetic.passed, arithmetic.failed, arithmetic.total) == (2, 1, 3)
    assert arithmetic.pass_rate is not None and round(arithmetic.pass_rate, 2) == 0.67
    classes = {g.key.value: g.total for g in sections["Case class"].groups}
    assert classes == {"functional": 7, "adversarial": 3, "generator_adversary": 2}
    skipped_only = {g.key.value: g for g in sections["Category"].groups}["resource"]
    assert skipped_only.pass_rate is None


def test_peers_fold_into_filters_rerun_failed_and_groups() -> None:
    """With several implementations the first board owns the filters and looks at its
    peers: a case counts as failing when any implementation failed it."""
    suite = triage_suite()
    board, peer = Board(), Board()
    board.peers = (peer,)
    for each in (board, peer):
        each.set_suite(suite)
        each.begin_run(Selection())
    board.finish_run(run_of([passing(case) for case in suite.cases]))
    peer.record([result_for(suite.case("adds-floats"), Status.FAIL)], 1, 12)
    assert board.index_of("adds-floats") == 1
    assert [lane.status for lane in board.lanes_at(1)] == [Status.PASS, Status.FAIL]
    # The peer's other rows have no result yet: pending, which the fold keeps.
    assert board.status_at(0) is None
    assert board.status_at(1) is Status.FAIL
    assert board.failing_at(1) and not board.failing_at(0)
    assert board.failed_names() == {"adds-floats"}
    board.set_filters(failures_only=True)
    assert [board.rows[i].name for i in board.visible()] == ["adds-floats"]
    # A peer's new results show once the lead is told to look again.
    peer.record([result_for(suite.case("renders-list"), Status.ERRORED)], 2, 12)
    assert len(board.visible()) == 1
    board.refilter()
    assert [board.rows[i].name for i in board.visible()] == ["adds-floats", "renders-list"]
    peer.finish_run(
        run_of(
            [
                result_for(case, Status.FAIL) if case.name == "adds-floats" else passing(case)
                for case in suite.cases
            ]
        )
    )
    assert board.status_at(0) is Status.PASS
    category = {g.key.value: g for g in board.groups()[0].groups}["functional"]
    assert (category.passed, category.failed, category.total) == (6, 1, 7)
    # Alone, a board keeps its own status and failures.
    alone = Board()
    alone.set_suite(suite)
    assert alone.status_at(0) is None and alone.failed_names() == frozenset()
