"""The list's small frictions: the filter matches the constraints a case verifies, the
group-by view groups by constraint, and the columns fit their content with the name
first."""

from __future__ import annotations

from pathlib import Path

import pytest

from cer.engine.options import RunOptions
from cer.tui.app import CerApp, create_app
from cer.tui.state.board import NO_CONSTRAINT, Board, Filters, GroupKey

from .helpers import FakeRunner, fixed_loader, make_case, make_suite, passing, screen_text, settle

pytestmark = pytest.mark.anyio

LONG = "rejects-a-prerelease-tag-on-a-caret-range-with-a-zero-major"
CASES = (
    make_case("short", 1, verifies=("linear-time",)),
    make_case(LONG, 2, case_class="adversarial", category="input-validation", severity="error"),
    make_case("both", 3, verifies=("linear-time", "caret-ranges")),
)


def _board() -> Board:
    board = Board()
    board.set_suite(make_suite(CASES))
    return board


def test_the_filter_matches_verified_constraints() -> None:
    board = _board()
    board.filters = Filters(text="linear-time")
    assert [board.rows[index].name for index in board.visible()] == ["short", "both"]


def test_group_by_constraint() -> None:
    sections = {section.title: section for section in _board().groups()}
    constraint = sections["Constraint"]
    totals = {group.key.value: group.total for group in constraint.groups}
    assert totals == {"linear-time": 2, NO_CONSTRAINT: 1, "caret-ranges": 1}
    assert GroupKey("constraint", "caret-ranges").contains(CASES[2])
    assert GroupKey("constraint", NO_CONSTRAINT).contains(CASES[1])
    assert not GroupKey("constraint", NO_CONSTRAINT).contains(CASES[0])


def _app() -> CerApp:
    return create_app(
        Path("evals.toml"),
        RunOptions(impl="m:f"),
        run=FakeRunner(passing),
        load=fixed_loader(make_suite(CASES)),
        watch=False,
    )


@pytest.mark.parametrize("width", [120, 160])
async def test_the_name_is_whole_before_other_columns_are_shown(width: int) -> None:
    app = _app()
    async with app.run_test(size=(width, 30)):
        await settle(app)
        lines = screen_text(app).splitlines()
        header = next(line for line in lines if " case " in f"{line} ")
        row = next(line for line in lines if "rejects-a-prerelease" in line)
        if width >= 160:
            assert LONG in row
            assert "class" in header and "adversarial" in row
        else:
            # Too narrow for the whole name: it keeps all the room, no column takes any.
            assert LONG[:40] in row and "class" not in header and "adversarial" not in row
        # Every column shown is as wide as its widest value, and ends before the next.
        for word in ("class", "category", "severity"):
            if word in header:
                assert header.index("case") < header.index(word)
