"""Watching a large suite: an edit of the suite file alone reruns the cases whose
definition it changed, those that failed and those without a current result, and hands
the runner nothing else (the other rows keep their result); an edit outside the cases,
or a change to the implementation, reruns every case, the failed ones first."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cer.engine.options import RunOptions
from cer.history.database import History
from cer.model import CaseResult, RunResult, Suite
from cer.suite.loader import load_suite
from cer.suite.selection import Selection
from cer.tui.app import create_app
from cer.tui.state.watching import edited_cases

from .helpers import FakeRunner, passing, result_for, screen_text, settle, wait_until

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


def seven(path: Path, *, changed: dict[int, int] | None = None, head: str = HEAD) -> Path:
    """c0 to c5 and b (which fails), each ``c<N>`` in ``changed`` with another value."""
    values = {n: n for n in range(6)} | (changed or {})
    path.write_text(
        head + "".join(case(f"c{n}", values[n]) for n in range(6)) + case("b", 9),
        encoding="utf-8",
    )
    return path


async def test_an_edit_hands_the_runner_the_changed_cases_alone(tmp_path: Path) -> None:
    path = seven(tmp_path / "evals.toml")
    runner = FakeRunner(outcome)
    app = create_app(path, OPTIONS, run=runner, load=load_suite, watch=False)
    async with app.run_test(size=(160, 36)):
        await settle(app)
        board = app.session.board
        before = {row.name: row.kept for row in board.rows}

        seven(path, changed={4: 40})
        app.control.files_changed((path,))
        await settle(app, runs=2)
        # The runner saw c4 (changed) and b (failed) and nothing else: no result, not
        # even a skipped one, was made for the five cases the edit left alone.
        assert sorted(runner.finished[1]) == ["b", "c4"]
        for name in ("c0", "c1", "c2", "c3", "c5"):
            row = board.row(name)
            assert row is not None and row.kept is before[name] and not row.stale
        partial = app.session.summary().partial
        assert partial is not None and (partial.kept, partial.earlier) == (5, 0)
        assert "5 unchanged, kept from the last run" in screen_text(app)

        # The next edit runs what it changed and what still fails, not the last edit's.
        seven(path, changed={4: 40, 1: 10})
        app.control.files_changed((path,))
        await settle(app, runs=3)
        assert sorted(runner.finished[2]) == ["b", "c1"]


@pytest.mark.parametrize(
    "head",
    [
        HEAD + '[adversarial_coverage]\ncategories = ["functional"]\n\n',
        HEAD + '[properties]\nowner = "someone"\n\n',
        HEAD.replace('target = "t"', 'target = "u"'),
    ],
    ids=["adversarial_coverage", "properties", "target"],
)
async def test_an_edit_outside_the_cases_runs_every_case(tmp_path: Path, head: str) -> None:
    path = seven(tmp_path / "evals.toml")
    runner = FakeRunner(outcome)
    app = create_app(path, OPTIONS, run=runner, load=load_suite, watch=False)
    async with app.run_test(size=(120, 36)):
        await settle(app)
        seven(path, head=head)
        app.control.files_changed((path,))
        await settle(app, runs=2)
        assert runner.calls[1].names is None
        assert len(runner.finished[1]) == 7


async def test_rows_without_a_current_result_run_after_an_edit(tmp_path: Path) -> None:
    path = seven(tmp_path / "evals.toml")
    runner = FakeRunner(outcome)
    app = create_app(path, OPTIONS, run=runner, load=load_suite, watch=False)
    async with app.run_test(size=(160, 36)):
        await settle(app)
        # A run of c0 alone leaves the others dimmed, results of an earlier run: when
        # unsure, an edit reruns them.
        app.start_run(Selection(names=frozenset({"c0"})), "rerun: c0")
        await settle(app, runs=2)
        assert app.session.board.row("c1").stale  # type: ignore[union-attr]
        seven(path, changed={4: 40})
        app.control.files_changed((path,))
        await settle(app, runs=3)
        assert sorted(runner.finished[2]) == ["b", "c1", "c2", "c3", "c4", "c5"]
        partial = app.session.summary().partial
        assert partial is not None and (partial.ran, partial.kept, partial.earlier) == (6, 1, 0)
        assert "1 unchanged, kept from the last run" in screen_text(app)


async def test_the_history_records_a_run_of_the_whole_suite(tmp_path: Path) -> None:
    path = seven(tmp_path / "evals.toml")
    history = tmp_path / "history.sqlite"
    runner = FakeRunner(outcome)
    app = create_app(path, OPTIONS, run=runner, load=load_suite, watch=False, history=history)
    async with app.run_test(size=(120, 36)):
        await settle(app)
        seven(path, changed={4: 40})
        app.control.files_changed((path,))
        await settle(app, runs=2)
        await wait_until(lambda: app.control.runs_recorded >= 2)
    with History.open(history, create=False) as database:
        latest = database.runs(1)[0]
    # As cer run reports a run of two cases: the five others skipped as deselected.
    assert (latest.summary.total, latest.summary.skipped) == (7, 5)
    assert latest.partial


def test_the_board_takes_an_edited_suite_in_place_and_counts_as_before(tmp_path: Path) -> None:
    from cer.model import RunResult, Status
    from cer.tui.state.board import Board, EditedSelection

    path = seven(tmp_path / "evals.toml")
    board = Board()
    board.set_suite(load_suite(path))
    board.begin_run(Selection())
    results = [outcome(case) for case in load_suite(path).cases]
    run = RunResult("r", "t", "i", 0, 1, tuple(results))
    board.finish_run(run)
    rows, counts = list(board.rows), board.counts.as_tuple()
    edited = load_suite(seven(path, changed={4: 40}))
    board.set_suite(edited)
    # The same rows, each holding its case as declared now, with the same results.
    assert all(a is b for a, b in zip(rows, board.rows, strict=True))
    assert board.row("c4").case is edited.cases[4]  # type: ignore[union-attr]
    assert board.counts.as_tuple() == counts == (6, 1, 0, 0)
    # An edit's run marks its own rows stale, no other; the rest keep their results
    # as current when it ends.
    board.begin_run(EditedSelection(names=frozenset({"c4"}), kept=6))
    assert [row.name for row in board.rows if row.stale] == ["c4"]
    board.finish_run(replace(run, results=()), [result_for(edited.cases[4], Status.FAIL)], 1)
    assert not any(row.stale for row in board.rows)
    assert board.counts.as_tuple() == (5, 2, 0, 0)
    assert board.counts.regressed == 1


async def test_an_edit_whose_run_ran_other_code_runs_every_case(tmp_path: Path) -> None:
    path = seven(tmp_path / "evals.toml")
    fake = FakeRunner(outcome)

    def run(suite: Suite, options: RunOptions, **kwargs: Any) -> RunResult:
        # Each run reports other code: the implementation changed between the runs
        # without the watcher having said so yet.
        result = fake(suite, options, **kwargs)
        return replace(result, implementation_id=f"calc:evaluate@v{len(fake.calls)}")

    app = create_app(path, OPTIONS, run=run, load=load_suite, watch=False)
    async with app.run_test(size=(120, 36)):
        await settle(app)
        seven(path, changed={4: 40})
        app.control.files_changed((path,))
        await settle(app, runs=2)
        # The edit's run, then, in the same cycle, every case: no result is kept.
        assert sorted(fake.finished[1]) == ["b", "c4"]
        assert len(fake.finished[2]) == 7
        assert fake.options[2].first == {"b"}
        assert not any(row.stale for row in app.session.board.rows)
        assert app.session.summary().partial is None


async def test_a_watching_session_loads_an_edit_from_its_memo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cer.suite import loader

    monkeypatch.setattr(loader, "_GROUP", 2)  # groups of two cases at most
    path = seven(tmp_path / "evals.toml")
    runner = FakeRunner(outcome)
    app = create_app(path, OPTIONS, run=runner, load=load_suite, watch=False)
    async with app.run_test(size=(120, 36)):
        await settle(app)
        reloader = app.control._reloader
        assert reloader is not None and len(reloader.memo) == 0
        reloader.watching = True  # as when watching starts
        seven(path, changed={4: 40})
        app.control.files_changed((path,))
        await settle(app, runs=2)
        before = app.session.suite
        assert before is not None and len(reloader.memo) > 0
        seven(path, changed={4: 40, 1: 10})
        app.control.files_changed((path,))
        await settle(app, runs=3)
        after = app.session.suite
        assert after == load_suite(path)
        assert sorted(runner.finished[2]) == ["b", "c1"]
        # The edited case's group was parsed again; every other case is the very case
        # of the last load.
        assert reloader.memo.parsed == 1
        shared = [a is b for a, b in zip(before.cases, after.cases, strict=True)]
        assert shared[1] is False
        assert 1 <= shared.count(False) <= 2


async def test_an_edit_after_a_save_that_did_not_load_reruns_what_changed(tmp_path: Path) -> None:
    path = seven(tmp_path / "evals.toml")
    runner = FakeRunner(outcome)
    app = create_app(path, OPTIONS, run=runner, load=load_suite, watch=False)
    async with app.run_test(size=(120, 36)):
        await settle(app)
        # A save seen half written: the file does not load, nothing runs.
        path.write_text(path.read_text(encoding="utf-8")[:150], encoding="utf-8")
        app.control.files_changed((path,))
        await wait_until(lambda: app.session.runs_started == 2 and not app.session.board.running)
        assert len(runner.calls) == 1
        # The save that completes it reruns what changed since the suite that loaded.
        seven(path, changed={4: 40})
        app.control.files_changed((path,))
        await settle(app, runs=2)
        assert sorted(runner.finished[1]) == ["b", "c4"]
        assert not any(row.stale for row in app.session.board.rows)


def test_edited_cases_side_by_side_and_reordered(tmp_path: Path) -> None:
    path = tmp_path / "evals.toml"
    before = load_suite(write(path, case("a", 1), case("b", 2), case("c", 3)))
    # As many cases, in the same order: one changed.
    assert edited_cases(
        before, load_suite(write(path, case("a", 1), case("b", 5), case("c", 3)))
    ) == {"b"}
    # As many, reordered: only what changed, wherever it went.
    reordered = load_suite(write(path, case("c", 3), case("a", 1), case("b", 2)))
    assert edited_cases(before, reordered) == frozenset()
    renamed = load_suite(write(path, case("a", 1), case("d", 2), case("c", 3)))
    assert edited_cases(before, renamed) == {"d"}


async def test_a_save_seen_in_two_parts_still_reruns_what_changed(tmp_path: Path) -> None:
    import threading

    from cer.engine.options import RunCancelled

    path = seven(tmp_path / "evals.toml")
    fake = FakeRunner(outcome)
    entered = threading.Event()
    sizes: list[int] = []

    def run(suite: Suite, options: RunOptions, **kwargs: Any) -> RunResult:
        sizes.append(len(suite.cases))
        if len(sizes) == 2:  # the first part's run: cancelled by the second part
            entered.set()
            cancel = kwargs["cancel"]
            assert cancel is not None and cancel.wait(10)
            raise RunCancelled()
        return fake(suite, options, **kwargs)

    app = create_app(path, OPTIONS, run=run, load=load_suite, watch=False)
    async with app.run_test(size=(120, 36)):
        await settle(app)
        seven(path, changed={4: 40})
        app.control.files_changed((path,))
        await wait_until(entered.is_set)
        seven(path, changed={4: 40, 1: 10})
        app.control.files_changed((path,))
        await settle(app, runs=2)
        # What the cancelled cycle was to run (c4, b) runs again, with what changed
        # since (c1): not every case.
        assert sizes[1:] == [2, 3]
        assert sorted(fake.finished[1]) == ["b", "c1", "c4"]
        assert not any(row.stale for row in app.session.board.rows)


def dated(name: str, value: str, *, when: str = "1979-05-27T07:32:00Z") -> str:
    """A case whose tables hold a date-time: a load cannot pack them, and keeps them as
    Python values, where ``1 == 1.0 == true``."""
    return (
        f'[[cases]]\nname = "{name}"\ncategory = "functional"\n'
        f"input = {{ at = {when}, x = {value} }}\nexpect = {{ at = {when}, output = {value} }}\n\n"
    )


def test_an_edit_of_a_table_holding_a_date_is_an_edit(tmp_path: Path) -> None:
    path = tmp_path / "evals.toml"
    before = load_suite(write(path, dated("a", "1"), case("b", 2)))
    # Equal as Python values, declared otherwise: each reaches the implementation (or
    # the judge, which tells an integer from a boolean) as another value.
    for value in ("true", "1.0"):
        assert edited_cases(before, load_suite(write(path, dated("a", value), case("b", 2)))) == {
            "a"
        }
    # The same instant at another offset is another date-time for the implementation.
    later = dated("a", "1", when="1979-05-27T08:32:00+01:00")
    assert edited_cases(before, load_suite(write(path, later, case("b", 2)))) == {"a"}
    again = load_suite(write(path, dated("a", "1"), case("b", 2)))
    assert edited_cases(before, again) == frozenset()


async def test_an_edit_of_a_dated_expectation_reruns_its_case(tmp_path: Path) -> None:
    path = write(tmp_path / "evals.toml", dated("a", "1"), case("c", 3))
    runner = FakeRunner(passing)
    app = create_app(path, OPTIONS, run=runner, load=load_suite, watch=False)
    async with app.run_test(size=(120, 36)):
        await settle(app)
        # output = 1 became output = true: a fresh run would judge it anew.
        write(path, dated("a", "true"), case("c", 3))
        app.control.files_changed((path,))
        await settle(app, runs=2)
        assert runner.calls[1].names == frozenset({"a"})


async def test_a_property_declared_otherwise_runs_every_case(tmp_path: Path) -> None:
    head = HEAD + "[properties]\nlimit = 1\n\n"
    path = seven(tmp_path / "evals.toml", head=head)
    runner = FakeRunner(outcome)
    app = create_app(path, OPTIONS, run=runner, load=load_suite, watch=False)
    async with app.run_test(size=(120, 36)):
        await settle(app)
        seven(path, head=head.replace("limit = 1", "limit = true"))  # 1 == True in Python
        app.control.files_changed((path,))
        await settle(app, runs=2)
        assert runner.calls[1].names is None


async def test_a_fixture_in_a_folder_made_while_watching_is_watched(tmp_path: Path) -> None:
    from cer.model import Case, Status

    fixtures = tmp_path / "fixtures"
    fixtures.mkdir()
    fixture = fixtures / "sub" / "data.txt"

    def reads_fixture(case: Case) -> CaseResult:
        good = case.name != "a" or (fixture.is_file() and fixture.read_text() == "good")
        return passing(case) if good else result_for(case, Status.FAIL)

    named = case("a", 1).replace("x = 1", 'x = "fixture://sub/data.txt"')
    path = write(tmp_path / "evals.toml", named, case("b", 2))
    runner = FakeRunner(reads_fixture)
    app = create_app(path, OPTIONS, run=runner, load=load_suite, watch=True)
    async with app.run_test(size=(120, 36)):
        await settle(app)
        await wait_until(lambda: app.control.plan is not None)
        # The folder arrives whole, its file in it.
        made = tmp_path / "made"
        made.mkdir()
        (made / "data.txt").write_text("good")
        made.rename(fixtures / "sub")
        row = app.session.board.row("a")
        await wait_until(lambda: row is not None and row.status is Status.PASS)

        def watched() -> bool:
            plan = app.control.plan
            return plan is not None and (fixtures / "sub").resolve() in plan.directories

        await wait_until(watched)
        await settle(app, runs=app.session.runs_started)
        # The fixture goes bad: a's pass is not current any more, whatever the suite
        # file does next.
        fixture.write_text("bad")
        await wait_until(lambda: row is not None and row.status is Status.FAIL)
