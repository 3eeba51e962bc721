"""What the verdict knows of an expect table before it runs anything: the reason a case
can never verify anything, worked out from its keys and, where they ask it, its values
(``cer.judge.verdict.vacuous_reason``), the same in the plan and in the judge."""

from __future__ import annotations

from typing import Any

import pytest

from cer.judge.verdict import Outcome, judge, vacuous_reason
from cer.model import Case, Status


def _case(expect: dict[str, Any]) -> Case:
    return Case(
        name="case",
        case_class="functional",
        category="functional",
        position=1,
        array_index=1,
        input={},
        expect=expect,
    )


@pytest.mark.parametrize(
    "expect", [{"output": 1}, {"output": "x", "rejects": True}, {"rows": [1, 2], "error": None}]
)
def test_a_table_of_plain_keys_verifies_something(expect: dict[str, Any]) -> None:
    assert vacuous_reason(expect) is None


@pytest.mark.parametrize(
    ("expect", "said"),
    [
        # No operator among the keys: each is caught by its key or by rejects = false.
        ({"rejects": False, "error_type": "ValueError"}, "no outcome meets both"),
        ({"rejects": False, "error": "bad"}, "no outcome meets both"),
        ({"Rejects": True}, "reads as rejects"),
        ({"output": 1, "elapsedMsMax": 5}, "reads as elapsed_ms_max"),
        # Operators, whose values decide.
        ({"has_fields": []}, "verifies nothing"),
        ({"output_any_of": []}, "verifies nothing"),
        # Every outcome rejects or not, hangs or not, crashes or not.
        ({"rejects_any_of": [True, False]}, "lists both true and false"),
        ({"hung_any_of": [False, True]}, "lists both true and false"),
        ({"crashed_any_of": [True, False], "output": 1}, "lists both true and false"),
        ({"output": 1, "self_reported": "output"}, "self_reported must be"),
    ],
)
def test_a_table_that_can_never_verify_anything_is_errored_before_and_after_the_call(
    expect: dict[str, Any], said: str
) -> None:
    reason = vacuous_reason(expect)
    assert reason is not None and said in reason, reason
    result = judge(_case(expect), Outcome("returned", value={"output": 1}, elapsed_ms=1.0))
    assert result.status is Status.ERRORED
    assert result.fail_class == "unverifiable"
    assert said in (result.reason or "")


@pytest.mark.parametrize(
    ("expect", "value", "status"),
    [
        # A bare value has no fields: the key it is observed as is the runner's binding.
        ({"has_fields": ["output"]}, None, Status.FAIL),
        ({"has_fields": ["output"]}, 5, Status.FAIL),
        ({"has_fields": ["value"], "value": "text"}, "text", Status.FAIL),
        ({"has_fields": ["output", "count"]}, 5, Status.FAIL),
        # What the implementation itself reported, as a table or in every element.
        ({"has_fields": ["output"]}, {"output": None}, Status.PASS),
        ({"has_fields": ["k"]}, [{"k": 1}], Status.PASS),
        ({"has_fields": ["k"]}, [{"k": 1}, 2], Status.FAIL),
    ],
)
def test_has_fields_counts_only_fields_the_implementation_reported(
    expect: dict[str, Any], value: Any, status: Status
) -> None:
    result = judge(_case(expect), Outcome("returned", value=value, elapsed_ms=1.0))
    assert result.status is status, result.reason
    if status is Status.FAIL and type(value) is not list:
        assert "requires field" in (result.reason or ""), result.reason


@pytest.mark.parametrize(
    "expect",
    [
        {"crashed_any_of": [True]},
        {"rejects_any_of": [1, 0]},  # strict: neither is a boolean
        {"output_any_of": [True, False]},  # the implementation's value may be anything
    ],
)
def test_an_any_of_that_leaves_a_value_out_verifies_something(expect: dict[str, Any]) -> None:
    assert vacuous_reason(expect) is None
