"""Every screen follows the latest results: the group-by view redraws its figures as a
rerun lands under it, and a run of some of the cases says so in the summary bar, its
own counts apart from the earlier results the list still counts."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import OptionList

from cer.engine.options import RunOptions
from cer.model import Case, CaseResult, Status
from cer.tui.app import CerApp, create_app
from cer.tui.screens.group import GroupScreen

from .helpers import (
    FakeRunner,
    fixed_loader,
    make_case,
    make_suite,
    result_for,
    screen_text,
    settle,
    wait_until,
)

pytestmark = pytest.mark.anyio

SIZE = (140, 30)
CASES = tuple(
    make_case(f"parses-{n}", n, tags=("area:directives",) if n <= 13 else ("area:other",))
    for n in range(1, 17)
)


class Fixable:
    """An implementation that fails every ``area:directives`` case until it is fixed."""

    def __init__(self) -> None:
        self.fixed = False

    def __call__(self, case: Case) -> CaseResult:
        if "area:directives" in case.tags and not self.fixed:
            return result_for(case, Status.FAIL, reason="value: differs")
        return result_for(case, Status.PASS)


def _app(outcome: Fixable) -> CerApp:
    return create_app(
        Path("evals.toml"),
        RunOptions(impl="cache_control:parse"),
        run=FakeRunner(outcome),
        load=fixed_loader(make_suite(CASES)),
        watch=False,
    )


def _labels(app: CerApp) -> list[str]:
    options = app.screen.query_one(OptionList)
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


def _row(app: CerApp, value: str) -> str:
    return next(label for label in _labels(app) if f" {value} " in label)


async def test_the_group_view_follows_a_rerun_that_lands_under_it() -> None:
    outcome = Fixable()
    app = _app(outcome)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        await pilot.press("g")
        assert isinstance(app.screen, GroupScreen)
        assert "  0%" in _row(app, "area:directives")
        options = app.screen.query_one(OptionList)
        highlighted = next(
            i for i, label in enumerate(_labels(app)) if " area:directives " in label
        )
        options.highlighted = highlighted
        outcome.fixed = True
        app.start_run(app.settings.base_selection, "rerun: file changed")
        await settle(app, runs=2)
        await wait_until(lambda: "100%" in _row(app, "area:directives"))
        assert "✔    13  ✘     0" in _row(app, "area:directives")
        assert isinstance(app.screen, GroupScreen)
        assert app.screen.query_one(OptionList).highlighted == highlighted
        await pilot.press("enter")
        assert not isinstance(app.screen, GroupScreen)
        assert len(app.session.board.visible()) == 13


async def test_a_run_of_matching_cases_says_it_is_partial() -> None:
    outcome = Fixable()
    app = _app(outcome)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        outcome.fixed = True
        await pilot.press("n", *"parses-1", "enter")  # parses-1 and parses-10 … 16
        await settle(app, runs=2)
        summary = screen_text(app).splitlines()[1]
        # The list's totals count the earlier results of the cases not run...
        assert "✔ 8 passed" in summary and "✘ 8 failed" in summary
        # ...and the bar says the run was partial, with its own counts apart.
        assert "only 'parses-1': 8 of 16 ran (✔ 8), 8 earlier" in summary
        await pilot.press("n", "enter")
        await settle(app, runs=3)
        summary = screen_text(app).splitlines()[1]
        assert "✔ 16 passed" in summary and "ran" not in summary and "earlier" not in summary


async def test_a_rerun_of_one_case_says_it_is_partial() -> None:
    app = _app(Fixable())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        await pilot.press("s")
        await settle(app, runs=2)
        assert "partial run: 1 of 16 ran (✘ 1), 15 earlier" in screen_text(app).splitlines()[1]
