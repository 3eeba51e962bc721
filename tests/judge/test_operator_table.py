"""The operators of an expect table have one source, :data:`cer.judge.compare.OPERATORS`,
and one description people read, the table of docs/execution-model.md ("Operators"):
the two list the same operators, in the same order, each as a whole key or a suffix.
What differs from one operator to another is data of its entry (``bound``, ``vacuous``,
``asks_error``, ``choices``), so a new operator, a bound among them, is judged, shown
and checked through its entry alone."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from operator import gt

import pytest

import support
from cer.judge import compare
from cer.judge.compare import (
    OPERATORS,
    REJECTION_KEYS,
    Bound,
    Operator,
    shown_measurement,
    shown_mismatch_observed,
)
from cer.judge.compare import (
    compare as compare_expect,
)
from cer.judge.verdict import unmeasured_keys, vacuous_expectations

PAGE = support.ROOT / "docs" / "execution-model.md"


def documented(page: str) -> list[tuple[str, bool]]:
    """The operators the page's table of operators lists, in its order: each as its
    name in the table (``_max`` for ``K_max = N``) and whether it is a suffix."""
    section = page.split("\n## Operators\n", 1)[1]
    table = section.split("\n| operator ", 1)[1].split("\n\n", 1)[0]
    cells = re.findall(r"^\| `([^`]+)` \|", table, flags=re.MULTILINE)
    assert cells, "the page has no table of operators"
    listed = []
    for cell in cells:
        key = cell.split(" = ", 1)[0]
        listed.append((key[1:], True) if key.startswith("K_") else (key, False))
    return listed


def tabled(operators: Mapping[str, Operator]) -> list[tuple[str, bool]]:
    return [(name, operator.suffix) for name, operator in operators.items()]


def test_the_docs_table_lists_exactly_the_operators_of_the_table() -> None:
    assert documented(PAGE.read_text(encoding="utf-8")) == tabled(OPERATORS)


def test_the_docs_table_check_fails_when_either_side_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    page = PAGE.read_text(encoding="utf-8")
    row = next(line for line in page.splitlines() if line.startswith("| `K_any_of = "))
    assert documented(page.replace(f"{row}\n", "")) != tabled(OPERATORS)
    extra = Operator("_endswith", True, OPERATORS["_contains"].apply)
    monkeypatch.setitem(compare.OPERATORS, "_endswith", extra)
    assert documented(page) != tabled(compare.OPERATORS)


def test_the_rejection_keys_are_read_from_the_table() -> None:
    asking = {name for name, operator in OPERATORS.items() if operator.asks_error is not None}
    assert asking == {"error_includes"}
    assert asking < REJECTION_KEYS


def test_a_bound_is_one_entry_and_every_reader_takes_its_direction_from_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    above = compare._bounded("_above", Bound(">", gt, -math.inf))
    monkeypatch.setitem(compare.OPERATORS, "_above", above)
    assert compare_expect({"size_above": 3}, {"size": 4}) == ()
    (missed,) = compare_expect({"size_above": 3}, {"size": 3})
    assert missed.message == "size_above: expected size > 3, observed 3"
    (slow,) = compare_expect({"parse_ms_above": 3}, {"parse_ms": 2.75})
    assert shown_mismatch_observed(slow) == "2.8 ms"
    assert shown_measurement("parse_ms", 3.5, {"parse_ms_above": 3}) == "3.5 ms"
    # What verifies nothing follows the direction too: every measurement is above -1,
    # but a time of 0 is not above 0, and no number is above -inf for certain.
    assert vacuous_expectations({"elapsed_ms_above": -1}) == [
        "elapsed_ms_above: elapsed_ms > -1 holds for every measurement"
    ]
    assert vacuous_expectations({"elapsed_ms_above": 0, "size_above": -math.inf}) == []
    assert unmeasured_keys({"size_above": 3}) == ["size_above"]
