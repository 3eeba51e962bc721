"""The app's Textual idioms: bars that follow reactive state, and one handler through
which every worker's error reaches the user."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cer import events
from cer.engine.options import RunOptions
from cer.model import Status
from cer.tui import controller
from cer.tui.app import CerApp, create_app
from cer.tui.state.bars import HeaderState, SummaryState
from cer.tui.state.board import Counts
from cer.tui.widgets.header_bar import HeaderBar
from cer.tui.widgets.summary_bar import SummaryBar

from .helpers import (
    FakeRunner,
    fixed_loader,
    result_for,
    run_screen,
    settle,
    triage_outcome,
    triage_suite,
    wait_until,
)

pytestmark = pytest.mark.anyio

OPTIONS = RunOptions(impl="calc:evaluate")
SIZE = (120, 30)


def app_for(**kwargs: Any) -> CerApp:
    return create_app(
        Path("evals.toml"),
        OPTIONS,
        run=FakeRunner(triage_outcome),
        load=fixed_loader(triage_suite()),
        watch=False,
        **kwargs,
    )


def notifications(app: CerApp) -> list[str]:
    return [f"{n.title}: {n.message}" for n in app._notifications]


async def test_the_bars_follow_the_apps_reactive_state() -> None:
    app = app_for()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        header, summary = app.query_one(HeaderBar), app.query_one(SummaryBar)
        assert (
            header.state == run_screen(app).header_state
            and summary.state == run_screen(app).summary_state
        )
        assert "calc:evaluate" in header.render().plain
        run_screen(app).header_state = HeaderState(
            "calc 9", "other:impl", "not watching", "rerun: x"
        )
        run_screen(app).summary_state = SummaryState(
            counts=Counts(passed=41, failed=1), elapsed_ms=5
        )
        await pilot.pause()
        assert header.state.implementation == "other:impl"
        assert header.render().plain == " cer · calc 9 · other:impl · not watching · rerun: x"
        assert "✔ 41 passed  ✘ 1 failed" in summary.render().plain
        # A new run sets them again from the session.
        run_screen(app).action_rerun_all()
        await settle(app, runs=2)
        assert "calc:evaluate" in header.render().plain
        assert "rerun: requested" in header.render().plain


@pytest.mark.parametrize(
    ("target", "what"),
    [
        ("render_selected", "Cannot render the selected case"),
        ("compute_view", "Cannot compute constraint coverage"),
    ],
)
async def test_a_failing_worker_is_shown_to_the_user(
    monkeypatch: pytest.MonkeyPatch, target: str, what: str
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(controller, target, broken)
    app = app_for()
    async with app.run_test(size=SIZE):
        await wait_until(lambda: any(what in text for text in notifications(app)))
        assert f"Error: {what}: RuntimeError('boom')" in notifications(app)


async def test_a_failing_matrix_worker_is_shown_to_the_user(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("no matrix")

    monkeypatch.setattr(controller, "build_matrix", broken)
    other = RunOptions(impl="calc_other:evaluate")
    app = app_for(implementations=(OPTIONS, other))
    async with app.run_test(size=SIZE):
        await wait_until(lambda: any("build the matrix" in t for t in notifications(app)))
        assert "Error: Cannot build the matrix: RuntimeError('no matrix')" in notifications(app)


async def test_a_cycle_that_crashed_ends_with_a_banner_and_no_run_toast() -> None:
    suite = triage_suite()
    calls = {"n": 0}
    fake = FakeRunner(triage_outcome)

    def run(suite: Any, options: RunOptions, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            return fake(suite, options, **kwargs)
        on_event = kwargs["on_event"]
        first = suite.cases[0]
        on_event(events.CaseFinished(result_for(first, Status.FAIL), 1, len(suite.cases)))
        raise RuntimeError("the runner broke")

    app = create_app(Path("evals.toml"), OPTIONS, run=run, load=fixed_loader(suite), watch=False)
    async with app.run_test(size=SIZE):
        await settle(app)
        run_screen(app).action_rerun_all()
        await wait_until(lambda: run_screen(app).banner.kind == "run-error")
        await settle(app)
        assert app.session.runs_finished == 1
        titles = [n.title for n in app._notifications]
        assert titles.count("Run finished") == 0  # the first run had nothing to compare
        assert not any("regressed" in str(n.message) for n in app._notifications)
