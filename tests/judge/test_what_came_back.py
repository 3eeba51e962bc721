"""A mismatch about a key the implementation did not report shows what it returned
instead (bounded, escaped), with a hint when the shape suggests the usual mistake."""

from __future__ import annotations

from typing import Any

import pytest

from cer.judge.verdict import Outcome, judge
from cer.model import Case, Status


def reason(expect: dict[str, Any], returned: Any) -> str:
    result = judge(
        Case("c", "functional", "functional", 1, 1, {}, expect), Outcome("returned", value=returned)
    )
    assert result.status is Status.FAIL, result.reason
    return result.reason or ""


@pytest.mark.parametrize(
    ("expect", "returned", "shown", "hint"),
    [
        (
            {"output": 1},
            {"Output": 1},
            "it returned dict {'Output': 1}",
            "hint: it has 'Output', which differs from 'output' only in case or underscores",
        ),
        (
            {"first_line": "a"},
            {"firstLine": "a"},
            "it returned dict {'firstLine': 'a'}",
            "differs from 'first_line' only in case or underscores",
        ),
        (
            {"output": 1},
            {"result": {"output": 1}},
            "it returned dict {'result': {'output': 1}}",
            "hint: output is one level down, under 'result'",
        ),
        (
            {"output": {"a": 1, "b": 2}},
            {"a": 1, "b": 2},
            "it returned dict {'a': 1, 'b': 2}",
            'a returned table is the observation, so return {"output": {…}}',
        ),
        (
            {"a": 1, "b": 2},
            5,
            "it returned int 5, observed as output",
            "hint: a value that is not a table is observed as output",
        ),
        (
            {"output_any_of": [{"a": 1}, {"b": 2}]},
            {"b": 2},
            "it returned dict {'b': 2}",
            'a returned table is the observation, so return {"output": {…}}',
        ),
        ({"value": 1}, {"other": 2}, "it returned dict {'other': 2}", None),
        ({"size_contains": "x"}, {}, "it returned dict {}", None),
    ],
)
def test_a_key_not_reported_shows_what_came_back(
    expect: dict[str, Any], returned: Any, shown: str, hint: str | None
) -> None:
    said = reason(expect, returned)
    assert "implementation did not report" in said
    assert shown in said, said
    if hint is not None:
        assert hint in said, said
    else:
        assert "hint" not in said


def test_what_came_back_is_bounded_and_escaped() -> None:
    returned = {"text": "\x1b[31m" + "x" * 5000, **{f"k{i}": i for i in range(50)}}
    said = reason({"output": 1}, returned)
    assert "\x1b" not in said  # shown as its repr, never as the raw control character
    assert "\\x1b[31m" in said
    assert len(said) < 1500
    assert "(its keys: 'text', 'k0'" in said  # cut: every key it has is still named


def test_a_value_mismatch_is_left_as_it_is() -> None:
    said = reason({"output": 1}, {"output": 2})
    assert said == "output: expected int 1, observed int 2"
