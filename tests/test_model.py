"""A case's result keeps its observation packed and reads it back as it was stored."""

from __future__ import annotations

import marshal
import math
import pickle
from dataclasses import replace
from typing import Any

import pytest

from cer.model import MISSING, OBSERVATION_SLOT, CaseResult, Status


def _result(observation: Any) -> CaseResult:
    return CaseResult("c", "functional", "general", Status.PASS, observation=observation)


def test_observation_reads_back_type_for_type() -> None:
    observation = {
        "text": "é\x00",
        "flag": True,
        "zero": -0.0,
        "nan": math.nan,
        "big": 2**80,
        "items": [1, (2, 3), {"n": None}],
    }
    read = _result(observation).observation
    assert read is not None
    assert read == {**observation, "nan": read["nan"]}
    assert math.isnan(read["nan"])
    assert type(read["flag"]) is bool
    assert math.copysign(1.0, read["zero"]) == -1.0
    assert type(read["items"][1]) is tuple
    assert type(read["big"]) is int


def test_a_read_is_a_fresh_copy() -> None:
    result = _result({"items": [1]})
    first = result.observation
    assert first is not None
    first["items"].append(2)
    assert result.observation == {"items": [1]}


def test_a_plain_observation_is_held_packed() -> None:
    observation = {"output": "x" * 100, "tree": {"items": [{"n": 1}]}}
    result = _result(observation)
    assert not hasattr(result, "__dict__")  # the fields are slots, no dict a result
    stored = OBSERVATION_SLOT.__get__(result, CaseResult)
    assert type(stored) is bytes
    assert marshal.loads(stored) == observation


def test_what_marshal_refuses_is_kept_as_given() -> None:
    class Text(str):
        pass

    for observation in ({"m": MISSING}, {"t": Text("x")}):
        assert _result(observation).observation == observation
    assert type(_result({"t": Text("x")}).observation["t"]) is Text  # type: ignore[index]


def test_none_and_empty_stay_as_they_are() -> None:
    assert _result(None).observation is None
    assert _result({}).observation == {}


def test_bytes_are_refused_as_an_observation() -> None:
    with pytest.raises(TypeError):
        _result(b"\xe3")


def test_equality_replace_and_pickle_see_the_value() -> None:
    result = _result({"a": [1, {"b": 2.5}]})
    assert result == _result({"a": [1, {"b": 2.5}]})
    assert result != _result({"a": [1, {"b": 2.0}]})
    assert replace(result, reason="r").observation == {"a": [1, {"b": 2.5}]}
    assert pickle.loads(pickle.dumps(result)) == result


def test_a_table_holding_a_nan_is_kept_as_given_so_results_compare_as_before() -> None:
    """A NaN equals itself only as the same object: a packed copy would read back unequal
    and make a result differ from its own copy, so such a table is not packed."""
    observation = {"x": math.nan}
    result = _result(observation)
    assert type(OBSERVATION_SLOT.__get__(result, CaseResult)) is dict
    assert result == replace(result)
