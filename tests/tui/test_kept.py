"""Results as the rows keep them: status and time at hand, the evidence packed, and
unpacked for a screen exactly as the whole result was shown."""

from __future__ import annotations

import datetime
import gc
from dataclasses import replace

from cer.engine.options import RunOptions
from cer.model import MISSING, CaseResult, Mismatch, RunResult, Status
from cer.suite.selection import Selection
from cer.text.safetext import displayed
from cer.tui.state.board import Board
from cer.tui.state.kept import KeptResult
from cer.tui.state.session import Session

from .helpers import make_case, make_suite, result_for, triage_outcome, triage_suite

CASE = make_case("renders", 4)


def test_a_kept_result_unpacks_to_the_displayed_result() -> None:
    observation = {
        "html": "<p>a\tb</p>\n",
        "tree": {"depth": 2, "items": [{"n": 0}, {"n": 1.5}, None, True]},
        "when": datetime.date(2024, 2, 29),
        "raw": b"\x00\xff",
    }
    result = result_for(
        CASE,
        Status.FAIL,
        reason="html: line 1 differs",
        mismatches=(
            Mismatch("html", "line 1 differs", "<p>a b</p>\n", "<p>a\tb</p>\n"),
            Mismatch("extra", "not expected", MISSING, 3),
        ),
        stdout="out\n",
        stderr="err\n",
        traceback="Traceback (most recent call last):\nValueError: x\n",
        observation=observation,
    )
    kept = KeptResult.of(result)
    assert kept.packed is not None and kept.whole is None
    assert (kept.status, kept.elapsed_ms, kept.case_name) == (
        Status.FAIL,
        result.elapsed_ms,
        "renders",
    )
    unpacked = kept.result()
    assert unpacked == displayed(result)
    assert unpacked.mismatches[1].expected is MISSING
    # The row holds no live part of the evidence: only the packed bytes.
    assert not any(part is result.observation for part in gc.get_referents(kept))
    assert kept.bare() == CaseResult(
        "renders",
        CASE.case_class,
        CASE.category,
        Status.FAIL,
        elapsed_ms=result.elapsed_ms,
        position=CASE.position,
    )


def test_a_result_without_evidence_packs_nothing() -> None:
    result = CaseResult("renders", CASE.case_class, CASE.category, Status.PASS, elapsed_ms=2)
    kept = KeptResult.of(result)
    assert kept.packed is None and kept.whole is None
    assert kept.result() == result


def test_the_implementations_text_comes_out_as_escapes() -> None:
    hostile = "\x1b[2J\u202egreen\ud800"
    result = result_for(
        CASE, Status.FAIL, reason=hostile, stdout=hostile, observation={"html": hostile}
    )
    unpacked = KeptResult.of(result).result()
    for text in (unpacked.reason, unpacked.stdout, unpacked.observation["html"]):  # type: ignore[index]
        assert text == "\\x1b[2J\\u202egreen\\ud800"


def test_evidence_pickle_refuses_is_kept_whole() -> None:
    result = result_for(CASE, Status.PASS, observation={"value": lambda: None})
    kept = KeptResult.of(result)
    assert kept.packed is None and kept.whole == displayed(result)
    assert kept.result() is kept.whole


def test_a_result_kept_whole_is_displayed_once_and_shared() -> None:
    result = result_for(CASE, Status.FAIL, reason="\x1b[2J", observation={"html": "a"})
    kept = KeptResult.whole_of(result)
    assert kept.packed is None and kept.whole == displayed(result)
    assert kept.whole.reason == "\\x1b[2J"  # type: ignore[union-attr]
    assert kept.result() is kept.result() is kept.whole


def test_a_streamed_run_ends_without_taking_its_results_again() -> None:
    suite = triage_suite()
    board = Board()
    board.set_suite(suite)
    board.begin_run(Selection())
    results = [triage_outcome(case) for case in suite.cases]
    board.record([KeptResult.of(result) for result in results[:-1]], 11, 12)
    header = RunResult("r", "calc", "impl", 0, 10, ())
    board.finish_run(header, (KeptResult.of(results[-1]),), 12)
    assert (board.done, board.total) == (12, 12)
    assert board.counts.as_tuple() == (7, 3, 1, 1)
    assert board.last_run is header and board.unlisted == ()
    assert [row.result for row in board.rows] == [displayed(result) for result in results]


def test_the_matrix_sees_deselected_results_the_list_has_none_for() -> None:
    cases = (make_case("adds", 1), make_case("divides", 2))
    suite = make_suite(cases)
    session = Session((RunOptions(impl="a:f"), RunOptions(impl="b:f")), ("a", "b"))
    session.begin("first run")
    only = Selection(names=frozenset({"adds"}))
    session.load(suite, only)
    for lane in session.lanes:
        run = RunResult(
            "r",
            "calc",
            "impl",
            0,
            10,
            (
                result_for(cases[0], Status.PASS),
                result_for(cases[1], Status.SKIPPED, reason="deselected"),
            ),
        )
        lane.finish(run, suite)
    assert session.board.row("divides").result is None  # type: ignore[union-attr]
    assert session.board.last_run is not None and session.board.last_run.results == ()
    for run in session.matrix_runs():
        assert {(r.case_name, r.status, r.reason) for r in run.results} == {
            ("adds", Status.PASS, None),
            ("divides", Status.SKIPPED, "deselected"),
        }


def test_without_observation_everything_else_is_kept() -> None:
    result = result_for(
        CASE,
        Status.FAIL,
        reason="html: differs",
        mismatches=(Mismatch("html", "differs", "a", "b"),),
        stdout="out\n",
        observation={"html": "b", "error": None},
    )
    kept = KeptResult.of(result, observation=False)
    assert kept.result() == replace(displayed(result), observation=None)
    passed = KeptResult.of(
        result_for(CASE, Status.PASS, observation={"html": "a"}), observation=False
    )
    assert passed.packed is None and passed.result().observation is None
