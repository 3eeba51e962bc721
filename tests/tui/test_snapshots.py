"""Snapshots of the screen with a fake runner and fixed times.

Update them with ``pytest tests/tui/test_snapshots.py --snapshot-update`` after a
deliberate change, and look at the report before committing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from cer.engine.options import RunOptions
from cer.model import Case, CaseResult, Status
from cer.suite.loader import SuiteError
from cer.tui.app import CerApp, create_app

from .helpers import (
    FakeRunner,
    Implementations,
    fixed_loader,
    make_case,
    make_suite,
    other_outcome,
    passing,
    ref_outcome,
    result_for,
    run_screen,
    settle,
    triage_outcome,
    triage_suite,
    wait_until,
)

SIZE = (120, 32)
OPTIONS = RunOptions(impl="calc:evaluate")
SnapCompare = Callable[..., bool]


def app_for(outcome: Any = triage_outcome, **kwargs: Any) -> CerApp:
    return create_app(
        Path("evals.toml"),
        OPTIONS,
        run=FakeRunner(outcome),
        load=kwargs.pop("load", fixed_loader(triage_suite())),
        watch=False,
        **kwargs,
    )


def select(name: str, pane: str | None = None) -> Callable[[Pilot[None]], Awaitable[None]]:
    async def run_before(pilot: Pilot[None]) -> None:
        app = pilot.app
        assert isinstance(app, CerApp)
        await settle(app)
        assert run_screen(app).case_list.select_name(name)
        await settle(app)
        if pane is not None:
            from textual.widgets import TabbedContent

            app.query_one("#details", TabbedContent).active = pane
        await pilot.pause()

    return run_before


async def settled(pilot: Pilot[None]) -> None:
    app = pilot.app
    assert isinstance(app, CerApp)
    await settle(app)
    await pilot.pause()


def test_all_passing(snap_compare: SnapCompare) -> None:
    assert snap_compare(app_for(passing), terminal_size=SIZE, run_before=settled)


def test_failures_with_the_diff_pane(snap_compare: SnapCompare) -> None:
    assert snap_compare(app_for(), terminal_size=SIZE, run_before=select("renders-tabs", "diff"))


def test_suite_error_banner(snap_compare: SnapCompare) -> None:
    calls = {"n": 0}
    suite = triage_suite()

    def load(path: Path) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            return suite
        raise SuiteError(
            Path("evals.toml"),
            ['line 14, column 12: [[cases]] #3 "renders-tabs": expected a value after "="'],
        )

    async def run_before(pilot: Pilot[None]) -> None:
        app = pilot.app
        assert isinstance(app, CerApp)
        await settle(app)
        app.control.suite_cache = None
        run_screen(app).action_rerun_all()
        await pilot.pause()
        await wait_until(lambda: run_screen(app).banner.kind == "suite-error")
        await pilot.pause()

    assert snap_compare(app_for(load=load), terminal_size=SIZE, run_before=run_before)


def test_group_by_view(snap_compare: SnapCompare) -> None:
    assert snap_compare(app_for(), terminal_size=SIZE, run_before=settled, press=["g"])


@pytest.mark.parametrize("theme", ["dark", "light", "high-contrast"])
def test_theme(snap_compare: SnapCompare, theme: str) -> None:
    assert snap_compare(
        app_for(theme=theme), terminal_size=SIZE, run_before=select("keeps-final-newline", "diff")
    )


def test_coverage_pane(snap_compare: SnapCompare, tmp_path: Path) -> None:
    """The Coverage pane for a case that verifies one broken constraint and one typo."""
    (tmp_path / "commonsformat.md").write_text(
        "# calc\n\n<constraints>\n"
        "- precedence: `**` binds tighter than unary minus, which binds tighter than\n"
        "  `* / // %`, which bind tighter than `+ -`.\n"
        "- true-division: `/` always returns a float.\n"
        "- floor-semantics: `//` rounds toward negative infinity.\n"
        "- nesting-limit: nesting may reach 256 levels.\n"
        "</constraints>\n"
    )
    cases = (
        make_case("adds-integers", 1, verifies=("precedence",)),
        make_case("divides-exactly", 2, verifies=("true-division", "precedance")),
        make_case("floors-negatives", 3, verifies=("floor-semantics",)),
        make_case("divides-fractions", 4, verifies=("true-division",)),
    )
    suite = make_suite(cases, tmp_path / "evals.toml")

    def outcome(case: Case) -> CaseResult:
        if case.name == "divides-exactly":
            return result_for(case, Status.FAIL, reason="value: expected float 3.0, observed 3")
        return passing(case)

    app = create_app(
        suite.path, OPTIONS, run=FakeRunner(outcome), load=fixed_loader(suite), watch=False
    )

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(app)
        await wait_until(lambda: app.session.lanes[0].coverage.coverage is not None)
        await select("divides-exactly", "coverage")(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def several_app() -> CerApp:
    """Two implementations that disagree on three cases (see helpers.other_outcome)."""
    ref, other = RunOptions(impl="ref:evaluate"), RunOptions(impl="other:evaluate")
    return create_app(
        Path("evals.toml"),
        ref,
        run=Implementations(
            {ref.impl: FakeRunner(ref_outcome), other.impl: FakeRunner(other_outcome)}
        ),
        load=fixed_loader(triage_suite()),
        watch=False,
        implementations=(ref, other),
    )


def test_several_implementations_side_by_side(snap_compare: SnapCompare) -> None:
    """A cell per implementation, their totals, and the Diff pane between them."""
    assert snap_compare(
        several_app(), terminal_size=SIZE, run_before=select("renders-tabs", "diff")
    )


def test_matrix_view(snap_compare: SnapCompare) -> None:
    """The Matrix view: disagreements first, then all errored, failing, passed; totals."""
    assert snap_compare(several_app(), terminal_size=SIZE, run_before=settled, press=["m"])


def test_long_names_come_first(snap_compare: SnapCompare) -> None:
    """The case list fits its columns to content and width: a long name is whole before
    class, category or severity take any room."""
    cases = [
        make_case(
            "rejects-a-prerelease-tag-on-a-caret-range-with-a-zero-major",
            1,
            case_class="adversarial",
            category="input-validation",
            severity="error",
        ),
        make_case("short", 2),
    ]
    app = app_for(passing, load=fixed_loader(make_suite(cases)))
    assert snap_compare(app, terminal_size=(160, 20), run_before=settled)


def test_known_failures_and_a_stale_entry(
    snap_compare: SnapCompare, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cer.results.baseline import load_baseline

    monkeypatch.chdir(tmp_path)
    Path("known.toml").write_text(
        '[[known]]\ncase = "renders-tabs"\nstatus = "fail"\nreason = "tabs are not expanded"\n\n'
        '[[known]]\ncase = "renders-list"\nstatus = "fail"\nreason = "lists were broken"\n',
        encoding="utf-8",
    )
    app = app_for(baseline=load_baseline(Path("known.toml")))
    assert snap_compare(app, terminal_size=SIZE, run_before=select("renders-tabs"))
