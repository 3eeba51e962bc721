"""Watching a large suite: an edit of the suite file alone reruns the cases whose
definition it changed and those that failed; a change to the implementation reruns
every case, the failed ones first."""

from __future__ import annotations

from pathlib import Path

import pytest

from cer.engine.options import RunOptions
from cer.model import CaseResult
from cer.suite.loader import load_suite
from cer.tui.app import create_app
from cer.tui.state.watching import edited_cases

from .helpers import FakeRunner, passing, result_for, settle

pytestmark = pytest.mark.anyio

OPTIONS = RunOptions(impl="calc:evaluate")
HEAD = 'commonsformat_evals = "0.2"\ntarget = "t"\n\n'


def case(name: str, value: int, *, tags: str = "[]") -> str:
    return (
        f'[[cases]]\nname = "{name}"\ncategory = "functional"\ntags = {tags}\n'
        f"input = {{ x = {value} }}\nexpect = {{ output = {value * 2} }}\n\n"
    )


def write(path: Path, *cases: str, comment: str = "") -> Path:
    path.write_text(HEAD + comment + "".join(cases), encoding="utf-8")
    return path


def test_edited_cases_are_those_declared_otherwise_or_new(tmp_path: Path) -> None:
    before = load_suite(write(tmp_path / "evals.toml", case("a", 1), case("b", 2), case("c", 3)))
    # A comment above every case moves them all; b's expectation and c's tags change,
    # d is new and a is unchanged.
    after = load_suite(
        write(
            tmp_path / "evals.toml",
            case("a", 1),
            case("b", 5),
            case("c", 3, tags='["new"]'),
            case("d", 4),
            comment="# moved\n\n",
        )
    )
    assert [c.line for c in after.cases] != [c.line for c in before.cases]
    assert edited_cases(before, after) == {"b", "c", "d"}
    assert edited_cases(after, after) == frozenset()


def outcome(case: object) -> CaseResult:
    from cer.model import Case, Status

    assert isinstance(case, Case)
    return result_for(case, Status.FAIL) if case.name == "b" else passing(case)


async def test_an_edit_of_the_suite_reruns_what_changed_and_what_failed(tmp_path: Path) -> None:
    path = write(tmp_path / "evals.toml", *(case(f"c{n}", n) for n in range(6)), case("b", 9))
    runner = FakeRunner(outcome)
    app = create_app(path, OPTIONS, run=runner, load=load_suite, watch=False)
    async with app.run_test(size=(120, 36)):
        await settle(app)
        assert runner.calls[0].names is None

        edited = [case(f"c{n}", n if n != 4 else 40) for n in range(6)]
        write(path, *edited, case("b", 9), comment="# the lines move\n")
        app.control.files_changed((path,))
        await settle(app, runs=2)
        assert runner.calls[1].names == {"c4", "b"}
        assert app.session.board.row("c4").status is not None  # type: ignore[union-attr]
        assert not app.session.board.row("c4").stale  # type: ignore[union-attr]
        assert app.session.board.row("c1").status is not None  # type: ignore[union-attr]

        # A change to the implementation runs every case again, the failed one first.
        app.control.files_changed((tmp_path / "calc.py",))
        await settle(app, runs=3)
        assert runner.calls[2].names is None
        assert runner.options[2].first == {"b"}
        assert runner.finished[2][0] == "b"
