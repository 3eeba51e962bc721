"""A failed rejection says what really happened, in one mismatch line."""

from __future__ import annotations

from typing import Any

import pytest

from cer.judge.verdict import Outcome, judge
from cer.model import Case, Status


def _case(expect: dict[str, Any]) -> Case:
    return Case(
        name="case",
        case_class="adversarial",
        category="input-validation",
        position=1,
        array_index=1,
        input={},
        expect=expect,
    )


def test_a_return_where_a_rejection_was_expected_shows_what_it_returned() -> None:
    case = _case({"rejects": True, "error_includes": "too large"})
    result = judge(case, Outcome("returned", value=64, elapsed_ms=1.0))
    assert result.status is Status.FAIL
    assert result.reason == (
        "rejects: expected a rejection (an error including 'too large'), "
        "but the implementation returned int 64"
    )
    assert len(result.mismatches) == 1


def test_the_wrong_exception_type_shows_its_type_and_message() -> None:
    case = _case({"rejects": True, "error_type": "ZeroDivisionError"})
    outcome = Outcome(
        "raised", error_type="ValueError", error_message="division by zero", elapsed_ms=1.0
    )
    result = judge(case, outcome)
    assert result.reason == (
        "error_type: expected an error of type ZeroDivisionError, but the implementation "
        "raised ValueError: division by zero"
    )


def test_an_error_without_the_text_shows_the_message() -> None:
    case = _case({"rejects": True, "error_includes": "empty"})
    outcome = Outcome("raised", error_type="ValueError", error_message="bad tab", elapsed_ms=1.0)
    result = judge(case, outcome)
    assert result.reason == (
        "error_includes: expected an error including 'empty', but the implementation "
        "raised ValueError: bad tab"
    )


def test_a_rejection_where_a_return_was_expected_is_one_line() -> None:
    case = _case({"rejects": False, "value": 3})
    outcome = Outcome("raised", error_type="ValueError", error_message="bad tab", elapsed_ms=1.0)
    result = judge(case, outcome)
    assert result.reason == (
        "rejects: expected a return (rejects = false), but the implementation raised "
        "ValueError: bad tab"
    )
    assert len(result.mismatches) == 1


def test_other_mismatches_stay_beside_the_rejection_line() -> None:
    case = _case({"rejects": True, "error_includes": "x", "crashed": True})
    result = judge(case, Outcome("returned", value={"value": 1}, elapsed_ms=1.0))
    lines = (result.reason or "").splitlines()
    assert lines[0].startswith("rejects: expected a rejection (an error including 'x')")
    assert lines[1:] == ["crashed: expected bool True, observed bool False"]


@pytest.mark.parametrize("expect", [{"value": 2}, {"rejects": True, "error_includes": "x"}])
def test_a_match_is_still_a_pass(expect: dict[str, Any]) -> None:
    outcome = (
        Outcome("returned", value=2, elapsed_ms=1.0)
        if "value" in expect
        else Outcome("raised", error_type="ValueError", error_message="x y", elapsed_ms=1.0)
    )
    assert judge(_case(expect), outcome).status is Status.PASS


def test_a_timed_out_case_carries_its_stack_labelled_and_bounded() -> None:
    from cer.judge.verdict import STACK_LIMIT, outcome_from_worker
    from cer.text.tracebacks import STACK_HEADING

    meta = {
        "exit": {"how": "timeout"},
        "stack": 'Current thread 0x1:\n  File "/a.py", line 2 in f\n',
    }
    outcome = outcome_from_worker(meta, b"", 1.0, 1024)
    assert outcome.kind == "timed_out"
    assert outcome.traceback is not None and outcome.traceback.startswith(STACK_HEADING)
    result = judge(_case({"value": 1}), outcome)
    assert result.status is Status.ERRORED and result.traceback == outcome.traceback
    huge = outcome_from_worker({"exit": {"how": "timeout"}, "stack": "x" * 100_000}, b"", 1.0, 1)
    assert huge.traceback is not None and len(huge.traceback) < STACK_LIMIT + 200
    for junk in (None, 3, "", "  \n"):
        assert (
            outcome_from_worker({"exit": {"how": "timeout"}, "stack": junk}, b"", 1.0, 1).traceback
            is None
        )
