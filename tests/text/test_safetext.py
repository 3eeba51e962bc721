"""What is kept of a result: a result that scrubbing and bounding would not change is
kept as it is, and only then (cer.text.safetext.retained's shortcut for passing cases)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cer.model import CaseResult, Status
from cer.text import safetext
from cer.text.safetext import (
    RETAINED_CHARS,
    RETAINED_ITEMS,
    RETAINED_TEXT,
    RETAINED_TOTAL,
    retained,
)

TEXT = st.text(alphabet=st.characters(blacklist_categories=()), max_size=20) | st.sampled_from(
    ["\ud800", "a\udfffb", "x" * (RETAINED_CHARS + 1), "é"]
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True)
    | TEXT
    | st.binary(max_size=20)
)
PLAIN = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=20,
)


def result(observation: Any = None, **texts: Any) -> CaseResult:
    fields: dict[str, Any] = {"case_name": "c", "case_class": "case", "category": "functional"}
    fields.update(texts)
    return CaseResult(status=Status.PASS, observation=observation, **fields)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    observation=st.dictionaries(TEXT, PLAIN, max_size=5) | st.none(),
    stdout=TEXT,
    reason=st.none() | TEXT,
)
def test_the_shortcut_keeps_exactly_what_the_copy_keeps(
    observation: Any, stdout: str, reason: str | None
) -> None:
    original = result(observation, stdout=stdout, reason=reason)
    kept = retained(original)
    assert kept == safetext._retained_copy(original)
    if kept is original:
        assert safetext._kept_as_is(original)


@pytest.mark.parametrize(
    ("observation", "texts"),
    [
        ({"s": "x" * RETAINED_CHARS}, {}),
        ({"l": list(range(RETAINED_ITEMS))}, {}),
        ({f"k{i}": "x" * (RETAINED_CHARS - 10) for i in range(15)}, {}),
        ({"b": b"x" * RETAINED_CHARS}, {}),
        ({"s": "é→"}, {"stdout": "y" * RETAINED_TEXT}),
        (None, {"traceback": "t"}),
    ],
)
def test_results_within_every_bound_are_kept_as_they_are(
    observation: Any, texts: dict[str, Any]
) -> None:
    original = result(observation, **texts)
    assert retained(original) is original
    assert safetext._retained_copy(original) == original


@pytest.mark.parametrize(
    ("observation", "texts"),
    [
        ({"s": "x" * (RETAINED_CHARS + 1)}, {}),
        ({"l": list(range(RETAINED_ITEMS + 1))}, {}),
        ({f"k{i}": "x" * (RETAINED_CHARS - 10) for i in range(17)}, {}),
        ({"b": b"x" * (RETAINED_CHARS + 1)}, {}),
        ({"\ud800": 1}, {}),
        ({"s": ["a\udc00"]}, {}),
        ({}, {"stdout": "y" * (RETAINED_TEXT + 1)}),
        ({}, {"stderr": "\ud800"}),
        ({}, {"reason": "\udfff"}),
        ({}, {"case_name": "c\ud800"}),
    ],
)
def test_a_result_that_needs_scrubbing_or_bounding_is_copied(
    observation: Any, texts: dict[str, Any]
) -> None:
    original = result(observation, **texts)
    kept = retained(original)
    assert kept is not original
    assert kept != original
    assert kept == safetext._retained_copy(original)


def observation_costing(total: int) -> dict[str, str]:
    """A table the bounder takes exactly ``total`` off its budget for."""
    table: dict[str, str] = {}
    left = total
    while left > 0:
        key = f"k{len(table):03d}"
        size = min(RETAINED_CHARS, left - len(key) - 2)
        table[key] = "x" * size
        left -= len(key) + size + 2
    assert left == 0
    return table


def test_the_shortcut_spends_the_bounders_own_budget() -> None:
    under = result(observation_costing(RETAINED_TOTAL - 1))
    assert retained(under) is under
    at = result(observation_costing(RETAINED_TOTAL))
    assert retained(at) == at  # kept whole, through the copy
    over = result(observation_costing(RETAINED_TOTAL + 3))
    assert retained(over) != over
    assert retained(over) == safetext._retained_copy(over)
