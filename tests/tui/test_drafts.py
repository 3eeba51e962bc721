"""Pilot tests of the drafts screen: review, accept, accept observed, edit, skip, discard.

The drafts run against the real calc reference implementation on a copy of
examples/calc whose left-associativity and floor-semantics cases are removed.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest
import tomlkit
from textual.app import App

from cer.constraints import suite_coverage
from cer.engine.options import RunOptions
from cer.history.database import History
from cer.model import Case, CaseResult, Status
from cer.review.derive import derive
from cer.review.drafts import add_drafts, drafts_path, load_drafts
from cer.suite.loader import load_suite
from cer.tui.app import create_app
from cer.tui.screens.drafts import ConfirmScreen, DraftsScreen
from support import EXAMPLES
from tui.helpers import (
    FakeRunner,
    fixed_loader,
    result_for,
    screen_text,
    settle,
    triage_outcome,
    triage_suite,
    wait_until,
)

pytestmark = pytest.mark.anyio

SIZE = (120, 30)
OPTIONS = RunOptions(impl="calc_ref:evaluate", timeout=20)


def _calc(tmp_path: Path) -> Path:
    folder = tmp_path / "calc"
    shutil.copytree(EXAMPLES / "calc", folder, ignore=shutil.ignore_patterns(".cer", "__pycache__"))
    suite_path = folder / "evals.toml"
    document = tomlkit.parse(suite_path.read_text(encoding="utf-8"))
    for array in ("cases", "adversarial", "generator_adversary"):
        entries = document[array]
        for index in reversed(range(len(entries))):
            verifies = entries[index].get("verifies", [])
            if "left-associativity" in verifies or "floor-semantics" in verifies:
                del entries[index]
    suite_path.write_text(document.as_string(), encoding="utf-8")
    suite = load_suite(suite_path)
    coverage = suite_coverage(suite)
    assert coverage is not None
    path = drafts_path(suite_path)
    add_drafts(path, derive(suite, coverage).drafts)
    text = path.read_text(encoding="utf-8").replace(
        'name = "floor-semantics-case"\n',
        'name = "floor-semantics-case"\ninput = { expr = "7 // -2" }\n',
    )
    path.write_text(text, encoding="utf-8")
    return suite_path


class Host(App[None]):
    """A bare app that opens the drafts screen, as cer-tui does on D."""

    def __init__(self, screen: DraftsScreen) -> None:
        super().__init__()
        self.drafts = screen

    def on_mount(self) -> None:
        self.push_screen(self.drafts)


def _ran(screen: DraftsScreen) -> bool:
    return len(screen.runs) == sum(1 for d in screen.drafts if d.input is not None) > 0


async def test_drafts_run_and_accept_as_written(tmp_path: Path) -> None:
    suite_path = _calc(tmp_path)
    before = suite_path.read_text(encoding="utf-8")
    history = tmp_path / "h.sqlite"
    screen = DraftsScreen(suite_path, OPTIONS, history=history, approver="Ada")
    app = Host(screen)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(lambda: _ran(screen) and "passes" in screen_text(app), timeout=90)
        text = screen_text(app)
        assert "left-associativity-example" in text
        assert "✔ passes" in text
        assert 'observed {"value": -4}' in text
        assert "never counted in totals, verdict or history" in text
        assert screen.current is not None
        assert screen.current.name == "left-associativity-example"
        await pilot.press("a")
        await wait_until(lambda: "left-associativity-example" not in screen_text(app))
    suite = load_suite(suite_path)
    assert suite.case("left-associativity-example").expect == {"value": 3}
    assert suite_path.read_text(encoding="utf-8").startswith(before[:200])
    with History.open(history) as recorded:
        (event,) = recorded.approvals()
    assert (event.case_name, event.approver, event.from_observation) == (
        "left-associativity-example",
        "Ada",
        False,
    )


async def test_accepting_the_observed_value_asks_first(tmp_path: Path) -> None:
    suite_path = _calc(tmp_path)
    screen = DraftsScreen(suite_path, OPTIONS, approver="Grace")
    app = Host(screen)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(lambda: _ran(screen), timeout=90)
        names = [d.name for d in screen.drafts]
        await pilot.press("s")  # skip to the draft that has only an observation
        assert screen.current is not None and screen.current.name == names[1]
        assert screen.current.name == "floor-semantics-case"
        await pilot.press("o")
        await wait_until(lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("n")  # declined: nothing changes
        await wait_until(lambda: app.screen is screen)
        assert "floor-semantics-case" not in {c.name for c in load_suite(suite_path).cases}
        await pilot.press("o")
        await wait_until(lambda: isinstance(app.screen, ConfirmScreen))
        assert 'expect = {"value": -4}' in screen_text(app)
        await pilot.press("y")
        await wait_until(lambda: "floor-semantics-case" not in [d.name for d in screen.drafts])
    case = load_suite(suite_path).case("floor-semantics-case")
    assert case.expect == {"value": -4}
    assert ", expectation observed, sha256 " in suite_path.read_text(encoding="utf-8")


async def test_accept_refuses_a_draft_without_an_expectation(tmp_path: Path) -> None:
    suite_path = _calc(tmp_path)
    before = suite_path.read_bytes()
    screen = DraftsScreen(suite_path, OPTIONS, approver="Ada")
    app = Host(screen)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(lambda: _ran(screen), timeout=90)
        await pilot.press("s", "a")
        await pilot.pause()
        assert suite_path.read_bytes() == before
        assert "floor-semantics-case" in [d.name for d in screen.drafts]


async def test_discard_and_edit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    suite_path = _calc(tmp_path)
    launched: list[Sequence[str]] = []

    def launcher(command: Sequence[str]) -> int:
        launched.append(command)
        return 0

    screen = DraftsScreen(suite_path, OPTIONS, launcher=launcher)
    app = Host(screen)
    # Headless runs cannot suspend; pretend this terminal can.
    monkeypatch.setattr(Host, "suspend", lambda self: contextlib.nullcontext())
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(lambda: _ran(screen), timeout=90)
        await pilot.press("d")
        await wait_until(lambda: "left-associativity-example" not in screen_text(app))
        drafts = load_drafts(drafts_path(suite_path))
        assert drafts.discarded == ("left-associativity-example",)
        await pilot.press("e")
        await pilot.pause()
    (command,) = launched
    assert command[-1] == str(drafts_path(suite_path).absolute())
    assert command[-2] == "--"
    assert command[-3].startswith("+")


async def test_drafts_never_reach_the_case_list_or_the_counts(tmp_path: Path) -> None:
    suite = triage_suite(tmp_path / "evals.toml")
    (tmp_path / "evals.toml").write_text(
        'commonsformat_evals = "0.2"\n\n[[cases]]\nname = "one"\ncategory = "functional"\n'
        'input = { source = "a" }\nexpect = { output = "a" }\n',
        encoding="utf-8",
    )
    (tmp_path / "evals.drafts.toml").write_text(
        '[[drafts]]\nname = "a-draft"\nconstraint = "x"\nenforceability = "mechanical"\n'
        'array = "cases"\ncategory = "functional"\ninput = { source = "a" }\n'
        'expect = { output = "b" }\n',
        encoding="utf-8",
    )
    runner = FakeRunner(triage_outcome)
    app = create_app(
        tmp_path / "evals.toml",
        RunOptions(impl="calc:evaluate"),
        run=runner,
        load=fixed_loader(suite),
        watch=False,
    )
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        counts = app.session.board.counts
        assert "a-draft" not in {row.name for row in app.session.board.rows}
        await pilot.press("D")
        await wait_until(lambda: isinstance(app.screen, DraftsScreen))
        drafts = app.screen
        assert isinstance(drafts, DraftsScreen)
        await wait_until(lambda: "a-draft" in drafts.runs)
        assert "a-draft" in screen_text(app)
        await pilot.press("escape")
        await wait_until(lambda: not isinstance(app.screen, DraftsScreen))
        assert app.session.board.counts == counts
        assert "a-draft" not in {row.name for row in app.session.board.rows}


async def test_what_the_implementation_says_is_shown_never_obeyed(tmp_path: Path) -> None:
    suite = triage_suite(tmp_path / "evals.toml")
    (tmp_path / "evals.drafts.toml").write_text(
        '[[drafts]]\nname = "a-draft"\nconstraint = "x"\nenforceability = "mechanical"\n'
        'array = "cases"\ncategory = "functional"\ninput = { source = "a" }\n'
        'expect = { output = "b" }\n',
        encoding="utf-8",
    )

    def hostile(case: Case) -> CaseResult:
        return result_for(case, Status.FAIL, reason="[/] broken [bold]loud")

    screen = DraftsScreen(
        tmp_path / "evals.toml",
        RunOptions(impl="calc:evaluate"),
        run=FakeRunner(hostile),
        load=fixed_loader(suite),
    )
    app = Host(screen)
    async with app.run_test(size=SIZE):
        await wait_until(lambda: "a-draft" in screen.runs)
        await wait_until(lambda: "broken" in screen_text(app))
        assert "✘ fail: [/] broken [bold]loud" in screen_text(app)


async def test_j_and_k_move_through_the_drafts(tmp_path: Path) -> None:
    suite_path = _calc(tmp_path)
    screen = DraftsScreen(suite_path, OPTIONS, approver="Ada")
    app = Host(screen)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(lambda: screen.current is not None)
        names = [draft.name for draft in screen.drafts]
        assert len(names) > 1
        assert screen.current is not None and screen.current.name == names[0]
        await pilot.press("j")
        await pilot.pause()
        assert screen.current.name == names[1]
        await pilot.press("k")
        await pilot.pause()
        assert screen.current.name == names[0]
