"""Pilot tests of several implementations at once, with a fake runner per implementation:
every implementation runs on each trigger, the list has a cell per implementation, the
summary bar their totals, the Matrix view lists disagreements first, and the detail
panes put the implementations side by side."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console, RenderableType
from textual.widgets import Input

from cer.config import repro_command_many
from cer.engine.options import RunOptions
from cer.history.database import History
from cer.model import Case, CaseResult, Status
from cer.results.matrix import Agreement
from cer.tui.app import CerApp, create_app
from cer.tui.screens.help import HelpScreen
from cer.tui.screens.matrix import MatrixScreen
from cer.tui.widgets.diff_pane import DiffPane
from cer.tui.widgets.matrix_table import MatrixTable
from cer.tui.widgets.output_pane import OutputPane
from cer.tui.widgets.text_pane import TextPane

from .helpers import (
    FakeRunner,
    Implementations,
    fixed_loader,
    other_outcome,
    passing,
    ref_outcome,
    result_for,
    run_screen,
    screen_text,
    settle,
    triage_outcome,
    triage_suite,
    wait_until,
)

pytestmark = pytest.mark.anyio

SIZE = (130, 34)
REF = RunOptions(impl="ref:evaluate")
OTHER = RunOptions(impl="other:evaluate")


def several(ref: FakeRunner | None = None, other: FakeRunner | None = None) -> Implementations:
    return Implementations(
        {
            REF.impl: ref or FakeRunner(ref_outcome),
            OTHER.impl: other or FakeRunner(other_outcome),
        }
    )


def app_for(run: Implementations, **kwargs: object) -> CerApp:
    suite = kwargs.pop("suite", None) or triage_suite()
    return create_app(
        suite.path,  # type: ignore[attr-defined]
        REF,
        run=run,
        load=fixed_loader(suite),  # type: ignore[arg-type]
        watch=False,
        implementations=(REF, OTHER),
        **kwargs,  # type: ignore[arg-type]
    )


def plain(content: RenderableType, width: int = 100) -> str:
    console = Console(width=width, record=True, color_system=None, file=io.StringIO())
    console.print(content)
    return console.export_text()


def statuses(app: CerApp, index: int) -> dict[str, Status | None]:
    return {row.name: row.status for row in app.session.lanes[index].board.rows}


async def test_only_a_comparison_of_implementations_keeps_observations() -> None:
    """One implementation's panes never show an observation, so its rows keep none;
    several implementations' rows keep theirs (the side-by-side panes and the matrix
    compare them)."""
    suite = triage_suite()
    alone = create_app(
        suite.path,
        REF,
        run=FakeRunner(ref_outcome),
        load=fixed_loader(suite),
        watch=False,
    )
    for app, kept in ((alone, None), (app_for(several()), {"output": 2})):
        async with app.run_test(size=SIZE):
            await settle(app)
            row = app.session.board.row("adds-integers")
            assert row is not None and row.result is not None
            assert row.result.observation == kept


async def test_every_implementation_runs_and_the_list_has_a_cell_each() -> None:
    run = several()
    app = app_for(run)
    async with app.run_test(size=SIZE):
        await settle(app)
        assert run.order == [REF.impl, OTHER.impl]
        assert app.session.labels == ("ref", "other")
        ref, other = statuses(app, 0), statuses(app, 1)
        assert ref["renders-tabs"] is Status.FAIL and other["renders-tabs"] is Status.PASS
        assert other["reports-version"] is Status.ERRORED
        assert app.session.lanes[0].board.counts.as_tuple() == (7, 3, 1, 1)
        assert app.session.lanes[1].board.counts.as_tuple() == (7, 2, 2, 1)
        text = screen_text(app)
        header = "calc ^1.0 · 2 implementations: ref, other · timeout 10 s · not watching"
        assert f"{header} · first run" in text
        assert " ref ✔ 7 ✘ 3 ‼ 1 ○ 1  │  other ✔ 7 ✘ 2 ‼ 2 ○ 1  │  ≠ 3 differ   in 1.2 s" in text
        # The header names the implementations over their cells.
        assert " ref other   case                   class " in text
        # One cell per implementation; ≠ where they observed different things.
        assert " ✔   ✔     ≠ adds-integers " in text
        assert " ✘   ✔     ≠ renders-tabs " in text
        assert " ✔   ‼     ≠ reports-version " in text
        assert " ‼   ‼       survives-deep-nesting " in text
        assert " ✔   ✔       adds-floats " in text
        assert app.session.board.agreements["survives-deep-nesting"] is Agreement.ALL_ERRORED
        # The first case is selected under the header line.
        assert run_screen(app).case_list.cursor_name == "adds-integers"


async def test_failures_only_rerun_failed_and_groups_look_at_every_implementation() -> None:
    run = several()
    app = app_for(run)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        await pilot.press("f")
        visible = [app.session.board.rows[i].name for i in app.session.board.visible()]
        # renders-tabs fails for ref only, reports-version errors for other only.
        assert visible == [
            "renders-tabs",
            "keeps-final-newline",
            "reports-version",
            "survives-deep-nesting",
            "divides-by-zero",
        ]
        await pilot.press("f")
        groups = {s.title: s for s in app.session.board.groups()}
        interface = next(g for g in groups["Category"].groups if g.key.value == "interface")
        assert (interface.passed, interface.errored) == (0, 1)
        await pilot.press("R")
        await settle(app, runs=2)
        assert run.order[2:] == [REF.impl, OTHER.impl]
        expected = frozenset(visible)
        assert run.runners[REF.impl].calls[1].names == expected
        assert run.runners[OTHER.impl].calls[1].names == expected
        assert "rerun: 5 failed cases" in screen_text(app)


def _cases_and_ref_cells(plain: str) -> list[tuple[str, str]]:
    """(case, its ref cell) of each case line of the Matrix view's text."""
    return [
        (line[3:26].strip(), line[26:35].strip())
        for line in plain.splitlines()[1:]
        if line[3:4].strip() and not line.startswith(" " * 3 + "case") and "{ source" in line
    ]


async def test_matrix_view_narrows_to_what_one_implementation_fails() -> None:
    app = app_for(several())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        await pilot.press("m")
        table = app.screen.query_one(MatrixTable)
        everything = table.plain

        def title() -> str:
            return str(app.screen.query_one("#group-title").render())

        await pilot.press("f")
        assert "only what ref fails" in title()
        assert _cases_and_ref_cells(table.plain) == [
            ("renders-tabs", "✘ fail"),
            ("keeps-final-newline", "✘ fail"),
            ("divides-by-zero", "✘ fail"),
        ]
        assert "(1 shown)" in table.plain
        await pilot.press("f")
        assert "only what ref errors on" in title()
        assert _cases_and_ref_cells(table.plain) == [("survives-deep-nesting", "‼ error")]
        await pilot.press("a")
        assert table.plain == everything
        assert "only what" not in title()


async def test_matrix_view_lists_disagreements_first_and_enter_shows_the_case() -> None:
    app = app_for(several())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        await pilot.press("m")
        assert isinstance(app.screen, MatrixScreen)
        table = app.screen.query_one(MatrixTable)
        lines = table.plain.splitlines()
        assert lines[:9] == [
            "   case                   ref      other    input                         differs in",
            " ≠ 3 disagreements: the implementations observed different things",
            ' ≠ adds-integers          ✔ pass   ✔ pass   { source = "adds-integers in… output',
            ' ≠ renders-tabs           ✘ fail   ✔ pass   { source = "renders-tabs inp… html',
            ' ≠ reports-version        ✔ pass   ‼ error  { source = "reports-version … '
            "other observed nothing",
            "",
            " ‼ 1 case every implementation errored: nothing to compare",
            ' ‼ survives-deep-nesting  ‼ error  ‼ error  { source = "survives-deep-ne…',
            "",
        ]
        assert lines[9] == " ✘ 3 cases not passed everywhere, in agreement"
        names = [line.split()[0] for line in lines[10:13]]
        assert names == ["keeps-final-newline", "divides-by-zero", "bounded-memory"]
        assert lines[14] == " ✔ 5 cases passed everywhere, in agreement"
        assert len(lines) == 20
        totals = str(app.screen.query_one("#matrix-totals").render())
        assert "passed" in totals and "ref:evaluate@fake" in totals
        assert "ranking, fewest unsuccessful cases first" in totals
        assert (
            "   1. ref    ████████████▓▓▓▓▓▓▓░  58.3%  7 pass · 3 fail · 1 error · 1 skip" in totals
        )
        screen = screen_text(app)
        assert "2 implementations × 12 cases · 3 disagreements" in screen
        # The cursor starts on the first disagreement; enter picks the second one.
        assert table.cursor_name == "adds-integers"
        await pilot.press("j", "enter")
        assert not isinstance(app.screen, MatrixScreen)
        assert run_screen(app).case_list.cursor_name == "renders-tabs"
        await settle(app)
        reason = plain(app.query_one("#reason-pane", TextPane).content)
        assert "≠ the implementations disagree on html" in reason
        assert "── ref ──" in reason and "── other ──" in reason
        assert "html: line 1 differs at column 12" in reason
        diff = app.query_one("#diff-pane", DiffPane).plain
        assert diff.splitlines()[0] == "≠ ref ✘ fail  against  other ✔ pass"
        assert "- ref   + other" in diff
        assert "→" in diff  # the tabs other observed are visible
        assert "── ref against the suite ──" in diff
        assert "── other against the suite ──" in diff


async def test_matrix_view_selects_a_case_hidden_by_the_filters() -> None:
    app = app_for(several())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        await pilot.press("slash")
        app.query_one("#filter", Input).value = "floats"
        await pilot.press("enter")
        assert run_screen(app).case_list.cursor_name == "adds-floats"
        await pilot.press("m")
        await pilot.press("home", "enter")
        assert run_screen(app).case_list.cursor_name == "adds-integers"
        assert app.session.board.filters.text == ""


async def test_side_by_side_panes_for_a_disagreement_where_both_pass() -> None:
    """The suite cannot tell 2 from 2.0 here; the implementations can."""
    app = app_for(several())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        assert run_screen(app).case_list.cursor_name == "adds-integers"
        reason = plain(app.query_one("#reason-pane", TextPane).content)
        assert "≠ the implementations disagree on output" in reason
        table = next(line for line in reason.splitlines() if line.startswith("≠ output"))
        assert table.split() == ["≠", "output", "int", "2", "float", "2.0"]
        diff = app.query_one("#diff-pane", DiffPane).plain.splitlines()
        assert diff[:4] == [
            "≠ ref ✔ pass  against  other ✔ pass",
            "▸ output",
            "  ref: int 2",
            "  other: float 2.0",
        ]
        # Output is per implementation.
        await pilot.press("j", "j", "j", "j", "j")
        assert run_screen(app).case_list.cursor_name == "reports-version"
        await settle(app)
        output = app.query_one("#output-pane", OutputPane).plain
        assert output.splitlines()[0] == "══ ref ══"
        assert "══ other ══" in output and "other says hi" in output
        diff_text = app.query_one("#diff-pane", DiffPane).plain
        assert "other observed nothing: TypeError: boom" in diff_text


async def test_one_implementation_keeps_its_keys() -> None:
    app = create_app(
        Path("evals.toml"),
        REF,
        run=FakeRunner(triage_outcome),
        load=fixed_loader(triage_suite()),
        watch=False,
    )
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        assert not app.session.several and app.session.labels == ("ref",)
        await wait_until(lambda: "q Quit" in screen_text(app))
        text = screen_text(app)
        assert "e Edit E Code ? Help" in text and "Matrix" not in text
        await pilot.press("m")
        assert not isinstance(app.screen, MatrixScreen)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert "Matrix view" not in screen_text(app)


async def test_the_matrix_key_is_listed_with_several() -> None:
    app = app_for(several())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        await wait_until(lambda: "q Quit" in screen_text(app))
        assert "E Code m Matrix ? Help" in screen_text(app)
        await pilot.press("question_mark")
        assert "Matrix view: cases by implementations, disagreements first" in screen_text(app)


async def test_a_change_mid_cycle_cancels_it_and_starts_over() -> None:
    other = FakeRunner(other_outcome, block_after=2)
    run = several(other=other)
    app = app_for(run)
    async with app.run_test(size=SIZE):
        await wait_until(lambda: app.session.lanes[1].board.done >= 2)
        assert app.session.lanes[0].board.counts.as_tuple() == (7, 3, 1, 1)
        assert not app.session.lanes[0].board.running and app.session.lanes[1].board.running
        assert "other 2/2" in screen_text(app)
        assert app.session.runs_finished == 0
        run_screen(app).action_rerun_all()
        await settle(app)
        assert other.cancelled == 1
        assert run.order == [REF.impl, OTHER.impl, REF.impl, OTHER.impl]
        assert app.session.runs_finished == 1
        assert app.session.lanes[1].board.counts.as_tuple() == (7, 2, 2, 1)


async def test_one_implementation_that_does_not_load_leaves_the_other() -> None:
    broken = FakeRunner(
        ref_outcome,
        import_failure=("ModuleNotFoundError: No module named 'other'", "Traceback: other\n"),
    )
    app = app_for(several(other=broken))
    async with app.run_test(size=SIZE):
        await settle(app)
        assert run_screen(app).banner.kind == "import-error"
        assert "other (other:evaluate) does not load" in screen_text(app)
        assert set(statuses(app, 1).values()) == {Status.ERRORED}
        assert app.session.lanes[0].board.counts.as_tuple() == (7, 3, 1, 1)
        # It observed nothing at all: the matrix leaves it out rather than disagree.
        assert app.session.matrix is not None and app.session.matrix.unobserved == ("other",)
        assert not app.session.matrix.disagreements
        broken.import_failure = None
        run_screen(app).action_rerun_all()
        await settle(app, runs=2)
        assert run_screen(app).banner.kind is None


async def test_a_crash_on_one_implementation_still_runs_the_next() -> None:
    other = FakeRunner(other_outcome)
    calls = {"n": 0}

    def crashing(suite, options, **kwargs):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        raise RuntimeError("the runner broke")

    run = Implementations({REF.impl: crashing, OTHER.impl: other})  # type: ignore[dict-item]
    app = app_for(run)
    async with app.run_test(size=SIZE):
        await settle(app)
        assert calls["n"] == 1 and len(other.calls) == 1
        assert run_screen(app).banner.kind == "run-error"
        assert "The runner failed on ref: the runner broke" in screen_text(app)
        assert app.session.lanes[1].board.counts.as_tuple() == (7, 2, 2, 1)


async def test_each_run_is_recorded_on_its_own_and_flaky_per_implementation(
    tmp_path: Path,
) -> None:
    history = tmp_path / "history.sqlite"
    suite = triage_suite(tmp_path / "evals.toml")
    second = {"on": False}

    def wobbly(case: Case) -> CaseResult:
        if second["on"] and case.name == "adds-floats":
            return result_for(case, Status.FAIL, reason="wobbles")
        return other_outcome(case)

    app = create_app(
        suite.path,
        REF,
        run=several(other=FakeRunner(wobbly)),
        load=fixed_loader(suite),
        watch=False,
        history=history,
        implementations=(REF, OTHER),
    )
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        await wait_until(lambda: app.control.runs_recorded == 2)
        with History.open(history, create=False) as opened:
            records = opened.runs(None)
        assert sorted(r.implementation_id for r in records) == [
            "other:evaluate@fake",
            "ref:evaluate@fake",
        ]
        second["on"] = True
        await pilot.press("r")
        await settle(app, runs=2)
        await wait_until(lambda: app.control.runs_recorded == 4)
        assert app.session.lanes[0].board.flaky == frozenset()
        assert app.session.lanes[1].board.flaky == {"adds-floats"}
        await wait_until(lambda: "other ✔ 6 ✘ 3 ‼ 2 ○ 1 ≈ 1 −1" in screen_text(app))
        assert " ✔   ✘−≈   ≠ adds-floats " in screen_text(app)


async def test_rerun_failed_at_start_takes_each_implementations_recorded_failures(
    tmp_path: Path,
) -> None:
    history = tmp_path / "history.sqlite"
    suite = triage_suite(tmp_path / "evals.toml")

    def make(run: Implementations) -> CerApp:
        return create_app(
            suite.path,
            REF,
            run=run,
            load=fixed_loader(suite),
            watch=False,
            history=history,
            implementations=(REF, OTHER),
        )

    first = make(several())
    async with first.run_test(size=SIZE):
        await settle(first)
        await wait_until(lambda: first.control.runs_recorded == 2)
    # A fresh session: R while its first run is still in flight reads the history.
    run = several(FakeRunner(ref_outcome, block_after=1))
    later = make(run)
    async with later.run_test(size=SIZE):
        await wait_until(lambda: later.session.lanes[0].board.done >= 1)
        run_screen(later).action_rerun_failed()
        await wait_until(lambda: len(run.order) == 3)
        await settle(later)
        assert run.order == [REF.impl, REF.impl, OTHER.impl]
        expected = {
            "renders-tabs",
            "keeps-final-newline",
            "reports-version",
            "survives-deep-nesting",
            "divides-by-zero",
        }
        assert run.runners[REF.impl].calls[1].names == expected
        assert run.runners[OTHER.impl].calls[0].names == expected
        assert "rerun: 5 failed cases of recorded runs " in later.session.trigger


async def test_rerun_failed_at_start_needs_a_recorded_run_of_each(tmp_path: Path) -> None:
    history = tmp_path / "history.sqlite"
    suite = triage_suite(tmp_path / "evals.toml")
    only_ref = create_app(
        suite.path,
        REF,
        run=FakeRunner(ref_outcome),
        load=fixed_loader(suite),
        watch=False,
        history=history,
    )
    async with only_ref.run_test(size=SIZE):
        await settle(only_ref)
        await wait_until(lambda: only_ref.control.runs_recorded == 1)
    run = several(FakeRunner(ref_outcome, block_after=1))
    app = app_for(run, suite=suite, history=history)
    async with app.run_test(size=SIZE):
        await wait_until(lambda: app.session.lanes[0].board.done >= 1)
        run_screen(app).action_rerun_failed()
        await wait_until(
            lambda: any("no run of other" in str(n.message) for n in app._notifications)
        )
        assert run.order == [REF.impl]


async def test_watching_follows_every_implementations_files(tmp_path: Path) -> None:
    suite_path = tmp_path / "evals.toml"
    suite_path.write_text("")
    ref_file = tmp_path / "ref" / "ref.py"
    other_file = tmp_path / "other" / "other.py"
    for path in (ref_file, other_file):
        path.parent.mkdir()
        path.write_text("x = 1\n")
    run = several(
        FakeRunner(ref_outcome, sources=(str(ref_file),)),
        FakeRunner(other_outcome, sources=(str(other_file),)),
    )
    app = create_app(
        suite_path,
        REF,
        run=run,
        load=fixed_loader(triage_suite(suite_path)),
        watch=True,
        implementations=(REF, OTHER),
    )
    async with app.run_test(size=SIZE):
        await settle(app)
        await wait_until(
            lambda: (
                app.control.plan is not None
                and {ref_file.resolve(), other_file.resolve()} <= app.control.plan.sources
            )
        )
        # Both implementations reported their files: no more guessing from import folders.
        assert app.control.plan.import_dirs == ()
        assert "watching 3 paths" in screen_text(app)
        other_file.write_text("x = 2\n")
        await wait_until(lambda: app.session.runs_finished >= 2)
        await settle(app, runs=2)
        assert run.order == [REF.impl, OTHER.impl, REF.impl, OTHER.impl]
        assert "other.py changed" in app.session.trigger


def test_repro_names_every_implementation_by_its_kind() -> None:
    command = RunOptions(impl="node calc.mjs", kind="command", timeout=3)
    assert repro_command_many(Path("evals.toml"), (REF, command), "a case") == (
        "cer run evals.toml --impl ref:evaluate --impl-cmd 'node calc.mjs' --case 'a case'"
    )


def test_labels_must_fit_the_implementations() -> None:
    with pytest.raises(ValueError, match="2 labels for 1"):
        create_app(Path("evals.toml"), REF, labels=("a", "b"))
    with pytest.raises(ValueError, match="first of the implementations"):
        create_app(Path("evals.toml"), REF, implementations=(OTHER, REF))
    app = create_app(Path("evals.toml"), REF, implementations=(REF, OTHER), labels=("r", "o"))
    assert app.session.labels == ("r", "o") and app.session.several


def test_outcomes_differ_where_the_tests_say() -> None:
    """Guard the fixtures: the fakes really disagree where the tests rely on it."""
    suite = triage_suite()
    ref = {c.name: ref_outcome(c) for c in suite.cases}
    other = {c.name: other_outcome(c) for c in suite.cases}
    assert ref["adds-integers"].observation == {"output": 2}
    assert other["adds-integers"].observation == {"output": 2.0}
    assert passing(suite.cases[1]).observation == {}


@pytest.mark.slow
async def test_65000_cases_by_two_implementations_draw_only_the_screen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The list of several implementations stays virtual: only the rows on screen (and
    the header line) are drawn, however long the suite."""
    from textual.strip import Strip

    from cer.tui.widgets.case_list import CaseList

    from .helpers import make_case, make_suite

    suite = make_suite(make_case(f"case-{i:05d}", i) for i in range(1, 65_001))

    def differs(case: Case) -> CaseResult:
        if case.position % 97:
            return passing(case)
        return result_for(case, Status.FAIL, observation={"output": case.position})

    drawn: list[int] = []
    original = CaseList.render_line

    def counting(self: CaseList, y: int) -> Strip:
        drawn.append(y)
        return original(self, y)

    monkeypatch.setattr(CaseList, "render_line", counting)
    run = several(FakeRunner(passing), FakeRunner(differs))
    app = create_app(
        suite.path,
        REF,
        run=run,
        load=fixed_loader(suite),
        watch=False,
        implementations=(REF, OTHER),
    )
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(lambda: app.session.runs_finished >= 1, timeout=60)
        await settle(app)
        await wait_until(lambda: app.session.matrix is not None, timeout=30)
        assert (
            app.session.matrix is not None and len(app.session.matrix.disagreements) == 65_000 // 97
        )
        height = run_screen(app).case_list.size.height
        drawn.clear()
        await pilot.press("end")
        await pilot.press("pageup", "k")
        await pilot.pause()
        assert run_screen(app).case_list.cursor_name == f"case-{65_000 - (height - 2) - 1:05d}"
        assert "≠ case-64" in screen_text(app) or "case-64" in screen_text(app)
        assert 0 < len(drawn) <= 6 * height
        assert max(drawn) < height
        await pilot.press("f")
        assert len(app.session.board.visible()) == 65_000 // 97
        await pilot.press("m")
        assert isinstance(app.screen, MatrixScreen)
        table = app.screen.query_one(MatrixTable)
        assert table.cursor_name == "case-00097"


async def test_cases_deselected_from_the_start_are_deselected_in_the_matrix() -> None:
    """The list keeps no result for a case no run of the session selected; the matrix
    takes the runs' own word for it: skipped, deselected."""
    from dataclasses import replace

    from cer.suite.selection import Selection

    chosen = Selection(categories=("functional",))
    ref, other = replace(REF, selection=chosen), replace(OTHER, selection=chosen)
    app = create_app(
        Path("evals.toml"),
        ref,
        run=several(),
        load=fixed_loader(triage_suite()),
        watch=False,
        implementations=(ref, other),
    )
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        assert app.session.lanes[1].board.counts.pending == 5
        await pilot.press("m")
        lines = app.screen.query_one(MatrixTable).plain.splitlines()
        assert " ○ 5 cases deselected everywhere" in lines
        start = lines.index(" ○ 5 cases deselected everywhere")
        assert [line.split()[0] for line in lines[start + 1 :]] == [
            "reports-version",
            "first-result-fast",
            "rejects-empty",
            "survives-deep-nesting",
            "bounded-memory",
        ]


async def test_matrix_view_shows_known_failures_apart(tmp_path: Path) -> None:
    from cer.results.baseline import load_baseline

    path = tmp_path / "known.toml"
    path.write_text(
        '[[known]]\ncase = "renders-tabs"\nstatus = "fail"\nreason = "tabs"\n'
        'implementation = "ref"\n',
        encoding="utf-8",
    )
    app = app_for(several(), baseline=load_baseline(path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        await pilot.press("m")
        table = app.screen.query_one(MatrixTable)
        assert ("renders-tabs", "◇ known") in _cases_and_ref_cells(table.plain)
        totals = str(app.screen.query_one("#matrix-totals").render())
        assert "2 fail · 1 error · 1 skip · 1 known" in totals  # ref: never a pass
        for _ in range(3):  # fails, errors on, then knows to fail
            await pilot.press("f")
        assert "only what ref knows to fail" in str(app.screen.query_one("#group-title").render())
        assert _cases_and_ref_cells(table.plain) == [("renders-tabs", "◇ known")]
