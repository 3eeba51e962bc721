"""A streaming run costs the screen what the rows on screen cost: results reach it in
one message a frame, and each batch redraws only the lines whose rows took a result."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from textual.geometry import Region

from cer.model import Status
from cer.suite.selection import Selection
from cer.tui.app import create_app
from cer.tui.controller import FRAME_SECONDS, Pacer
from cer.tui.messages import ResultStream
from cer.tui.state.board import Board
from cer.tui.state.kept import KeptResult

from .helpers import (
    FakeRunner,
    fixed_loader,
    make_case,
    make_suite,
    passing,
    result_for,
    run_screen,
    settle,
    triage_suite,
)
from .test_app import OPTIONS, SIZE

pytestmark = pytest.mark.anyio


def test_record_names_the_rows_that_took_results() -> None:
    suite = triage_suite()
    board = Board()
    board.set_suite(suite)
    board.visible()
    board.begin_run(Selection())
    names = ["renders-tabs", "adds-integers"]
    changed = board.record([passing(suite.case(name)) for name in names], 2, 12)
    assert changed == [board.index_of(name) for name in names]


def test_record_says_when_the_visible_rows_change() -> None:
    suite = triage_suite()
    board = Board()
    board.set_suite(suite)
    board.set_filters(failures_only=True)
    board.visible()
    board.begin_run(Selection())
    # A passing result leaves failures-only as it was; a failure shows a new row.
    assert board.record([passing(suite.case("adds-integers"))], 1, 12) is not None
    failing = result_for(suite.case("renders-tabs"), Status.FAIL)
    assert board.record([failing], 2, 12) is None


def test_the_pacer_posts_at_most_once_a_frame_and_what_is_left_at_the_end() -> None:
    stream = ResultStream()
    posted: list[int] = []
    drained: list[KeptResult] = []
    suite = triage_suite()
    pacer = Pacer(stream, lambda: posted.append(len(posted)))
    started = time.perf_counter()
    for round_ in range(6):
        for case in suite.cases:
            stream.add(KeptResult.of(passing(case)), round_, 6)
        time.sleep(FRAME_SECONDS / 3)
        if posted and round_ % 2:
            drained.extend(stream.drain()[0])  # the screen handles the message
    pacer.stop()
    drained.extend(stream.drain()[0])
    elapsed = time.perf_counter() - started
    assert len(drained) == 6 * len(suite.cases)
    assert 1 <= len(posted) <= elapsed / FRAME_SECONDS + 2
    assert not stream.claim()


def test_a_stopped_pacer_posts_no_more() -> None:
    stream = ResultStream()
    posted: list[int] = []
    pacer = Pacer(stream, lambda: posted.append(1))
    pacer.stop()
    assert posted == []
    stream.add(KeptResult.of(passing(triage_suite().cases[0])), 1, 1)
    time.sleep(FRAME_SECONDS * 2)
    assert posted == []


async def test_a_streaming_run_redraws_only_the_lines_that_changed() -> None:
    """Neither the screen nor the whole list is drawn again for a batch of results;
    the rows on screen that took one are, and the counts reach the summary."""
    cases = [make_case(f"case-{i:04d}", i) for i in range(400)]
    runner = FakeRunner(passing, block_after=300)
    app = create_app(
        Path("evals.toml"), OPTIONS, run=runner, load=fixed_loader(make_suite(cases)), watch=False
    )
    whole: list[str] = []
    async with app.run_test(size=SIZE):
        screen, case_list = run_screen(app), run_screen(app).case_list
        await _until(lambda: app.session.board.done >= 300)

        def count(name: str, original):  # type: ignore[no-untyped-def]
            def refresh(*regions: Region, **kwargs: object):  # type: ignore[no-untyped-def]
                if not regions:
                    whole.append(name)
                return original(*regions, **kwargs)

            return refresh

        screen.refresh = count("screen", screen.refresh)  # type: ignore[method-assign]
        case_list.refresh = count("list", case_list.refresh)  # type: ignore[method-assign]
        lines: list[int] = []
        original_line = case_list.refresh_line
        case_list.refresh_line = lambda y: (lines.append(y), original_line(y))[1]  # type: ignore[method-assign]
        app.control.cancel()
        # The first cycle's 300 results are in; rerun and watch the batches arrive.
        app.start_run(app.settings.base_selection, "again")
        await settle(app)
        assert app.session.board.counts.passed == 400
        assert lines and max(lines) < SIZE[1]  # only rows on screen
        streamed = [name for name in whole if name == "screen"]
        assert streamed == []


async def _until(condition, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    from .helpers import wait_until

    await wait_until(condition, timeout)
