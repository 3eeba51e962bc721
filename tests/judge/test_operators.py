"""The operators of an expect table are one table (cer.judge.compare.OPERATORS): what counts
as an operator and how it is applied both come from it, so a new operator is an entry
and its function, and a suite that uses it is judged through it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from cer.judge import compare
from cer.judge.compare import OPERATORS, Operator, is_operator_key, operator_of
from cer.judge.verdict import Outcome, judge
from cer.model import MISSING, Mismatch, Status
from cer.suite.loader import load_suite


def test_the_table_names_every_operator_and_what_it_applies_to() -> None:
    # Which operators there are is held against the docs' table of them, in
    # tests/judge/test_operator_table.py: the one copy of the list.
    assert all(name == operator.name for name, operator in OPERATORS.items())
    assert operator_of("tags_any_of") == (OPERATORS["_any_of"], "tags")
    assert operator_of("rows_unordered") == (OPERATORS["_unordered"], "rows")
    assert operator_of("self_reported") == (OPERATORS["self_reported"], "")
    assert operator_of("elapsed_ms_max") == (OPERATORS["_max"], "elapsed_ms")
    assert operator_of("tags_max_contains") == (OPERATORS["_contains"], "tags_max")
    assert operator_of("error_includes") == (OPERATORS["error_includes"], "")
    assert operator_of("_max") is None  # a suffix needs a key before it
    assert operator_of("output") is None


def _ends_with(path: str, base: str, value: Any, observation: Mapping[str, Any]) -> list[Mismatch]:
    observed = observation.get(base, MISSING)
    if type(observed) is str and type(value) is str and observed.endswith(value):
        return []
    return [Mismatch(path, f"{path}: expected {base} to end with {value!r}", value, observed)]


SUITE = """
commonsformat_evals = "0.2"
target = "demo"

[[cases]]
name = "shouts"
category = "functional"
input = { text = "hi" }
expect = { output_endswith = "!" }

[[cases]]
name = "whispers"
category = "functional"
input = { text = "hi" }
expect = { output_endswith = "!" }
"""


def test_an_operator_added_to_the_table_judges_a_suite_that_uses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(compare.OPERATORS, "_endswith", Operator("_endswith", True, _ends_with))
    assert is_operator_key("output_endswith")
    (tmp_path / "evals.toml").write_text(SUITE, encoding="utf-8")
    shouts, whispers = load_suite(tmp_path / "evals.toml").cases
    passed = judge(shouts, Outcome("returned", value="hi!"))
    failed = judge(whispers, Outcome("returned", value="hi"))
    assert passed.status is Status.PASS, passed.reason
    assert failed.status is Status.FAIL
    assert failed.reason == "output_endswith: expected output to end with '!'"


def test_without_the_entry_the_same_key_is_a_literal_value_compared_strictly(
    tmp_path: Path,
) -> None:
    (tmp_path / "evals.toml").write_text(SUITE, encoding="utf-8")
    shouts, _ = load_suite(tmp_path / "evals.toml").cases
    result = judge(shouts, Outcome("returned", value="hi!"))
    assert result.status is Status.FAIL  # the value "hi!" is bound to it: never a pass
    assert (result.reason or "").startswith("output_endswith: strings differ")
