"""cer-tui's runs of part of the suite say which part in their conditions: the run
pattern (``n``) and a rerun of what failed name how their cases were chosen."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from cer.engine.options import RunOptions
from cer.engine.runner import run_selection
from cer.model import RunSelection
from cer.tui.app import create_app

from .helpers import FakeRunner, fixed_loader, settle, triage_outcome, triage_suite

pytestmark = pytest.mark.anyio

OPTIONS = RunOptions(impl="calc:evaluate", timeout=2.0)


async def test_the_run_pattern_is_the_runs_selection() -> None:
    runner = FakeRunner(triage_outcome)
    app = create_app(
        Path("evals.toml"), OPTIONS, run=runner, load=fixed_loader(triage_suite()), watch=False
    )
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(app)
        assert runner.calls[0].is_everything
        await pilot.press("n", *"renders", "enter")
        await settle(app, runs=2)
        chosen = runner.calls[1]
        assert chosen.chosen_by == "cer-tui run pattern 'renders'"
        assert run_selection(replace(OPTIONS, selection=chosen)) == RunSelection(
            named=2, chosen_by="cer-tui run pattern 'renders'"
        )
        await pilot.press("home", "s")  # one case, whatever the pattern
        await settle(app, runs=3)
        assert runner.calls[2].chosen_by == "cer-tui rerun: adds-integers"
