"""A known-failures baseline as the case list reads it, without Textual: which rows are
known failures, which entries are stale, what the counts and the Reason pane's note say,
and that each lane reads the entries for its own implementation."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from cer.engine.options import RunOptions
from cer.model import CaseResult, RunResult, Status
from cer.results.baseline import load_baseline
from cer.suite.selection import Selection
from cer.tui.state.known import KnownFailures, lane_aliases
from cer.tui.state.session import Session

from .helpers import triage_outcome, triage_suite

BASELINE = """
[[known]]
case = "renders-*"
status = "fail"
reason = "tabs are not expanded yet"
link = "https://example.org/tabs"

[[known]]
case = "survives-deep-nesting"
status = "fail"
reason = "recursion"

[[known]]
case = "adds-integers"
status = "fail"
reason = "was broken once"

[[known]]
case = "divides-by-zero"
status = "fail"
reason = "only the other one"
implementation = "calc_other"

[[known]]
case = "renamed-away"
status = "fail"
reason = "gone"
"""


def run_of(results: list) -> RunResult:  # type: ignore[type-arg]
    return RunResult("r", "calc", "impl", 0, 10, tuple(results))


def test_rows_read_the_baseline_for_their_implementation(tmp_path: Path) -> None:
    path = tmp_path / "known.toml"
    path.write_text(BASELINE, encoding="utf-8")
    suite = triage_suite()
    options = RunOptions("calc_sloppy:evaluate")
    session = Session([options], ["calc_sloppy"], baseline=load_baseline(path))
    session.begin("first run")
    session.load(suite, Selection())
    board = session.board
    assert board.known is not None
    assert set(board.known.entries) == {
        "renders-tabs",
        "renders-list",
        "survives-deep-nesting",
        "adds-integers",
    }  # divides-by-zero's entry is for another implementation
    assert board.counts.known == board.counts.stale == 0  # nothing has a result yet
    session.lanes[0].finish(run_of([triage_outcome(case) for case in suite.cases]), suite)

    def listing(name: str) -> str | None:
        row = board.row(name)
        assert row is not None
        return board.listing(row)

    assert listing("renders-tabs") == "known"  # fails as listed
    assert listing("renders-list") == "stale"  # the glob names it, and it passes
    assert listing("adds-integers") == "stale"
    assert listing("survives-deep-nesting") == "otherwise"  # errored, listed as fail
    assert listing("divides-by-zero") is None  # an unlisted failure: a regression
    assert listing("reports-version") is None
    counts = board.counts
    assert (counts.known, counts.stale) == (1, 2)
    assert counts.failed == 3  # a known failure is still a failure
    summary = session.summary()
    assert (summary.counts.known, summary.counts.stale) == (1, 2)
    known = board.known
    assert known.note("renders-tabs", Status.FAIL) == (
        f"known failure: tabs are not expanded yet (https://example.org/tabs) ({path}:2)"
    )
    assert known.note("adds-integers", Status.PASS) == (
        f"stale: adds-integers passes: remove it from the baseline ({path}:13)"
    )
    assert known.note("survives-deep-nesting", Status.ERRORED) == (
        f"regression: listed as fail, now errored ({path}:8)"
    )
    assert known.note("divides-by-zero", Status.FAIL) is None
    assert known.note("renders-tabs", Status.SKIPPED) is None  # not run: neither
    assert session.unmatched_entries() == (
        f"{path}:24: case 'renamed-away' names no case of evals.toml",
    )

    # a second run where the tab case passes: its entry goes stale, the counts follow
    session.begin("rerun")
    session.load(suite, Selection())
    results = [triage_outcome(case) for case in suite.cases]
    fixed = [r if r.case_name != "renders-tabs" else _passed(r) for r in results]
    session.lanes[0].finish(run_of(fixed), suite)
    assert (board.counts.known, board.counts.stale) == (0, 3)


def _passed(result: CaseResult) -> CaseResult:
    return replace(result, status=Status.PASS, reason=None, mismatches=())


def test_each_lane_reads_the_entries_for_its_own_implementation(tmp_path: Path) -> None:
    path = tmp_path / "known.toml"
    path.write_text(BASELINE, encoding="utf-8")
    suite = triage_suite()
    lanes = [RunOptions("calc_sloppy:evaluate"), RunOptions("calc_other:evaluate")]
    session = Session(lanes, ["calc_sloppy", "calc_other"], baseline=load_baseline(path))
    session.begin("first run")
    session.load(suite, Selection())
    first, second = (lane.board.known for lane in session.lanes)
    assert first is not None and second is not None
    assert "divides-by-zero" not in first.entries
    assert second.entries["divides-by-zero"].reason == "only the other one"
    assert lane_aliases("calc", RunOptions("calc_other:evaluate")) == (
        "calc",
        "calc_other:evaluate",
        "calc_other",
    )


def test_without_a_baseline_nothing_is_listed() -> None:
    suite = triage_suite()
    session = Session([RunOptions("calc_sloppy:evaluate")], ["calc_sloppy"])
    session.begin("first run")
    session.load(suite, Selection())
    session.lanes[0].finish(run_of([triage_outcome(case) for case in suite.cases]), suite)
    board = session.board
    assert board.known is None
    assert all(board.listing(row) is None for row in board.rows)
    assert (board.counts.known, board.counts.stale) == (0, 0)
    assert session.unmatched_entries() == ()
    assert KnownFailures("x").listing("renders-tabs", Status.FAIL) is None


def test_a_case_never_run_is_no_known_failure(tmp_path: Path) -> None:
    """An implementation that could not be loaded leaves every case ``not run: …``:
    an entry listing a case as errored must not take that for its failure, as cer run
    holds, or the list would show a known failure where nothing ran."""
    path = tmp_path / "known.toml"
    path.write_text(
        '[[known]]\ncase = "renders-*"\nstatus = "errored"\nreason = "crashes"\n',
        encoding="utf-8",
    )
    suite = triage_suite()
    session = Session(
        [RunOptions("calc_sloppy:evaluate")], ["calc_sloppy"], baseline=load_baseline(path)
    )
    session.load(suite, Selection())
    not_run = "not run: the Python implementation calc_sloppy:evaluate could not be loaded"
    results = [
        replace(triage_outcome(case), status=Status.ERRORED, reason=not_run) for case in suite.cases
    ]
    session.lanes[0].finish(run_of(results), suite)
    board = session.board
    row = board.row("renders-tabs")
    assert row is not None and row.not_run
    assert board.listing(row) == "otherwise"
    assert board.counts.known == 0
    lane_row = next(
        session.lanes[0].row_at(index)
        for index, r in enumerate(board.rows)
        if r.name == "renders-tabs"
    )
    assert lane_row.known == f"regression: listed as errored, but it was not run ({path}:1)"
    # An errored case that ran is the failure listed.
    session.lanes[0].finish(
        run_of([replace(r, reason="the implementation raised ValueError") for r in results]),
        suite,
    )
    row = board.row("renders-tabs")
    assert row is not None and not row.not_run
    assert board.listing(row) == "known"
