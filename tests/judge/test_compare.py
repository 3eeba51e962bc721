"""Tests of the strict comparison rules: each one fails if its rule is loosened."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta, timezone, tzinfo
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cer.judge.compare import (
    MAX_MISMATCHES_PER_CONTAINER,
    REJECTION_KEYS,
    RUNNER_OBSERVED_KEYS,
    binding_key,
    compare,
    is_operator_key,
)
from cer.judge.equality import format_value, values_equal
from cer.model import MISSING, Mismatch

PLUS1 = timezone(timedelta(hours=1))


def paths(mismatches: tuple[Mismatch, ...]) -> list[str]:
    return [m.path for m in mismatches]


def only(mismatches: tuple[Mismatch, ...]) -> Mismatch:
    assert len(mismatches) == 1, mismatches
    return mismatches[0]


# ------------------------------------------------------------------------------ constants


def test_constants() -> None:
    observed = {"rejects", "error", "error_type", "crashed", "hung", "elapsed_ms"}
    assert frozenset({*observed, "resident_memory_mb"}) == RUNNER_OBSERVED_KEYS
    assert frozenset({"rejects", "error_includes", "error_type"}) == REJECTION_KEYS


# ------------------------------------------------------------------------- operator keys


@pytest.mark.parametrize(
    "key",
    [
        "first_render_ms_max",
        "resident_memory_mb_min",
        "prose_font_contains",
        "x_max",
        "__max",
        "error_includes",
        "has_fields",
    ],
)
def test_operator_keys(key: str) -> None:
    assert is_operator_key(key)


@pytest.mark.parametrize(
    "key",
    [
        "_max",
        "_min",
        "_contains",
        "max",
        "output",
        "html",
        "max_x",
        "x_maximum",
        "x_MAX",
        "error_includes_",
        "has_field",
        "error",
        "rejects",
        "",
    ],
)
def test_not_operator_keys(key: str) -> None:
    assert not is_operator_key(key)


# --------------------------------------------------------------------------- binding key


@pytest.mark.parametrize(
    ("expect", "key"),
    [
        ({"html": "<p>x</p>\n"}, "html"),
        ({"output": ""}, "output"),
        ({"html": "x", "crashed": False, "hung": False, "elapsed_ms": 1}, "html"),
        ({"window_opened": True, "first_render_ms_max": 100}, "window_opened"),
        ({"html": "x", "prose_font_contains": "Serif", "has_fields": ["a"]}, "html"),
        ({"a": 1, "b": 2}, "output"),
        ({}, "output"),
        ({"rejects": True, "error_includes": "empty"}, "output"),
        ({"first_render_ms_max": 100}, "output"),
        ({"error_type": "ValueError", "count": 3}, "count"),
    ],
)
def test_binding_key(expect: dict[str, Any], key: str) -> None:
    assert binding_key(expect) == key


# ----------------------------------------------------------------------- strict equality


@pytest.mark.parametrize(
    ("expected", "observed"),
    [
        (True, 1),
        (1, True),
        (False, 0),
        (1, 1.0),
        (1.0, 1),
        (0, 0.0),
        ("1", 1),
        (1, "1"),
        (b"x", "x"),
        ("x", b"x"),
        (None, False),
        (None, ""),
        (None, 0),
        ("", None),
        ([], {}),
        ([1], [True]),
        ([1.0], [1]),
        (float("nan"), 1.0),
        (1.0, float("nan")),
        (float("inf"), float("-inf")),
        ({"a": 1}, {"a": 1.0}),
        ({"a": 1}, {"a": 1, "b": 2}),
        ({"a": 1, "b": 2}, {"a": 1}),
        ([1, 2], [1, 2, 3]),
        ([1, 2, 3], [1, 2]),
        ([1, 2], [2, 1]),
        ("a\n", "a"),
        ("a", "a "),
        ("\t", "    "),
        (date(2024, 1, 1), datetime(2024, 1, 1)),
        (datetime(2024, 1, 1), date(2024, 1, 1)),
        (datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 1, 1)),
        (datetime(2024, 1, 1), datetime(2024, 1, 1, tzinfo=UTC)),
        (datetime(2024, 1, 1, 1, tzinfo=PLUS1), datetime(2024, 1, 1, 0, tzinfo=UTC)),
        (time(1, 0, tzinfo=PLUS1), time(0, 0, tzinfo=UTC)),
        (time(1, 0), time(1, 0, tzinfo=UTC)),
        (time(1, 0), time(1, 0, 1)),
    ],
)
def test_unequal(expected: Any, observed: Any) -> None:
    assert not values_equal(expected, observed)
    found = compare({"output": expected}, {"output": observed})
    assert found, (expected, observed)
    assert all(m.path.startswith("output") for m in found)


@pytest.mark.parametrize(
    ("expected", "observed"),
    [
        (True, True),
        (0, 0),
        (1.5, 1.5),
        (0.0, -0.0),
        (float("nan"), float("nan")),
        (float("nan"), -float("nan")),
        (float("inf"), float("inf")),
        ("a\tb\n", "a\tb\n"),
        (b"\x00", b"\x00"),
        (None, None),
        ([1, [2.0, "x"]], [1, [2.0, "x"]]),
        ((1, 2), [1, 2]),
        ([1, 2], (1, 2)),
        ({"a": [1, {"b": None}]}, {"a": [1, {"b": None}]}),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}),
        ({"a": 1}, MappingProxyType({"a": 1})),
        (datetime(2024, 1, 1, 1, tzinfo=PLUS1), datetime(2024, 1, 1, 1, tzinfo=PLUS1)),
        (datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 1, 1, tzinfo=timezone(timedelta(0)))),
        (datetime(2024, 1, 1, 1, 2, 3, 4), datetime(2024, 1, 1, 1, 2, 3, 4)),
        (date(2024, 2, 29), date(2024, 2, 29)),
        (time(7, 32, 0, 999), time(7, 32, 0, 999)),
        (time(7, 32, tzinfo=PLUS1), time(7, 32, tzinfo=PLUS1)),
    ],
)
def test_equal(expected: Any, observed: Any) -> None:
    assert values_equal(expected, observed)
    assert compare({"output": expected}, {"output": observed}) == ()


def test_type_mismatch_message_names_both_types() -> None:
    m = only(compare({"output": 1}, {"output": True}))
    assert m.path == "output"
    assert m.message == "output: expected int 1, observed bool True"
    assert m.expected == 1
    assert m.observed is True
    m = only(compare({"output": 1}, {"output": 1.0}))
    assert "int 1" in m.message and "float 1.0" in m.message
    m = only(compare({"output": b"x"}, {"output": "x"}))
    assert "bytes b'x'" in m.message and "str 'x'" in m.message
    m = only(compare({"output": "x"}, {"output": None}))
    assert "str 'x'" in m.message and "None" in m.message


def test_float_values_shown_exactly() -> None:
    m = only(compare({"output": 0.3}, {"output": 0.1 + 0.2}))
    assert "0.3" in m.message and "0.30000000000000004" in m.message


def test_unknown_types_never_equal_and_never_called() -> None:
    calls: list[str] = []

    class Hostile:
        def __eq__(self, other: object) -> bool:
            calls.append("eq")
            return True

        def __ne__(self, other: object) -> bool:
            calls.append("ne")
            return False

        def __hash__(self) -> int:
            calls.append("hash")
            return 0

        def __repr__(self) -> str:
            calls.append("repr")
            raise RuntimeError("boom")

        def __str__(self) -> str:
            calls.append("str")
            raise RuntimeError("boom")

        def __len__(self) -> int:
            calls.append("len")
            return 0

    class SneakyStr(str):
        def __eq__(self, other: object) -> bool:
            calls.append("str-eq")
            return True

        __hash__ = str.__hash__

    class SneakyInt(int):
        pass

    h = Hostile()
    assert not values_equal(h, h)
    assert compare({"output": h}, {"output": h})
    assert compare({"output": 1}, {"output": h})
    assert compare({"output": [1, {"a": h}]}, {"output": [1, {"a": h}]})
    assert compare({"output": "abc"}, {"output": SneakyStr("xyz")})
    assert compare({"output": 1}, {"output": SneakyInt(1)})
    assert compare({"output": {"a": 1}}, {"output": {SneakyStr("a"): 1}})
    assert "<" in format_value(h)
    assert calls == []


def test_non_string_table_keys_never_match() -> None:
    assert not values_equal({1: "a"}, {1: "a"})
    assert compare({"output": {"a": 1}}, {"output": {"a": 1, 2: 3}})
    # 1 and True are one key for a Python dict; strictness must not let them meet.
    assert compare({"output": {"x": {1: "a"}}}, {"output": {"x": {True: "a"}}})


def test_unsupported_tzinfo_never_equal() -> None:
    class OddZone(tzinfo):
        def utcoffset(self, dt: datetime | None) -> timedelta:
            raise AssertionError("must not be called")

        def dst(self, dt: datetime | None) -> timedelta:
            raise AssertionError("must not be called")

        def tzname(self, dt: datetime | None) -> str:
            raise AssertionError("must not be called")

    odd = datetime(2024, 1, 1, tzinfo=OddZone())
    assert not values_equal(odd, odd)
    assert compare({"t": odd}, {"t": odd})
    assert "unsupported tzinfo" in format_value(odd)


def test_huge_int_is_formatted_without_error() -> None:
    big = 10**5000
    assert values_equal(big, 10**5000)
    m = only(compare({"output": big}, {"output": big + 1}))
    assert "int" in m.message


# ------------------------------------------------------------------------------- paths


def test_nested_paths() -> None:
    expect = {"output": [{"level": 1, "key": "a"}, {"level": 2, "key": "b", "c": {"d": [1]}}]}
    observed = {"output": [{"level": 1, "key": "a"}, {"level": 2, "key": "B", "c": {"d": [True]}}]}
    found = compare(expect, observed)
    assert paths(found) == ["output[1].key", "output[1].c.d[0]"]
    assert found[0].message.startswith("output[1].key: ")
    assert found[0].expected == "b" and found[0].observed == "B"
    assert found[1].message == "output[1].c.d[0]: expected int 1, observed bool True"


def test_non_identifier_keys_are_quoted() -> None:
    found = compare({"output": {"odd key": 1, 'q"k': 2}}, {"output": {"odd key": 2, 'q"k': 3}})
    assert paths(found) == ['output["odd key"]', 'output["q\\"k"]']
    m = only(compare({"odd key": 1}, {"odd key": 2}))
    assert m.path == '["odd key"]'
    m = only(compare({"kebab-key": 1}, {}))
    assert m.path == '["kebab-key"]'


def test_missing_and_extra_table_keys() -> None:
    found = compare({"output": {"a": 1, "b": 2}}, {"output": {"a": 1, "c": 3}})
    assert paths(found) == ["output.b", "output.c"]
    missing, extra = found
    assert "missing" in missing.message and missing.expected == 2 and missing.observed is MISSING
    assert "unexpected" in extra.message and extra.expected is MISSING and extra.observed == 3


def test_list_length_and_elements_both_reported() -> None:
    found = compare({"output": [1, 2, 3]}, {"output": [1, 5]})
    assert paths(found) == ["output", "output[1]"]
    assert "3 elements" in found[0].message and "observed 2" in found[0].message
    assert "output[2]" in found[0].message
    found = compare({"output": [1]}, {"output": [1, "extra"]})
    assert paths(found) == ["output"]
    assert "extra" in found[0].message and "'extra'" in found[0].message


def test_mismatches_per_container_are_bounded() -> None:
    n = 1000
    found = compare({"output": list(range(n))}, {"output": [i + 1 for i in range(n)]})
    assert len(found) == MAX_MISMATCHES_PER_CONTAINER + 1
    assert paths(found)[:3] == ["output[0]", "output[1]", "output[2]"]
    assert f"{n - MAX_MISMATCHES_PER_CONTAINER} more" in found[-1].message
    found = compare(
        {"output": {f"k{i}": i for i in range(100)}}, {"output": {f"x{i}": i for i in range(100)}}
    )
    assert len(found) == MAX_MISMATCHES_PER_CONTAINER + 1
    assert "180 more" in found[-1].message
    nested = [[i, i] for i in range(50)]
    found = compare({"output": nested}, {"output": [[-1, -1] for _ in range(50)]})
    assert len(found) <= 2 * MAX_MISMATCHES_PER_CONTAINER + 2
    assert "more" in found[-1].message


def test_all_top_level_mismatches_are_collected_in_expect_order() -> None:
    expect = {"b": 1, "a": 2, "c": 3, "d": 4}
    found = compare(expect, {"a": 0, "b": 0, "d": 4, "extra": 9})
    assert paths(found) == ["b", "a", "c"]


def test_extra_top_level_observation_keys_are_ignored() -> None:
    assert compare({"html": "x"}, {"html": "x", "crashed": False, "stdout": "noise"}) == ()


def test_empty_expect_matches() -> None:
    assert compare({}, {"anything": 1}) == ()


# ----------------------------------------------------------------------------- strings


def test_string_first_difference_line_and_column_with_tabs() -> None:
    expected = "# Title\n\tcode\nend\n"
    observed = "# Title\n    code\nend\n"
    m = only(compare({"html": expected}, {"html": observed}))
    assert "line 2, column 1" in m.message
    assert repr("\tcode\n") in m.message
    assert repr("    code\n") in m.message
    m = only(compare({"html": "ab\ncdXf\n"}, {"html": "ab\ncdYf\n"}))
    assert "line 2, column 3" in m.message
    m = only(compare({"html": "abc"}, {"html": "abd"}))
    assert "line 1, column 3" in m.message


def test_string_missing_trailing_newline() -> None:
    m = only(compare({"html": "<p>x</p>\n"}, {"html": "<p>x</p>"}))
    assert "trailing newline" in m.message and "missing" in m.message
    assert "9 chars" in m.message and "8 chars" in m.message
    m = only(compare({"html": "<p>x</p>"}, {"html": "<p>x</p>\n"}))
    assert "extra trailing newline" in m.message


def test_string_prefix_reports_lengths() -> None:
    m = only(compare({"html": "abc\ndef"}, {"html": "abc\n"}))
    assert "line 2, column 1" in m.message and "'def'" in m.message
    assert "expected 7 chars, observed 4 chars" in m.message
    m = only(compare({"html": "abc"}, {"html": "abc  "}))
    assert "column 4" in m.message and "'  '" in m.message


def test_string_difference_in_a_long_line_is_shown() -> None:
    expected = "x" * 5000 + "A" + "y" * 5000
    observed = "x" * 5000 + "B" + "y" * 5000
    m = only(compare({"html": expected}, {"html": observed}))
    assert "line 1, column 5001" in m.message
    assert "A" in m.message and "B" in m.message
    assert len(m.message) < 1000


def test_carriage_return_visible() -> None:
    m = only(compare({"html": "a\nb\n"}, {"html": "a\r\nb\r\n"}))
    assert "\\r" in m.message and "line 1, column 2" in m.message


# --------------------------------------------------------------------------- datetimes


def test_datetime_offset_change_is_a_mismatch() -> None:
    a = datetime(1979, 5, 27, 7, 32, tzinfo=UTC)
    b = datetime(1979, 5, 27, 0, 32, tzinfo=timezone(timedelta(hours=-7)))
    assert a == b  # the same instant, so plain == would wrongly accept it
    m = only(compare({"t": a}, {"t": b}))
    assert "offset" in m.message and "-07:00" in m.message


def test_datetime_naive_versus_aware() -> None:
    m = only(compare({"t": datetime(2024, 1, 1)}, {"t": datetime(2024, 1, 1, tzinfo=UTC)}))
    assert "naive" in m.message


def test_date_is_not_datetime() -> None:
    m = only(compare({"d": date(2024, 1, 1)}, {"d": datetime(2024, 1, 1)}))
    assert "expected date" in m.message and "observed datetime" in m.message


def test_time_offset() -> None:
    assert not values_equal(time(7, 0, tzinfo=UTC), time(8, 0, tzinfo=PLUS1))
    assert values_equal(time(7, 0, tzinfo=UTC), time(7, 0, tzinfo=timezone(timedelta(0))))


# --------------------------------------------------------------------------- operators


def test_max_and_min() -> None:
    assert compare({"first_render_ms_max": 100}, {"first_render_ms": 100}) == ()
    assert compare({"first_render_ms_max": 100}, {"first_render_ms": 99.5}) == ()
    assert compare({"first_render_ms_max": 100.0}, {"first_render_ms": 100}) == ()
    m = only(compare({"first_render_ms_max": 100}, {"first_render_ms": 101}))
    assert m.path == "first_render_ms_max"
    assert "first_render_ms <= 100" in m.message and "101" in m.message
    assert only(compare({"first_render_ms_max": 100}, {"first_render_ms": 100.0001}))
    assert compare({"count_min": 3}, {"count": 3}) == ()
    assert only(compare({"count_min": 3}, {"count": 2}))
    assert only(compare({"count_min": 3}, {"count": 2.999}))


def test_bounds_reject_non_numbers() -> None:
    for observed in (True, False, "5", None, [1], float("nan")):
        assert compare({"x_max": 100}, {"x": observed}), observed
        assert compare({"x_min": -100}, {"x": observed}), observed
    assert "nan" in only(compare({"x_max": 1}, {"x": float("nan")})).message
    for bound in (True, "100", None, float("nan")):
        m = only(compare({"x_max": bound}, {"x": 1}))
        assert "must be a number" in m.message


def test_bound_missing_base() -> None:
    m = only(compare({"resident_memory_mb_max": 50}, {"resident_memory_mb_maximum": 1}))
    assert "implementation did not report resident_memory_mb" in m.message
    assert m.observed is MISSING


def test_operator_applies_unless_only_the_literal_key_was_reported() -> None:
    # The observation has the literal key and not the key the operator looks at: it is
    # compared literally, not as a bound.
    m = only(compare({"first_render_ms_max": 100}, {"first_render_ms_max": 50}))
    assert m.message == "first_render_ms_max: expected int 100, observed int 50"
    assert compare({"first_render_ms_max": 100}, {"first_render_ms_max": 100}) == ()
    # Beside the key it looks at, the literal key hides nothing: the bound applies.
    m = only(
        compare({"first_render_ms_max": 100}, {"first_render_ms_max": 100, "first_render_ms": 500})
    )
    assert "expected first_render_ms <= 100" in m.message
    assert compare({"font_contains": "Serif"}, {"font_contains": "IBM Plex Serif"})
    # An operator named whole never compares a key of its own name.
    assert compare({"error_includes": "x"}, {"error_includes": "x"})
    assert compare({"has_fields": ["a"]}, {"has_fields": ["a"]})
    assert compare({"has_fields": ["a"]}, {"has_fields": ["b"], "a": 1}) == ()


def test_contains_in_string() -> None:
    assert (
        compare({"prose_font_contains": "IBM Plex Serif"}, {"prose_font": "IBM Plex Serif, serif"})
        == ()
    )
    m = only(compare({"prose_font_contains": "IBM Plex Serif"}, {"prose_font": "Georgia"}))
    assert m.path == "prose_font_contains" and "Georgia" in m.message
    assert compare({"prose_font_contains": "serif"}, {"prose_font": "Serif"})
    m = only(compare({"prose_font_contains": 1}, {"prose_font": "1"}))
    assert "string" in m.message


def test_contains_in_list_uses_strict_equality() -> None:
    assert compare({"tags_contains": "a"}, {"tags": ["b", "a"]}) == ()
    assert compare({"ids_contains": 1}, {"ids": [1.0, True]})
    assert compare({"ids_contains": 1}, {"ids": [2, 1]}) == ()
    assert compare({"rows_contains": {"a": 1}}, {"rows": [{"a": 1}]}) == ()
    assert compare({"rows_contains": {"a": 1}}, {"rows": [{"a": 1, "b": 2}]})
    assert compare({"tags_contains": "a"}, {"tags": ["abc"]})
    assert compare({"tags_contains": "a"}, {"tags": []})


def test_contains_type_problems() -> None:
    for observed in (5, None, {"a": "a"}, b"abc", True):
        m = only(compare({"x_contains": "a"}, {"x": observed}))
        assert "string or a list" in m.message
    m = only(compare({"x_contains": "a"}, {}))
    assert "implementation did not report x" in m.message


def test_error_includes() -> None:
    expect = {"rejects": True, "error_includes": "empty array"}
    assert compare(expect, {"rejects": True, "error": "ValueError: empty array given"}) == ()
    m = only(compare(expect, {"rejects": True, "error": "ValueError: bad input"}))
    assert m.path == "error_includes" and "bad input" in m.message
    assert compare({"error_includes": "Empty"}, {"error": "empty"})


@pytest.mark.parametrize("observation", [{}, {"error": None}, {"rejects": False, "error": None}])
def test_error_includes_without_error(observation: dict[str, Any]) -> None:
    m = only(compare({"error_includes": "empty array"}, observation))
    assert m.message.startswith("error_includes: implementation did not raise")
    assert "'empty array'" in m.message


def test_error_includes_odd_values() -> None:
    assert "must be a string" in only(compare({"error_includes": 3}, {"error": "3"})).message
    assert only(compare({"error_includes": "3"}, {"error": 3}))


def test_has_fields_on_output_table() -> None:
    expect = {"has_fields": ["key", "count"]}
    assert compare(expect, {"output": {"key": "a", "count": 1, "x": 0}}) == ()
    m = only(compare(expect, {"output": {"key": "a"}}))
    assert m.path == "output.count" and "'count'" in m.message


def test_has_fields_on_output_list() -> None:
    expect = {"has_fields": ["key", "count"]}
    assert compare(expect, {"output": [{"key": 1, "count": 2}, {"key": 3, "count": 4}]}) == ()
    rows: list[Any] = [{"key": 1, "count": 2}] * 3 + [{"key": 1}, 7, {}]
    found = compare(expect, {"output": rows})
    assert paths(found) == ["output[3].count", "output[4]", "output[5].key", "output[5].count"]
    assert "int 7" in found[1].message


def test_has_fields_on_observation_itself() -> None:
    expect = {"has_fields": ["key", "count"]}
    assert compare(expect, {"key": 1, "count": 2}) == ()
    found = compare(expect, {"key": 1})
    assert paths(found) == ["count"]
    # A non-table, non-list output makes the observation itself the target.
    assert paths(compare(expect, {"output": "str", "key": 1})) == ["count"]


def test_has_fields_must_be_list_of_strings() -> None:
    for bad in ("key", ["key", 1], {"key": 1}, None, 3):
        m = only(compare({"has_fields": bad}, {"key": 1}))
        assert "has_fields must be a list of strings" in m.message


def test_has_fields_bounded() -> None:
    found = compare({"has_fields": ["k"]}, {"output": [{}] * 500})
    assert len(found) == MAX_MISMATCHES_PER_CONTAINER + 1
    assert "480 more" in found[-1].message


def test_missing_literal_key() -> None:
    m = only(compare({"html": "<p>x</p>\n"}, {"output": "<p>x</p>\n"}))
    assert m.path == "html"
    assert m.message.startswith("html: implementation did not report html")
    assert m.expected == "<p>x</p>\n" and m.observed is MISSING
    m = only(compare({"crashed": False}, {}))
    assert "did not report crashed" in m.message
    m = only(compare({"output": None}, {}))
    assert m.observed is MISSING
    assert only(compare({"output": 1}, {"output": MISSING})).observed is MISSING


def test_health_keys() -> None:
    assert compare({"crashed": False, "hung": False}, {"crashed": False, "hung": False}) == ()
    assert paths(compare({"crashed": False, "hung": False}, {"crashed": True, "hung": 0})) == [
        "crashed",
        "hung",
    ]


def test_compare_never_raises_on_odd_input() -> None:
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    other: list[Any] = []
    other.append(other)
    assert compare({"output": cyclic}, {"output": other}) == ()
    assert compare({"output": cyclic}, {"output": [[[1]]]})
    deep: Any = 1
    for _ in range(5000):
        deep = [deep]
    deep2 = _nest(5000, 1)
    assert values_equal(deep, deep2)
    assert compare({"output": deep}, {"output": deep2}) == ()
    found = compare({"output": deep}, {"output": _nest(5000, 2)})
    assert found and "depth" in found[0].message
    assert compare({"output": 1}, 5)  # type: ignore[arg-type]
    assert compare({1: 1}, {1: 1})  # type: ignore[dict-item]
    assert compare({"x": {1, 2}}, {"x": {1, 2}})


def _nest(depth: int, leaf: Any) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


# -------------------------------------------------------------------------- format_value


def test_format_value() -> None:
    assert format_value("a\tb\n") == repr("a\tb\n")
    text = format_value("x" * 1234)
    assert text.endswith("… (1234 chars)") and len(text) < 260
    assert format_value(b"\x00" * 1000).endswith("… (1000 bytes)")
    assert len(format_value("\x00" * 1000)) < 260
    assert "(1000 elements)" in format_value(list(range(1000)))
    assert len(format_value(list(range(1000)))) < 260
    assert format_value([1, "a"]) == "[1, 'a']"
    assert format_value({"a": [1]}) == "{'a': [1]}"
    assert format_value(MISSING) == "<missing>"
    assert format_value(None) == "None"
    assert format_value(float("nan")) == "nan"
    assert format_value(datetime(2024, 1, 1, tzinfo=UTC)) == "2024-01-01T00:00:00+00:00"
    assert len(format_value(10**5000)) < 260
    assert format_value("abc", limit=10) == "'abc'"
    assert format_value([[[[[[]]]]]]) == "[[[[[[]]]]]]"


# ------------------------------------------------------------------------------ property


def _offsets() -> st.SearchStrategy[timezone]:
    return st.integers(-1439, 1439).map(lambda m: timezone(timedelta(minutes=m)))


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.binary(max_size=6),
    st.dates(),
    st.datetimes(timezones=st.none() | _offsets()),
    st.times(timezones=st.none() | _offsets()),
)
_plain = st.recursive(
    _scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4)
    ),
    max_leaves=12,
)


def reference_equal(a: Any, b: Any) -> bool:
    """A deliberately simple, independent statement of the strict equality rules."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return a == b or (math.isnan(a) and math.isnan(b))
    if type(a) is list:
        return len(a) == len(b) and all(reference_equal(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is dict:
        return set(a) == set(b) and all(reference_equal(a[k], b[k]) for k in a)
    if type(a) is datetime:
        return bool(a == b and a.utcoffset() == b.utcoffset())
    if type(a) is time:
        return bool(
            a.replace(tzinfo=None) == b.replace(tzinfo=None) and a.utcoffset() == b.utcoffset()
        )
    return bool(a == b)


def _twist(value: Any) -> list[Any]:
    """Values that lie close to ``value`` but break one strictness rule."""
    out: list[Any] = []
    if type(value) is bool:
        out += [int(value), not value]
    elif type(value) is int:
        out += [float(value), value + 1, bool(value) if value in (0, 1) else -value]
    elif type(value) is float:
        out += [int(value) if math.isfinite(value) else 0, -value, math.nextafter(value, 0)]
    elif type(value) is str:
        out += [value + "\n", value.encode(), value[:-1], value.replace(" ", "\t")]
    elif type(value) is bytes:
        out += [value.decode("latin-1"), value + b"\x00"]
    elif type(value) is list:
        out += [value[:-1], [*value, None], list(reversed(value)), dict(enumerate(value))]
    elif type(value) is dict:
        out += [{**value, "extra": 1}, dict(list(value.items())[:-1]), list(value.values())]
    elif type(value) is datetime:
        out += [
            value.date(),
            value.replace(tzinfo=None if value.tzinfo else UTC),
            value.astimezone(PLUS1) if value.tzinfo and 1 < value.year < 9999 else value,
        ]
    elif type(value) is time:
        out += [value.replace(tzinfo=None if value.tzinfo else UTC)]
    elif type(value) is date:
        out += [datetime(value.year, value.month, value.day)]
    elif value is None:
        out += [False, 0, "", []]
    return out


@st.composite
def _near(draw: Callable[..., Any], value: Any) -> Any:
    """``value`` with one nested element replaced by a twisted or a fresh value."""
    if type(value) is list and value and draw(st.booleans()):
        i = draw(st.integers(0, len(value) - 1))
        return [*value[:i], draw(_near(value[i])), *value[i + 1 :]]
    if type(value) is dict and value and draw(st.booleans()):
        key = draw(st.sampled_from(sorted(value)))
        return {**value, key: draw(_near(value[key]))}
    candidates = _twist(value)
    if candidates and draw(st.booleans()):
        return draw(st.sampled_from(candidates))
    return draw(_plain)


@settings(max_examples=200, deadline=None)
@given(_plain)
def test_property_value_equals_its_copy(x: Any) -> None:
    assert values_equal(x, copy.deepcopy(x))
    assert values_equal(x, x)
    assert compare({"k": x}, {"k": copy.deepcopy(x)}) == ()


@settings(max_examples=500, deadline=None)
@given(st.data())
def test_property_agrees_with_reference_equality(data: st.DataObject) -> None:
    x = data.draw(_plain)
    y = data.draw(st.one_of(_near(x), _plain))
    same = reference_equal(x, y)
    assert values_equal(x, y) is same
    found = compare({"k": x}, {"k": y})
    assert (found == ()) is same
    for m in found:
        assert m.path.startswith("k")
        assert m.message.startswith(m.path)


# ---------------------------------------------------------------------- declarations


def test_a_declaration_is_never_compared_and_never_chooses_the_binding() -> None:
    expect = {"x_max": 3, "self_reported": ["x"]}
    assert compare(expect, {"x": 2}) == ()
    assert compare(expect, {"x": 2, "self_reported": "something else"}) == ()
    assert paths(compare(expect, {"x": 4})) == ["x_max"]
    assert binding_key({"self_reported": ["value"], "value": 1}) == "value"
    assert is_operator_key("self_reported")
    assert is_operator_key("tags_any_of") and is_operator_key("rows_unordered")
    assert not is_operator_key("_any_of") and not is_operator_key("any_of")
