"""The wire encoding keeps every TOML type distinct and rejects what is not plain data."""

from __future__ import annotations

import datetime as dt
import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cer.wire import plaindata

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(),
    st.binary(max_size=20),
    st.datetimes(timezones=st.none() | st.just(dt.UTC)),
    st.dates(),
    st.times(),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)


def typed(value: Any) -> Any:
    """The value with every node's exact type attached, for a strict round-trip check."""
    if isinstance(value, list):
        return ("list", [typed(v) for v in value])
    if isinstance(value, dict):
        return ("dict", {k: typed(v) for k, v in value.items()})
    return (type(value).__name__, value)


@given(VALUES)
def test_round_trip_keeps_values_and_exact_types(value: Any) -> None:
    assert typed(plaindata.decode(plaindata.encode(value))) == typed(value)


@pytest.mark.parametrize("value", [1, 1.0, True, "1", b"1", None])
def test_one_one_point_zero_true_and_string_stay_apart(value: Any) -> None:
    back = plaindata.decode(plaindata.encode({"v": value}))["v"]
    assert type(back) is type(value)
    assert back == value


def test_nan_and_infinities_survive() -> None:
    back = plaindata.decode(plaindata.encode([math.nan, math.inf, -math.inf, -0.0]))
    assert math.isnan(back[0])
    assert back[1:3] == [math.inf, -math.inf]
    assert math.copysign(1, back[3]) == -1


def test_keys_that_look_like_tags_are_not_tags() -> None:
    value = {"$bytes": "aGk=", "$$x": 1, "$": [{"$datetime": "x"}]}
    assert plaindata.decode(plaindata.encode(value)) == value


def test_tuples_become_lists() -> None:
    assert plaindata.decode(plaindata.encode((1, (2,)))) == [1, [2]]


class Sub(int):
    pass


@pytest.mark.parametrize(
    ("value", "path"),
    [
        (Sub(1), ""),
        ({"a": [1, {2}]}, "a[1]"),
        ({1: "x"}, ""),
        ({"a": {"b c": object()}}, 'a["b c"]'),
    ],
)
def test_not_plain_data_names_the_path(value: Any, path: str) -> None:
    with pytest.raises(plaindata.NotPlainData) as info:
        plaindata.to_wire(value)
    assert info.value.path == path


def test_cycles_and_depth_are_refused() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(plaindata.NotPlainData, match="contains itself"):
        plaindata.to_wire(cycle)
    deep: list[Any] = []
    for _ in range(plaindata.MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(plaindata.NotPlainData, match="deeper"):
        plaindata.to_wire(deep)


def test_shared_but_acyclic_references_are_fine() -> None:
    shared = [1]
    assert plaindata.to_wire([shared, shared]) == [[1], [1]]


def test_malformed_bytes_raise_value_error() -> None:
    with pytest.raises(ValueError):
        plaindata.decode(b'{"$bytes": 3}')
    with pytest.raises(ValueError):
        plaindata.decode(b"not json")


@given(VALUES)
def test_the_fast_walk_gives_exactly_what_the_walk_with_paths_gives(value: Any) -> None:
    fast = plaindata._FastWalker().walk(value, 0)
    full = plaindata._Walker().walk(value, "", 0)
    assert typed(fast) == typed(full)


def _json_way(data: bytes) -> Any:
    """What loads decided before its fast path: json.loads, with the tag hook."""
    if b'"$' not in data:
        return json.loads(data)
    return json.loads(data, object_hook=plaindata._from_wire_object)


def _outcome(load: Any, data: bytes) -> Any:
    try:
        return ("value", repr(typed(load(data))))  # repr: NaN equals itself
    except (ValueError, RecursionError) as exc:
        return ("error", type(exc).__name__ if not isinstance(exc, ValueError) else "ValueError")


TEXTS = st.one_of(
    VALUES.map(lambda v: plaindata.encode(v).decode("utf-8")),
    st.text(alphabet='{}[]",:$ 0123456789.eE-+\\ntrufalsNIy\ufeff\x00', max_size=30),
)


@given(TEXTS, st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-32"]))
@settings(max_examples=400)
def test_loads_decides_exactly_as_json_loads(text: str, encoding: str) -> None:
    data = text.encode(encoding, "surrogatepass")
    for padded in (data, b" " + data, data + b"\n"):
        assert _outcome(plaindata.loads, padded) == _outcome(_json_way, padded)
