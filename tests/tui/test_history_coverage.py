"""Pilot tests of the run history (recording, flaky marks, rerun-failed at start) and of
the Coverage pane, with a fake runner and histories in temporary folders."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest
from rich.console import Console, RenderableType

from cer.constraints import CoverageFigures
from cer.engine.options import RunOptions
from cer.history.database import History
from cer.model import Case, CaseResult, Status, Suite
from cer.tui.app import CerApp, create_app
from cer.tui.state.coverage_view import sparkline
from cer.tui.widgets.text_pane import TextPane

from .helpers import (
    FakeRunner,
    Outcome,
    fixed_loader,
    make_case,
    make_suite,
    passing,
    result_for,
    run_screen,
    screen_text,
    settle,
    tabs,
    triage_outcome,
    triage_suite,
    wait_until,
)

pytestmark = pytest.mark.anyio

OPTIONS = RunOptions(impl="calc:evaluate")
SIZE = (120, 30)
TRIAGE_FAILURES = frozenset(
    {"renders-tabs", "keeps-final-newline", "survives-deep-nesting", "divides-by-zero"}
)


def plain(content: RenderableType, width: int = 200) -> str:
    """A pane's content as plain text, the way it reads on screen."""
    console = Console(width=width, record=True, color_system=None, file=io.StringIO())
    console.print(content)
    return console.export_text()


def pane(app: CerApp, name: str) -> str:
    return plain(app.query_one(f"#{name}-pane", TextPane).content)


def app_with(
    suite: Suite,
    runner: FakeRunner,
    history: Path | None,
    *,
    watch: bool = False,
) -> CerApp:
    return create_app(
        suite.path, OPTIONS, run=runner, load=fixed_loader(suite), watch=watch, history=history
    )


def recorded(path: Path) -> list[str]:
    """Run ids in the history, oldest first."""
    with History.open(path, create=False) as history:
        return [record.run_id for record in reversed(history.runs(None))]


# -- history ----------------------------------------------------------------------------


async def test_finished_runs_are_recorded_and_flaky_cases_marked(tmp_path: Path) -> None:
    history = tmp_path / ".cer" / "history.sqlite"
    suite = triage_suite(tmp_path / "evals.toml")
    calls = {"n": 0}

    def wobbly(case: Case) -> CaseResult:
        # adds-floats passes on the first run and fails on the second: flaky.
        if case.name == "adds-floats" and calls["n"] >= 1:
            return result_for(case, Status.FAIL, reason="0.30000000000000004")
        return triage_outcome(case)

    runner = FakeRunner(wobbly)
    app = app_with(suite, runner, history)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        await wait_until(lambda: app.control.runs_recorded == 1)
        assert recorded(history) == [app.session.board.last_run.run_id]  # type: ignore[union-attr]
        assert app.session.board.flaky == frozenset()
        assert "flaky" not in screen_text(app)

        calls["n"] = 1
        await pilot.press("r")
        await settle(app, runs=2)
        await wait_until(lambda: app.control.runs_recorded == 2)
        assert len(recorded(history)) == 2
        assert app.session.board.flaky == {"adds-floats"}
        await wait_until(lambda: "≈ 1 flaky" in screen_text(app))
        text = screen_text(app)
        assert "✘−≈ adds-floats" in text
        assert "✔   adds-integers" in text  # not flaky: no mark
        assert run_screen(app).case_list.select_name("adds-floats")
        await settle(app, runs=2)
        reason = pane(app, "reason")
        assert "≈ flaky" in reason and "cer history --case adds-floats" in reason
        assert run_screen(app).case_list.select_name("renders-tabs")
        await settle(app, runs=2)
        assert "flaky" not in pane(app, "reason")
        # The summaries written agree with what the list showed.
        with History.open(history, create=False) as opened:
            newest = opened.runs(1)[0]
        assert (newest.summary.passed, newest.summary.failed) == (6, 4)
        assert newest.flaky == ("adds-floats",)


async def test_cancelled_runs_are_not_recorded(tmp_path: Path) -> None:
    history = tmp_path / "history.sqlite"
    runner = FakeRunner(triage_outcome, block_after=3)
    app = app_with(triage_suite(tmp_path / "evals.toml"), runner, history)
    async with app.run_test(size=SIZE):
        await wait_until(lambda: app.session.board.done >= 3)
        run_screen(app).action_rerun_all()  # cancels the blocked first run
        await settle(app)
        await wait_until(lambda: app.control.runs_recorded == 1)
        assert runner.cancelled == 1
        assert len(runner.calls) == 2
        assert app.session.board.last_run is not None
        assert recorded(history) == [app.session.board.last_run.run_id]


async def test_a_broken_history_warns_once_and_the_app_goes_on(tmp_path: Path) -> None:
    history = tmp_path / "history.sqlite"
    garbage = b"this is not an SQLite database, whatever its name says\n" * 20
    history.write_bytes(garbage)
    app = app_with(triage_suite(tmp_path / "evals.toml"), FakeRunner(triage_outcome), history)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        await wait_until(lambda: app.control.history_problem is not None)
        assert app.session.board.counts.failed == 3
        await pilot.press("r")
        await settle(app, runs=2)
        assert app.session.runs_finished == 2
        assert app.control.runs_recorded == 0
        warnings = [n for n in app._notifications if n.title == "History"]
        assert len(warnings) == 1
        assert str(history) in warnings[0].message
        assert warnings[0].severity == "warning"
        assert history.read_bytes() == garbage


async def test_without_a_history_nothing_is_written(tmp_path: Path) -> None:
    app = app_with(triage_suite(tmp_path / "evals.toml"), FakeRunner(triage_outcome), None)
    async with app.run_test(size=SIZE):
        await settle(app)
        assert app.control.runs_recorded == 0
        assert list(tmp_path.iterdir()) == []


def record_run(history: Path, suite: Suite, outcome: Outcome) -> str:
    """Record one run of ``suite`` as an earlier session would have."""
    run = FakeRunner(outcome)(suite, OPTIONS)
    with History.open(history) as opened:
        opened.record(run, suite)
    return run.run_id


async def test_rerun_failed_at_start_uses_the_recorded_failures(tmp_path: Path) -> None:
    history = tmp_path / "history.sqlite"
    suite = triage_suite(tmp_path / "evals.toml")
    earlier = record_run(history, suite, triage_outcome)

    def now(case: Case) -> CaseResult:
        # In this session only renders-tabs still fails.
        return triage_outcome(case) if case.name == "renders-tabs" else passing(case)

    runner = FakeRunner(now, block_after=0)
    app = app_with(suite, runner, history)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(lambda: runner.started.is_set() and app.session.suite is not None)
        assert app.session.runs_finished == 0
        await pilot.press("R")
        await settle(app)
        assert runner.cancelled == 1
        assert runner.calls[1].names == TRIAGE_FAILURES
        assert app.session.trigger == f"rerun: 4 failed cases of recorded run {earlier[:8]}"
        assert app.session.board.row("renders-tabs").status is Status.FAIL  # type: ignore[union-attr]
        assert app.session.board.row("divides-by-zero").status is Status.PASS  # type: ignore[union-attr]
        await wait_until(lambda: app.control.runs_recorded == 1)

        # A later recorded run (another session) failed something else; this session
        # has its own results now, and R follows them.
        record_run(history, suite, lambda case: result_for(case, Status.FAIL))
        await pilot.press("R")
        await settle(app, runs=2)
        assert runner.calls[2].names == {"renders-tabs"}


async def test_rerun_failed_at_start_without_a_recorded_run_says_so(tmp_path: Path) -> None:
    history = tmp_path / "history.sqlite"
    runner = FakeRunner(triage_outcome, block_after=0)
    app = app_with(triage_suite(tmp_path / "evals.toml"), runner, history)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(lambda: runner.started.is_set())
        await pilot.press("R")
        await wait_until(lambda: any(n.title == "Rerun failed" for n in app._notifications))
        (note,) = [n for n in app._notifications if n.title == "Rerun failed"]
        assert "no run history yet" in note.message
        assert app.session.runs_started == 1
        assert app.session.board.running


# -- coverage ---------------------------------------------------------------------------

MODULE_DOC = """# calc

Some prose that is not a constraint.

<constraints>
- alpha: the first rule, which the suite checks and passes.
- beta: the second rule; a case checks it and fails.
- gamma: nobody wrote a case for this one yet.
</constraints>
"""


def coverage_suite(folder: Path) -> Suite:
    return make_suite(
        (
            make_case("checks-alpha", 1, verifies=("alpha",)),
            make_case("checks-beta", 2, verifies=("beta", "alpah")),
            make_case("checks-nothing", 3),
        ),
        folder / "evals.toml",
    )


def coverage_outcome(case: Case) -> CaseResult:
    if case.name == "checks-beta":
        return result_for(case, Status.FAIL, reason="beta broke")
    return passing(case)


async def test_coverage_pane_shows_constraints_gaps_and_errors(tmp_path: Path) -> None:
    (tmp_path / "commonsformat.md").write_text(MODULE_DOC)
    suite = coverage_suite(tmp_path)
    app = app_with(suite, FakeRunner(coverage_outcome), None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        await wait_until(lambda: app.session.lanes[0].coverage.coverage is not None)
        await settle(app)
        text = pane(app, "coverage")
        assert "2 of 3 constraints covered, 1 verified" in text
        assert "1 needs a case · 1 unknown constraint in verifies" in text
        # The selected case (the first) and its constraint.
        assert "checks-alpha verifies" in text
        assert "✔ alpha: verified, 1 case passed" in text
        # Errors, gaps and every constraint's state.
        assert (
            'evals.toml:7: case "checks-beta" verifies unknown constraint "alpah" '
            '(did you mean "alpha"?)'
        ) in text
        assert "○ Needs a case\n  gamma" in text
        every = text.split("Every constraint", 1)[1]
        assert "✔ alpha" in every and "✘ beta" in every and "○ gamma" in every
        assert "1 of 1 case not passing" in every

        await pilot.press("j")
        await settle(app)
        text = pane(app, "coverage")
        assert "checks-beta verifies" in text
        assert "✘ beta: not verified, 1 of 1 case not passing" in text
        assert "the second rule; a case checks it and fails." in text
        assert "fail checks-beta" in text
        assert '‼ alpah: error, no such constraint (did you mean "alpha"?)' in text

        await pilot.press("j")
        await settle(app)
        assert "no constraint (its verifies list is empty)" in pane(app, "coverage")
        await pilot.press(*tabs("coverage"))
        assert "2 of 3 constraints covered, 1 verified" in screen_text(app)


async def test_coverage_pane_without_a_module_document(tmp_path: Path) -> None:
    runner = FakeRunner(coverage_outcome, block_after=1)
    app = app_with(coverage_suite(tmp_path), runner, None)
    async with app.run_test(size=SIZE):
        await wait_until(lambda: app.session.board.done == 1)
        await wait_until(lambda: "computed when a run finishes" in pane(app, "coverage"))
        run_screen(app).action_rerun_all()
        await settle(app)
        await wait_until(lambda: not app.session.lanes[0].coverage.pending)
        await settle(app)
        text = pane(app, "coverage")
        assert "This module has no commonsformat.md beside evals.toml" in text
        assert "no coverage to show" in text


async def test_coverage_follows_the_results_on_screen_after_a_partial_rerun(
    tmp_path: Path,
) -> None:
    (tmp_path / "commonsformat.md").write_text(MODULE_DOC)
    fixed = {"on": False}

    def outcome(case: Case) -> CaseResult:
        return passing(case) if fixed["on"] else coverage_outcome(case)

    runner = FakeRunner(outcome)
    app = app_with(coverage_suite(tmp_path), runner, None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        await wait_until(lambda: app.session.lanes[0].coverage.coverage is not None)
        fixed["on"] = True
        await pilot.press("R")  # reruns only checks-beta; checks-alpha keeps its pass
        await settle(app, runs=2)
        assert runner.calls[1].names == {"checks-beta"}
        await wait_until(
            lambda: (
                app.session.lanes[0].coverage.coverage is not None
                and app.session.lanes[0].coverage.coverage.verified == 2
            )
        )


async def test_editing_the_module_document_updates_coverage_without_a_rerun(
    tmp_path: Path,
) -> None:
    doc = tmp_path / "commonsformat.md"
    doc.write_text(MODULE_DOC)
    suite_file = tmp_path / "evals.toml"
    suite_file.write_text("")
    app = app_with(coverage_suite(tmp_path), FakeRunner(coverage_outcome), None, watch=True)
    async with app.run_test(size=SIZE):
        await settle(app)
        await wait_until(
            lambda: (
                app.session.lanes[0].coverage.coverage is not None and app.control.plan is not None
            )
        )
        doc.write_text(MODULE_DOC.replace("</constraints>", "- delta: one more.\n</constraints>"))
        await wait_until(
            lambda: (
                app.session.lanes[0].coverage.coverage is not None
                and app.session.lanes[0].coverage.coverage.total == 4
            )
        )
        await settle(app)
        assert "2 of 4 constraints covered, 1 verified" in pane(app, "coverage")
        assert app.session.runs_started == 1


async def test_recording_into_a_watched_folder_does_not_trigger_a_run(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (tmp_path / "evals.toml").write_text("")
    history = data / "history.sqlite"
    suite = triage_suite(tmp_path / "evals.toml")
    app = create_app(
        suite.path,
        OPTIONS,
        run=FakeRunner(triage_outcome),
        load=fixed_loader(suite),
        watch=True,
        extra_watch=[data],
        history=history,
    )
    async with app.run_test(size=SIZE):
        await wait_until(
            lambda: app.control.plan is not None and data.resolve() in app.control.plan.extra
        )
        await settle(app)
        await wait_until(lambda: app.control.runs_recorded == 1)
        # Something else in the watched folder still counts: the watcher is live.
        (data / "input.json").write_text("{}")
        await wait_until(lambda: app.session.runs_started == 2)
        await settle(app, runs=2)
        await wait_until(lambda: app.control.runs_recorded == 2)
        await asyncio.sleep(0.3)
        assert app.session.runs_started == 2


async def test_coverage_is_judged_on_the_document_read_before_the_run(tmp_path: Path) -> None:
    doc = tmp_path / "commonsformat.md"
    doc.write_text(MODULE_DOC)

    def rewriting_outcome(case: Case) -> CaseResult:
        # What an implementation could do to the file while its cases run.
        doc.write_text("<constraints>\n- alpha: the only rule.\n</constraints>\n")
        return coverage_outcome(case)

    app = app_with(coverage_suite(tmp_path), FakeRunner(rewriting_outcome), None)
    async with app.run_test(size=SIZE):
        await settle(app)
        await wait_until(lambda: app.session.lanes[0].coverage.coverage is not None)
        await settle(app)
        coverage = app.session.lanes[0].coverage.coverage
        assert coverage is not None
        assert (coverage.total, coverage.covered, coverage.verified) == (3, 2, 1)


async def test_coverage_pane_draws_the_recorded_runs_as_a_sparkline(tmp_path: Path) -> None:
    (tmp_path / "commonsformat.md").write_text(MODULE_DOC)
    suite = coverage_suite(tmp_path)
    history = tmp_path / ".cer" / "history.sqlite"
    with History.open(history) as opened:
        for covered, verified in ((1, 0), (2, None)):
            earlier = FakeRunner(coverage_outcome)(suite, OPTIONS)
            opened.record(earlier, suite, CoverageFigures(3, covered, verified, covered, 0))
        other = FakeRunner(coverage_outcome)(suite, RunOptions(impl="other:evaluate"))
        opened.record(other, suite, CoverageFigures(3, 3, 3, 3, 0))  # not this implementation
    app = app_with(suite, FakeRunner(coverage_outcome), history)
    async with app.run_test(size=SIZE):
        await settle(app)
        await wait_until(lambda: "recorded runs" in pane(app, "coverage"))
        text = pane(app, "coverage")
    # The run just finished is recorded with its figures: 2 of 3 covered, 1 verified.
    with History.open(history, create=False) as opened:
        newest = opened.runs(1)[0].coverage
    assert newest is not None
    assert (newest.total, newest.covered, newest.verified) == (3, 2, 1)
    assert "Over 3 recorded runs" in text
    assert "covered  ▃▆▆ 1/3 → 2/3" in text
    assert "verified ▁ ▃ 0/3 → 1/3" in text


def test_sparkline_heights() -> None:
    assert sparkline([0.0, 0.5, 1.0, None, 2.0, -1.0]) == "▁▅█ █▁"
