"""Pilot tests of the app with a fake runner: deterministic and fast."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from textual.strip import Strip
from textual.widgets import Input, OptionList, TabbedContent

from cer import events
from cer.config import repro_command
from cer.engine.options import RunOptions
from cer.model import Case, CaseResult, RunResult, Status, Suite
from cer.suite.loader import load_suite
from cer.suite.selection import Selection
from cer.tui.app import CerApp, create_app
from cer.tui.keys import APP_KEYS, LIST_KEYS
from cer.tui.screens.group import GroupScreen
from cer.tui.screens.help import HelpScreen
from cer.tui.state.editor import editor_command
from cer.tui.widgets.banner import Banner
from cer.tui.widgets.case_list import CaseList
from cer.tui.widgets.diff_pane import DiffPane
from cer.tui.widgets.output_pane import OutputPane
from cer.tui.widgets.text_pane import TextPane

from .helpers import (
    FakeRunner,
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


def triage_app(runner: FakeRunner | None = None, **kwargs: object) -> CerApp:
    suite = triage_suite()
    return create_app(
        Path("evals.toml"),
        OPTIONS,
        run=runner or FakeRunner(triage_outcome),
        load=fixed_loader(suite),
        watch=False,
        **kwargs,  # type: ignore[arg-type]
    )


def statuses(app: CerApp) -> dict[str, Status | None]:
    return {row.name: row.status for row in app.session.board.rows}


def visible_names(app: CerApp) -> list[str]:
    return [app.session.board.rows[i].name for i in app.session.board.visible()]


async def test_first_run_fills_the_list() -> None:
    app = triage_app()
    async with app.run_test(size=SIZE):
        await settle(app)
        assert len(app.session.board.rows) == 12
        assert statuses(app)["renders-tabs"] is Status.FAIL
        assert statuses(app)["survives-deep-nesting"] is Status.ERRORED
        counts = app.session.board.counts
        assert (counts.passed, counts.failed, counts.errored, counts.skipped) == (7, 3, 1, 1)
        text = screen_text(app)
        assert "✔ 7 passed" in text and "✘ 3 failed" in text and "‼ 1 errored" in text
        assert "✘   renders-tabs" in text
        assert "calc ^1.0 · calc:evaluate · timeout 10 s · not watching · first run" in text
        # The first case is selected and its details are shown.
        assert run_screen(app).case_list.cursor_name == "adds-integers"
        assert "adds-integers" in str(app.query_one("#reason-pane", TextPane).content)


async def test_details_show_reason_diff_output_and_case() -> None:
    app = triage_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        assert run_screen(app).case_list.select_name("renders-tabs")
        await settle(app)
        reason = str(app.query_one("#reason-pane", TextPane).content)
        assert "html: line 1 differs at column 12" in reason
        diff = app.query_one("#diff-pane", DiffPane).plain
        assert "→" in diff and "·" in diff and "⏎" in diff
        await pilot.press(*tabs("diff"))
        assert app.query_one("#details", TabbedContent).active == "diff"
        await pilot.press(*tabs("case", start="diff"))
        assert app.query_one("#details", TabbedContent).active == "case"
        case_text = str(app.query_one("#case-pane", TextPane).content)
        assert "upstream-section:Tabs" in case_text and "input" in case_text
        await pilot.press(*tabs("coverage", start="case"))
        assert app.query_one("#details", TabbedContent).active == "coverage"
        await pilot.press(*tabs("reason", start="coverage"))
        assert app.query_one("#details", TabbedContent).active == "reason"
        assert run_screen(app).case_list.select_name("survives-deep-nesting")
        await settle(app)
        output = app.query_one("#output-pane", OutputPane).plain
        assert "── stderr ──" in output and "RecursionError" in output
        await pilot.press("enter")
        assert app.focused is app.query_one("#reason-pane")
        await pilot.press("escape")
        assert app.focused is run_screen(app).case_list


async def test_failures_only_filter_and_group_by() -> None:
    app = triage_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        await pilot.press("f")
        assert visible_names(app) == [
            "renders-tabs",
            "keeps-final-newline",
            "survives-deep-nesting",
            "divides-by-zero",
        ]
        assert "showing 4 of 12 (failures only)" in screen_text(app)
        await pilot.press("f")
        assert len(visible_names(app)) == 12

        await pilot.press("slash")
        assert app.query_one("#filter", Input).has_focus
        await pilot.press(*"host")
        assert visible_names(app) == ["rejects-empty", "survives-deep-nesting"]
        await pilot.press("enter")
        assert app.focused is run_screen(app).case_list
        assert visible_names(app) == ["rejects-empty", "survives-deep-nesting"]
        await pilot.press("escape")
        assert len(visible_names(app)) == 12

        # Filter by category and by name words.
        await pilot.press("slash")
        app.query_one("#filter", Input).value = "timing"
        await pilot.press("enter")
        assert visible_names(app) == ["first-result-fast"]
        await pilot.press("escape")

        await pilot.press("g")
        assert isinstance(app.screen, GroupScreen)
        options = app.screen.query_one(OptionList)
        labels = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        arithmetic = next(label for label in labels if "upstream-section:Arithmetic" in label)
        assert " 67%" in arithmetic and "✔     2  ✘     1" in arithmetic and "of 3" in arithmetic
        tabs_row = next(label for label in labels if "upstream-section:Tabs" in label)
        assert "  0%" in tabs_row and "of 2" in tabs_row
        assert any("upstream-section:*" in label for label in labels)
        index = labels.index(tabs_row)
        options.highlighted = index
        await pilot.press("enter")
        assert not isinstance(app.screen, GroupScreen)
        assert visible_names(app) == ["renders-tabs", "keeps-final-newline"]
        assert "tag = upstream-section:Tabs" in screen_text(app)
        # Group and failures-only combine.
        await pilot.press("f")
        assert visible_names(app) == ["renders-tabs", "keeps-final-newline"]
        await pilot.press("f")
        # "All cases" clears the group.
        await pilot.press("g")
        app.screen.query_one(OptionList).highlighted = 0
        await pilot.press("enter")
        assert len(visible_names(app)) == 12


async def test_rerun_failed_runs_only_failures_and_keeps_the_rest() -> None:
    runner = FakeRunner(triage_outcome)
    app = triage_app(runner)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        before = statuses(app)
        await pilot.press("R")
        await settle(app, runs=2)
        assert len(runner.calls) == 2
        assert runner.calls[1].names == frozenset(
            {"renders-tabs", "keeps-final-newline", "survives-deep-nesting", "divides-by-zero"}
        )
        # Deselected cases keep their previous results instead of turning skipped.
        assert statuses(app) == before
        assert "rerun: 4 failed cases" in screen_text(app)


async def test_rerun_all_marks_fixed_and_regressed() -> None:
    fixed_now = {"renders-tabs"}
    broken_now = {"adds-integers"}
    second = False

    def outcome(case: Case) -> CaseResult:
        if second and case.name in fixed_now:
            return passing(case)
        if second and case.name in broken_now:
            return result_for(case, Status.FAIL, reason="wrong")
        return triage_outcome(case)

    runner = FakeRunner(outcome)
    app = triage_app(runner)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        second = True
        await pilot.press("r")
        await settle(app, runs=2)
        counts = app.session.board.counts
        assert (counts.fixed, counts.regressed) == (1, 1)
        text = screen_text(app)
        assert "+1 fixed  −1 regressed" in text
        assert "✘−  adds-integers" in text
        assert "✔+  renders-tabs" in text
        # The toast reports the change.
        assert any("regressed" in str(n.message) for n in app._notifications)


async def test_selection_persists_across_reruns_and_suite_changes() -> None:
    suite = triage_suite()
    current = {"suite": suite}
    runner = FakeRunner(triage_outcome)
    app = create_app(
        Path("evals.toml"),
        OPTIONS,
        run=runner,
        load=lambda path: current["suite"],
        watch=False,
    )
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        await pilot.press("j", "j", "j", "j")
        assert run_screen(app).case_list.cursor_name == "keeps-final-newline"
        await pilot.press("r")
        await settle(app, runs=2)
        assert run_screen(app).case_list.cursor_name == "keeps-final-newline"
        # Two new cases before it: the cursor follows the name, not the position.
        new_cases = (make_case("new-one", 1), make_case("new-two", 2))
        moved = tuple(replace(c, position=c.position + 2) for c in suite.cases)
        current["suite"] = replace(make_suite((*new_cases, *moved)), content_hash="changed")
        app.control.suite_cache = None
        await pilot.press("r")
        await settle(app, runs=3)
        assert app.session.board.rows[0].name == "new-one"
        assert run_screen(app).case_list.cursor_name == "keeps-final-newline"
        assert run_screen(app).case_list.cursor == 6
        # Filtering keeps it when it stays visible.
        await pilot.press("f")
        assert run_screen(app).case_list.cursor_name == "keeps-final-newline"


async def test_stale_rows_are_kept_while_a_rerun_is_in_flight() -> None:
    runner = FakeRunner(triage_outcome, block_after=None)
    app = triage_app(runner)
    async with app.run_test(size=SIZE):
        await settle(app)
        before = {row.name: row.status for row in app.session.board.rows}
        # Second run blocks after three cases until it is cancelled.
        runner.block_after = 3
        runner.calls.clear()
        run_screen(app).action_rerun_all()
        await wait_until(lambda: app.session.board.done >= 3)
        rows = app.session.board.rows
        assert all(row.result is not None for row in rows)
        # The three cases run so far (the failed ones come first) are fresh; the rest
        # are stale and still show their old results.
        assert {row.name for row in rows if not row.stale} == set(runner.finished[-1][:3])
        stale = [row for row in rows if row.stale]
        assert len(stale) == 9
        assert all(row.status is before[row.name] for row in stale)
        assert "3/12" in screen_text(app)
        run_screen(app).action_rerun_all()  # cancels the blocked run
        await settle(app, runs=2)
        assert runner.cancelled == 1
        assert not any(row.stale for row in rows)


async def test_import_failure_shows_banner_and_errored_cases() -> None:
    runner = FakeRunner(
        triage_outcome,
        import_failure=(
            "ModuleNotFoundError: No module named 'calc'",
            "Traceback (most recent call last):\nModuleNotFoundError: No module named 'calc'\n",
        ),
    )
    app = triage_app(runner)
    async with app.run_test(size=SIZE):
        await settle(app)
        banner = app.query_one(Banner)
        assert banner.kind == "import-error"
        await wait_until(lambda: "could not be loaded" in screen_text(app))
        # The error once: in the banner's title, not again at the traceback's end.
        assert "No module named 'calc'" not in banner.body
        assert "Traceback (most recent call last):" in banner.body
        assert set(statuses(app).values()) == {Status.ERRORED}
        runner.import_failure = None
        run_screen(app).action_rerun_all()
        await settle(app, runs=2)
        assert banner.kind is None


async def test_keys_help_copy_edit_theme_and_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    launched: list[list[str]] = []

    def launcher(command: object) -> int:
        launched.append(list(command))  # type: ignore[call-overload]
        return 0

    app = triage_app(launcher=launcher)
    async with app.run_test(size=(120, 40)) as pilot:  # tall enough for the whole help
        await settle(app)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        help_text = screen_text(app)
        for key in (*APP_KEYS, *LIST_KEYS):
            assert key.help in help_text
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)

        await pilot.press("G")
        assert run_screen(app).case_list.cursor_name == "parses-unicode-minus"
        await pilot.press("home", "j", "y")
        assert app.clipboard == "cer run evals.toml --impl calc:evaluate --case adds-floats"

        monkeypatch.setenv("VISUAL", "")
        monkeypatch.setenv("EDITOR", "nano")
        # Headless runs cannot suspend: the app says so instead of crashing.
        await pilot.press("e")
        assert any("editor" in str(n.message) for n in app._notifications)

        before = app.theme
        style_before = run_screen(app).case_list.get_component_rich_style("case-list--pass")
        await pilot.press("t")
        assert app.theme != before
        assert run_screen(app).case_list.get_component_rich_style("case-list--pass") != style_before
        names = list(app.themes)
        for _ in range(len(names) - 1):
            await pilot.press("t")
        assert app.theme == before

        # --no-watch: pausing has nothing to pause.
        await pilot.press("p")
        assert not app.control.paused


def test_editor_and_repro_commands() -> None:
    path = Path("suite/evals.toml")
    whole = str(path.absolute())
    assert editor_command("vim", path, 12) == ["vim", "+12", "--", whole]
    assert editor_command("code --wait", path, 3) == ["code", "--wait", "--goto", f"{whole}:3"]
    assert editor_command("nano", path, None) == ["nano", "--", whole]
    assert editor_command("ed", path, 2) == ["ed", "+2", whole]
    options = RunOptions(impl="pkg.mod:run", paths=("src",), timeout=2.5, isolation="none")
    assert repro_command(path, options, "case one") == (
        "cer run suite/evals.toml --impl pkg.mod:run --path src --timeout 2.5 "
        "--isolation none --case 'case one'"
    )


@pytest.mark.slow
async def test_65000_cases_stay_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    cases = [
        make_case(f"case-{i:05d}", i, tags=(f"upstream-section:S{i % 40}",))
        for i in range(1, 65_001)
    ]
    suite = make_suite(cases)

    def outcome(case: Case) -> CaseResult:
        return passing(case) if case.position % 97 else result_for(case, Status.FAIL)

    drawn: list[int] = []
    original = CaseList.render_line

    def counting(self: CaseList, y: int) -> Strip:
        drawn.append(y)
        return original(self, y)

    monkeypatch.setattr(CaseList, "render_line", counting)
    app = create_app(
        Path("evals.toml"),
        OPTIONS,
        run=FakeRunner(outcome),
        load=fixed_loader(suite),
        watch=False,
    )
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        assert app.session.board.counts.failed == 65_000 // 97
        assert "case-00001" in screen_text(app)
        height = run_screen(app).case_list.size.height
        # Only the rows on screen are ever drawn, however long the list.
        drawn.clear()
        await pilot.press("end")
        await pilot.press("pageup", "k", "k")
        await pilot.pause()
        # A page is the list's height less its column headers and one row of overlap.
        assert run_screen(app).case_list.cursor_name == f"case-{65_000 - (height - 2) - 2:05d}"
        assert "case-64" in screen_text(app)
        assert 0 < len(drawn) <= 6 * height
        assert max(drawn) < height
        await pilot.press("f")
        assert len(app.session.board.visible()) == 65_000 // 97


def real_suite_text(extra: str = "") -> str:
    return (
        'commonsformat_evals = "0.2"\ntarget = "calc"\ntarget_version = "^1.0"\n\n'
        '[[cases]]\nname = "one"\ncategory = "functional"\ninput = { x = 1 }\n'
        "expect = { output = 1 }\n\n"
        '[[cases]]\nname = "two"\ncategory = "functional"\ninput = { x = 2 }\n'
        "expect = { output = 2 }\n" + extra
    )


async def test_broken_suite_shows_banner_and_recovers(tmp_path: Path) -> None:
    suite_path = tmp_path / "evals.toml"
    suite_path.write_text(real_suite_text())
    runner = FakeRunner(passing)
    app = create_app(suite_path, OPTIONS, run=runner, load=load_suite, watch=True)
    async with app.run_test(size=SIZE):
        await settle(app)
        assert [row.name for row in app.session.board.rows] == ["one", "two"]
        await wait_until(lambda: app.control.plan is not None)

        suite_path.write_text(real_suite_text('\n[[cases]]\nname = "three"\ncategory = \n'))
        banner = app.query_one(Banner)
        await wait_until(lambda: banner.kind == "suite-error")
        assert "evals.toml" in banner.body and ":" in banner.body
        await wait_until(lambda: "does not load" in screen_text(app))
        # The last results stay, dimmed.
        assert [row.status for row in app.session.board.rows] == [Status.PASS, Status.PASS]
        assert run_screen(app).case_list.has_class("-dimmed")
        assert all(row.stale for row in app.session.board.rows)

        suite_path.write_text(
            real_suite_text(
                '\n[[cases]]\nname = "three"\ncategory = "functional"\ninput = { x = 3 }\n'
                "expect = { output = 3 }\n"
            )
        )
        await wait_until(lambda: banner.kind is None and app.session.runs_finished >= 2)
        await settle(app, runs=2)
        assert [row.name for row in app.session.board.rows] == ["one", "two", "three"]
        assert not run_screen(app).case_list.has_class("-dimmed")
        assert not any(row.stale for row in app.session.board.rows)


def impl_outcome(impl: Path):  # type: ignore[no-untyped-def]
    """Fail the cases whose names the 'implementation' file lists."""

    def outcome(case: Case) -> CaseResult:
        failing = set(impl.read_text().split())
        if case.name in failing:
            return result_for(case, Status.FAIL, reason="listed in impl.py")
        return passing(case)

    return outcome


async def test_editing_the_implementation_reruns(tmp_path: Path) -> None:
    suite_path = tmp_path / "evals.toml"
    suite_path.write_text(real_suite_text())
    impl = tmp_path / "pkg" / "impl.py"
    impl.parent.mkdir()
    impl.write_text("one two")
    runner = FakeRunner(impl_outcome(impl), sources=(str(impl),))
    app = create_app(suite_path, OPTIONS, run=runner, load=load_suite, watch=True)
    async with app.run_test(size=SIZE):
        await settle(app)
        assert set(statuses(app).values()) == {Status.FAIL}
        # The watcher picks up the implementation's own folder once it is reported.
        await wait_until(
            lambda: app.control.plan is not None and impl.resolve() in app.control.plan.sources
        )
        assert "watching 2 paths" in screen_text(app)
        impl.write_text("two")
        await wait_until(lambda: app.session.runs_finished >= 2, timeout=5)
        await settle(app, runs=2)
        assert statuses(app) == {"one": Status.PASS, "two": Status.FAIL}
        assert "rerun: " in screen_text(app) and "impl.py changed" in screen_text(app)
        # Noise does not trigger a run.
        (impl.parent / "__pycache__").mkdir()
        (impl.parent / "__pycache__" / "impl.cpython-311.pyc").write_bytes(b"x")
        (impl.parent / ".impl.py.swp").write_text("x")
        (tmp_path / "notes.txt").write_text("x")
        await pilot_sleep(0.3)
        assert app.session.runs_started == 2


async def test_change_mid_run_cancels_and_restarts(tmp_path: Path) -> None:
    suite_path = tmp_path / "evals.toml"
    suite_path.write_text(real_suite_text())
    impl = tmp_path / "impl.py"
    impl.write_text("one")
    runner = FakeRunner(impl_outcome(impl), sources=(str(impl),), block_after=1)
    app = create_app(suite_path, OPTIONS, run=runner, load=load_suite, watch=True)
    async with app.run_test(size=SIZE):
        await wait_until(lambda: app.session.board.done >= 1)
        assert app.session.board.running
        await wait_until(
            lambda: app.control.plan is not None and impl.resolve() in app.control.plan.sources
        )
        impl.write_text("two")
        await settle(app, runs=1)
        assert runner.cancelled == 1
        assert len(runner.calls) == 2
        assert app.session.runs_finished == 1
        assert statuses(app) == {"one": Status.PASS, "two": Status.FAIL}


async def test_pause_holds_changes_until_resumed(tmp_path: Path) -> None:
    suite_path = tmp_path / "evals.toml"
    suite_path.write_text(real_suite_text())
    impl = tmp_path / "impl.py"
    impl.write_text("one")
    runner = FakeRunner(impl_outcome(impl), sources=(str(impl),))
    app = create_app(suite_path, OPTIONS, run=runner, load=load_suite, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        await wait_until(
            lambda: app.control.plan is not None and impl.resolve() in app.control.plan.sources
        )
        await pilot.press("p")
        assert "watching paused" in screen_text(app)
        impl.write_text("two")
        await wait_until(lambda: "1 changed" in screen_text(app))
        assert app.session.runs_started == 1
        await pilot.press("p")
        await settle(app, runs=2)
        assert statuses(app) == {"one": Status.PASS, "two": Status.FAIL}


async def pilot_sleep(seconds: float) -> None:
    import asyncio

    await asyncio.sleep(seconds)


def test_unknown_theme_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown theme"):
        create_app(Path("evals.toml"), OPTIONS, theme="no-such-theme")


def test_selection_of_options_is_the_base_for_reruns() -> None:
    base = Selection(categories=("functional",))
    app = create_app(Path("evals.toml"), replace(OPTIONS, selection=base), watch=False)
    assert app.settings.base_selection == base


async def test_a_crashing_runner_shows_a_banner_until_a_run_finishes() -> None:
    runner = FakeRunner(triage_outcome)
    crash = {"on": True}

    def run(suite: Suite, options: RunOptions, **kwargs: Any) -> RunResult:
        if crash["on"]:
            raise RuntimeError("the runner broke")
        return runner(suite, options, **kwargs)

    app = create_app(
        Path("evals.toml"), OPTIONS, run=run, load=fixed_loader(triage_suite()), watch=False
    )
    async with app.run_test(size=SIZE):
        await wait_until(lambda: run_screen(app).banner.kind == "run-error")
        assert (
            "the runner broke" in screen_text(app) or "RuntimeError" in run_screen(app).banner.body
        )
        assert not app.session.board.running
        crash["on"] = False
        run_screen(app).action_rerun_all()
        await settle(app)
        assert run_screen(app).banner.kind is None


async def test_the_end_of_a_run_takes_the_results_that_did_not_stream() -> None:
    """The rows take each result as it streams; the end of the run hands over the
    results that did not stream (one never streamed, one differs from what streamed),
    so that the list shows the run's own results, which the board does not copy."""
    suite = triage_suite()
    first, last = suite.cases[0], suite.cases[-1]

    def run(
        suite: Suite,
        options: RunOptions,
        *,
        on_event: Callable[[events.RunEvent], None] | None = None,
        cancel: object = None,
    ) -> RunResult:
        emit = on_event or (lambda event: None)
        results = [passing(case) for case in suite.cases]
        emit(events.RunStarted("r", suite, options.impl, len(results)))
        emit(events.ImplementationLoaded(f"{options.impl}@x", ()))
        for done, result in enumerate(results[:-1], 1):  # the last one never streams
            emit(events.CaseFinished(result, done, len(results)))
        results[0] = result_for(first, Status.FAIL, reason="judged again")
        run = RunResult("r", "calc", f"{options.impl}@x", 0, 10, tuple(results))
        emit(events.RunFinished(run))
        return run

    app = create_app(Path("evals.toml"), OPTIONS, run=run, load=fixed_loader(suite), watch=False)
    async with app.run_test(size=SIZE):
        await settle(app)
        assert statuses(app) == {
            case.name: Status.FAIL if case is first else Status.PASS for case in suite.cases
        }
        row = app.session.board.row(first.name)
        assert row is not None and row.result is not None
        assert row.result.reason == "judged again"
        kept = app.session.board.row(last.name)
        assert kept is not None and kept.result == replace(passing(last), observation=None)
        assert (app.session.board.done, app.session.board.total) == (
            len(suite.cases),
            len(suite.cases),
        )
        assert app.session.board.last_run is not None and app.session.board.last_run.results == ()
