"""Pilot tests of a known-failures baseline on screen: known failures dimmed and marked
``known``, stale entries flagged, the counts in the summary bar, what the Reason pane
says, the verdict the TUI records, and ``cer-tui`` refusing a bad file as ``cer run``
does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cer.engine.options import RunOptions
from cer.history.database import History
from cer.model import Suite
from cer.results.baseline import Baseline, load_baseline
from cer.tui.__main__ import main as tui_main
from cer.tui.app import CerApp, create_app
from cer.tui.widgets.text_pane import TextPane

from .helpers import (
    FakeRunner,
    Implementations,
    fixed_loader,
    make_suite,
    other_outcome,
    ref_outcome,
    run_screen,
    screen_text,
    settle,
    triage_outcome,
    triage_suite,
    wait_until,
)

pytestmark = pytest.mark.anyio

OPTIONS = RunOptions(impl="calc:evaluate")
SIZE = (120, 30)

BASELINE = """\
[[known]]
case = "renders-tabs"
status = "fail"
reason = "tabs are not expanded yet [b]bold?[/b] [/nope]\\u001b[31m"

[[known]]
case = "renders-list"
status = "fail"
reason = "lists were broken once"

[[known]]
case = "survives-deep-nesting"
status = "fail"
reason = "recursion"
"""


def known_app(tmp_path: Path, text: str = BASELINE, **kwargs: Any) -> tuple[CerApp, Baseline]:
    path = tmp_path / "known.toml"
    path.write_text(text, encoding="utf-8")
    baseline = load_baseline(path)
    app = create_app(
        tmp_path / "evals.toml",  # no such file: every cycle loads the suite again
        OPTIONS,
        run=FakeRunner(triage_outcome),
        load=kwargs.pop("load", fixed_loader(triage_suite())),
        watch=False,
        baseline=baseline,
        **kwargs,
    )
    return app, baseline


def cells(app: CerApp, name: str) -> list[str]:
    """The words of the case's row in the list (left of the detail panes)."""
    line = next(line for line in screen_text(app).splitlines() if f" {name} " in line)
    return line.split("▕")[0].split()


async def test_known_failures_are_shown_apart_and_stale_entries_flagged(tmp_path: Path) -> None:
    app, _ = known_app(tmp_path)
    async with app.run_test(size=SIZE):
        await settle(app)
        counts = app.session.board.counts
        assert (counts.failed, counts.known, counts.stale) == (3, 1, 1)
        assert "known" in screen_text(app).splitlines()[2]  # the column's header
        assert cells(app, "renders-tabs")[-3:] == ["known", "24", "ms"]
        assert cells(app, "renders-list")[-3] == "stale"  # listed, and it passes
        # errored where the file lists a failure: a regression, shown as any failure is
        assert cells(app, "survives-deep-nesting")[-3] == "adversarial"
        assert cells(app, "keeps-final-newline")[-3] == "functional"  # unlisted
        summary = screen_text(app).splitlines()[1]
        assert "1 known" in summary and "1 stale" in summary and "✘ 3 failed" in summary

        # the known row is dimmed, the unlisted failure is not
        rows = {
            app.session.board.rows[i].name: n for n, i in enumerate(app.session.board.visible())
        }
        header = run_screen(app).case_list.header

        def dimmed(name: str) -> bool:
            strip = run_screen(app).case_list.render_line(rows[name] + header)
            name_segment = next(seg for seg in strip if name in seg.text)
            return bool(name_segment.style is not None and name_segment.style.dim)

        assert dimmed("renders-tabs")
        assert not dimmed("keeps-final-newline")
        assert not dimmed("renders-list")

        # the Reason pane says why, with the implementation's and the file's text inert
        assert run_screen(app).case_list.select_name("renders-tabs")
        await settle(app)
        reason = str(app.query_one("#reason-pane", TextPane).content)
        assert "known failure: tabs are not expanded yet [b]bold?[/b] [/nope]\\x1b[31m" in reason
        assert f"({tmp_path / 'known.toml'}:1)" in reason
        assert run_screen(app).case_list.select_name("renders-list")
        await settle(app)
        reason = str(app.query_one("#reason-pane", TextPane).content)
        assert "stale: renders-list passes: remove it from the baseline" in reason
        assert run_screen(app).case_list.select_name("survives-deep-nesting")
        await settle(app)
        reason = str(app.query_one("#reason-pane", TextPane).content)
        assert "regression: listed as fail, now errored" in reason


async def test_without_a_baseline_the_list_has_no_known_column(tmp_path: Path) -> None:
    app = create_app(
        Path("evals.toml"),
        OPTIONS,
        run=FakeRunner(triage_outcome),
        load=fixed_loader(triage_suite()),
        watch=False,
    )
    async with app.run_test(size=SIZE):
        await settle(app)
        assert "known" not in screen_text(app).splitlines()[2]
        assert " stale" not in screen_text(app).splitlines()[1]


async def test_the_recorded_run_states_the_baseline_in_its_verdict(tmp_path: Path) -> None:
    history = tmp_path / "history.sqlite"
    app, _ = known_app(tmp_path, history=history)
    async with app.run_test(size=SIZE):
        await settle(app)
        await app.workers.wait_for_complete()
    with History.open(history, create=False) as opened:
        (record,) = opened.runs()
    assert record.statement == (
        "nonconformant: 1 known failure, 3 regressions, 1 stale baseline entry"
    )
    assert record.baseline == str(tmp_path / "known.toml")


def test_cer_tui_refuses_a_bad_baseline_as_cer_run_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "evals.toml").write_text(
        'commonsformat_evals = "0.2"\ntarget = "demo"\n\n[[cases]]\nname = "adds"\n'
        'category = "functional"\ninput = { op = "ok" }\nexpect = { output = 1 }\n',
        encoding="utf-8",
    )
    (tmp_path / "bad.toml").write_text('[[known]]\ncase = "adds"\n', encoding="utf-8")
    (tmp_path / "typo.toml").write_text(
        '[[known]]\ncase = "addz"\nstatus = "fail"\nreason = "x"\n', encoding="utf-8"
    )
    for name, message in (
        ("bad.toml", "bad.toml:1: the entry has no status"),
        ("typo.toml", "typo.toml:1: case 'addz' names no case of evals.toml"),
        ("missing.toml", "missing.toml: no such baseline file"),
    ):
        with pytest.raises(SystemExit) as stopped:
            tui_main(["evals.toml", "--impl", "impl:run", "--baseline", name, "--no-history"])
        assert stopped.value.code == 2
        assert message in capsys.readouterr().err
    # the file named by [tool.cer] baseline is read as --baseline's is
    (tmp_path / "pyproject.toml").write_text(
        '[tool.cer]\nbaseline = "typo.toml"\n', encoding="utf-8"
    )
    with pytest.raises(SystemExit) as stopped:
        tui_main(["evals.toml", "--impl", "impl:run", "--no-history"])
    assert stopped.value.code == 2
    assert "typo.toml:1: case 'addz' names no case of evals.toml" in capsys.readouterr().err


async def test_an_entry_left_naming_no_case_after_an_edit_is_said(tmp_path: Path) -> None:
    whole = triage_suite()
    renamed = make_suite(case for case in whole.cases if case.name != "renders-tabs")
    suites = [whole, renamed]

    def load(path: Path) -> Suite:
        return suites.pop(0) if len(suites) > 1 else suites[0]

    app, _ = known_app(tmp_path, load=load)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        assert not [n for n in app._notifications if n.title == "Baseline"]
        await pilot.press("r")
        await settle(app, runs=2)
        (note,) = [n for n in app._notifications if n.title == "Baseline"]
        assert "known.toml:1: case 'renders-tabs' names no case of evals.toml" in note.message
        assert "cer run refuses this baseline" in note.message


async def test_each_implementation_shows_its_own_known_and_stale_cells(tmp_path: Path) -> None:
    path = tmp_path / "known.toml"
    path.write_text(
        '[[known]]\ncase = "renders-tabs"\nstatus = "fail"\nreason = "tabs"\n', encoding="utf-8"
    )
    ref, other = RunOptions("ref:evaluate"), RunOptions("other:evaluate")
    runner = Implementations(
        {ref.impl: FakeRunner(ref_outcome), other.impl: FakeRunner(other_outcome)}
    )
    app = create_app(
        tmp_path / "evals.toml",
        ref,
        run=runner,
        load=fixed_loader(triage_suite()),
        watch=False,
        implementations=(ref, other),
        baseline=load_baseline(path),
    )
    async with app.run_test(size=SIZE):
        await wait_until(lambda: app.session.runs_finished >= 1)
        await settle(app)
        first, second = (lane.board for lane in app.session.lanes)
        assert (first.counts.known, first.counts.stale) == (1, 0)  # ref fails it as listed
        assert (second.counts.known, second.counts.stale) == (0, 1)  # other passes it
        line = next(line for line in screen_text(app).splitlines() if " renders-tabs " in line)
        assert line.split()[:2] == ["✘", "✔!"]  # the stale entry's mark in other's cell
        summary = screen_text(app).splitlines()[1]
        ref_part, other_part = summary.split("│")[:2]
        assert "1 known" in ref_part and "stale" not in ref_part
        assert "1 stale" in other_part and "known" not in other_part
