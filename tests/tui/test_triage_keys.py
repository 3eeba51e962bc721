"""Run just this, where it failed, and terminal manners: s, n, E, ctrl+c, shift+tab,
the list's column headers, the footer at 80 columns and the timeout in the summary bar."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input

from cer.engine.options import RunOptions
from cer.model import Case, CaseResult, Status
from cer.tui.app import CerApp, create_app
from cer.tui.state.details import PANES
from cer.tui.widgets.text_pane import TextPane

from .helpers import (
    FakeRunner,
    fixed_loader,
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

OPTIONS = RunOptions(impl="calc:evaluate", timeout=2.0)
SIZE = (120, 30)


def app_for(runner: FakeRunner, **kwargs: object) -> CerApp:
    return create_app(
        Path("evals.toml"),
        OPTIONS,
        run=runner,
        load=fixed_loader(triage_suite()),
        watch=False,
        **kwargs,  # type: ignore[arg-type]
    )


def ran(runner: FakeRunner, call: int) -> set[str]:
    """The names of the cases the ``call``-th run executed."""
    selection = runner.calls[call]
    return {c.name for c in triage_suite().cases if selection.is_everything or selection.selects(c)}


async def test_the_list_has_column_headers() -> None:
    app = app_for(FakeRunner(triage_outcome))
    async with app.run_test(size=SIZE):
        await settle(app)
        lines = screen_text(app).splitlines()
        header = lines[2]
        # Columns that do not fit beside the panes are left out, their header too.
        for title in ("case", "class", "time"):
            assert f" {title} " in f"{header} ", header
        assert header.index("case") < header.index("class") < header.index("time")
        assert "adds-integers" in lines[3]


async def test_the_footer_fits_80_columns_with_the_most_used_keys_first() -> None:
    app = app_for(FakeRunner(triage_outcome))
    async with app.run_test(size=(80, 24)):
        await settle(app)
        await wait_until(lambda: "q Quit" in screen_text(app))
        footer = screen_text(app).splitlines()[-1]
        assert footer.startswith("tab Pane r Rerun s This n Only R Failed f Failures"), footer
        assert footer.endswith("q Quit") and len(footer) <= 80, footer


async def test_ctrl_c_quits() -> None:
    app = app_for(FakeRunner(triage_outcome))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        await pilot.press("ctrl+c")
        await wait_until(lambda: not app.is_running)


async def test_ctrl_c_quits_while_typing_a_filter() -> None:
    app = app_for(FakeRunner(triage_outcome))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        await pilot.press("slash", "a")
        await pilot.press("ctrl+c")
        await wait_until(lambda: not app.is_running)


async def test_shift_tab_changes_the_pane_and_keeps_the_focus_on_the_list() -> None:
    app = app_for(FakeRunner(triage_outcome))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        details = app.query_one("#details")
        assert app.focused is run_screen(app).case_list
        last, two_back = PANES[-1].name, PANES[-3].name
        await pilot.press(*tabs(last, back=True))
        assert details.active == last  # type: ignore[attr-defined]
        assert app.focused is run_screen(app).case_list
        await pilot.press(*tabs(two_back, start=last, back=True))
        assert details.active == two_back  # type: ignore[attr-defined]
        assert app.focused is run_screen(app).case_list
        await pilot.press("j")
        assert run_screen(app).case_list.cursor_name == "adds-floats"
        await pilot.press("enter", "shift+tab")
        assert isinstance(app.focused, TextPane) or app.focused is not run_screen(app).case_list
        assert app.focused is not None and app.focused.has_focus


async def test_s_reruns_the_highlighted_case_alone_and_dims_the_rest() -> None:
    runner = FakeRunner(triage_outcome)
    app = app_for(runner)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        await pilot.press("j", "s")
        await settle(app, runs=2)
        assert ran(runner, 1) == {"adds-floats"}
        assert app.session.trigger == "rerun: adds-floats"
        rows = {row.name: row for row in app.session.board.rows}
        assert not rows["adds-floats"].stale
        assert rows["adds-integers"].stale and rows["adds-integers"].status is Status.PASS


async def test_n_runs_only_the_matching_cases_until_cleared() -> None:
    runner = FakeRunner(triage_outcome)
    app = app_for(runner)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        await pilot.press("n")
        assert app.query_one("#pattern", Input).has_focus
        await pilot.press(*"renders", "enter")
        await settle(app, runs=2)
        assert ran(runner, 1) == {"renders-tabs", "renders-list"}
        assert "only 'renders'" in screen_text(app)
        # r keeps the pattern
        await pilot.press("r")
        await settle(app, runs=3)
        assert ran(runner, 2) == {"renders-tabs", "renders-list"}
        assert "only 'renders'" in screen_text(app)
        # an empty pattern clears it
        # s reruns the highlighted case even when the pattern leaves it out
        await pilot.press("home", "s")
        await settle(app, runs=4)
        assert ran(runner, 3) == {"adds-integers"}
        # n opens empty, the pattern in force in its placeholder: n Enter clears it.
        await pilot.press("n")
        field = app.query_one("#pattern", Input)
        assert field.value == "" and "only 'renders' now" in field.placeholder
        await pilot.press("enter")
        await settle(app, runs=5)
        assert len(ran(runner, 4)) == 12
        assert "only '" not in screen_text(app)


async def test_a_pattern_that_matches_nothing_is_refused() -> None:
    runner = FakeRunner(triage_outcome)
    app = app_for(runner)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        await pilot.press("n", *"zzz", "enter")
        await pilot.pause()
        assert run_screen(app).summary_state.pattern == ""  # none in force
        assert any("No case name matches" in str(n.message) for n in app._notifications)
        assert len(runner.calls) == 1


async def test_the_header_shows_the_timeout() -> None:
    app = app_for(FakeRunner(triage_outcome))
    async with app.run_test(size=SIZE):
        await settle(app)
        header, summary = screen_text(app).splitlines()[:2]
        assert f"timeout {app.settings.options.timeout:g} s" in header
        assert "timeout" not in summary


def _failing_in(source: Path) -> FakeRunner:
    def outcome(case: Case) -> CaseResult:
        if case.name != "adds-floats":
            return triage_outcome(case)
        return result_for(
            case,
            Status.ERRORED,
            reason="the implementation raised KeyError: 'x'",
            traceback=(
                "Traceback (most recent call last):\n"
                '  File "/opt/cer/src/cer/worker.py", line 177, in _call\n'
                "    box[0] = func(*args, **kwargs)\n"
                f'  File "{source}", line 3, in evaluate\n'
                "    raise KeyError('x')\n"
                "KeyError: 'x'\n"
            ),
        )

    # The supervisor checked the file as loaded: only such a file is read or opened.
    return FakeRunner(outcome, sources=(str(source),))


async def test_the_reason_pane_shows_the_implementation_line(tmp_path: Path) -> None:
    source = tmp_path / "calc.py"
    source.write_text("def evaluate(x):\n    y = 1\n    raise KeyError('x')\n", encoding="utf-8")
    app = app_for(_failing_in(source))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        await pilot.press("j")
        await settle(app)
        text = screen_text(app)
        assert f"at {source}:3 in evaluate" in text or "calc.py:3 in evaluate" in text
        assert "> 3 |     raise KeyError('x')" in text


async def test_capital_e_opens_the_editor_at_the_implementation_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "calc.py"
    source.write_text("def evaluate(x):\n    y = 1\n    raise KeyError('x')\n", encoding="utf-8")
    launched: list[list[str]] = []

    def launcher(command: object) -> int:
        launched.append(list(command))  # type: ignore[call-overload]
        return 0

    app = app_for(_failing_in(source), launcher=launcher)
    monkeypatch.setenv("VISUAL", "")
    monkeypatch.setenv("EDITOR", "nano")
    monkeypatch.setattr(CerApp, "suspend", _no_suspend)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        await pilot.press("E")
        assert launched == []  # adds-integers passed: nothing to open
        assert any("No line of the implementation" in str(n.message) for n in app._notifications)
        await pilot.press("j", "E")
        assert launched == [["nano", "+3", "--", str(source)]]


class _Suspended:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _no_suspend(self: CerApp) -> _Suspended:
    return _Suspended()
