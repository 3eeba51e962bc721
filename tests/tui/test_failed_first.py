"""The watch loop runs what failed last time first, while the list keeps declared order."""

from __future__ import annotations

from pathlib import Path

import pytest

from cer.engine.options import RunOptions
from cer.model import Status
from cer.tui.app import create_app

from .helpers import FakeRunner, fixed_loader, settle, triage_outcome, triage_suite

OPTIONS = RunOptions(impl="calc:evaluate")

pytestmark = pytest.mark.anyio


async def test_a_rerun_after_a_change_runs_the_failed_cases_first(tmp_path: Path) -> None:
    suite = triage_suite(tmp_path / "evals.toml")
    runner = FakeRunner(triage_outcome)
    app = create_app(suite.path, OPTIONS, run=runner, load=fixed_loader(suite), watch=False)
    async with app.run_test(size=(120, 36)):
        await settle(app)
        failing = {
            row.name
            for row in app.session.board.rows
            if row.status in (Status.FAIL, Status.ERRORED)
        }
        assert failing and len(failing) < len(suite.cases)
        assert runner.options[0].first == frozenset()  # nothing failed before

        app.control.files_changed((tmp_path / "calc.py",))
        await settle(app, runs=2)

        assert runner.options[1].first == failing
        streamed = runner.finished[1]
        assert set(streamed[: len(failing)]) == failing
        # the list itself keeps the suite's order
        assert [row.name for row in app.session.board.rows] == [case.name for case in suite.cases]
