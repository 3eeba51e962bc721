"""Attacks on the judge's newer rules (what the runner measures, rejections only by a
raise, ``K_any_of`` and ``K_unordered``), each asserting the truthful outcome.

- An observation spelling an operator on a key only the runner observes
  (``error_includes``, ``error_contains``, ``rejects_any_of``, ``hung_unordered``,
  ``resident_memory_mb_any_of``) once met that operator by equality with itself: a
  function that returned passed an error expectation, and an unmeasured memory bound.
- An observation reporting both ``K`` and the operator's literal key (``K_any_of``)
  once had only the literal key compared: ``k = 5`` passed ``k_any_of = [1]``.
- A key named as a time or memory in capitals, camelCase or a lookalike letter
  (``first_render_MS``, ``firstRenderMs``, ``render_ｍs``) once passed on the
  implementation's own figure where ``first_render_ms`` is errored.
- ``self_reported`` naming a lookalike of a runner-observed key (``Elapsed_MS``,
  ``elapsed_ｍs``) once let the implementation's own figure pass under a name that
  reads as the runner's measurement.
- A literal key of ``expect`` that only reads as one of the runner's (``Rejects``,
  ``errorIncludes``, ``Elapsed_MS_Max``), or an operator on an operator named whole
  (``error_includes_any_of``), once passed on a key the implementation returned.
- ``error_type_any_of`` once errored a raise instead of comparing it.
- A self-reported figure too large for a float once failed its bound with "the
  comparison could not be completed" instead of the bound it missed.
- ``K_unordered`` of date-times once compared every pair: a few thousand timestamps
  in another order took minutes; many equal elements were taken from the front of a
  list, one shift of the list each.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from cer.judge.compare import compare, unmatched
from cer.judge.verdict import (
    Outcome,
    asks_memory,
    declaration_problems,
    judge,
    unmeasured_keys,
)
from cer.model import Case, CaseResult, Status
from support import Module, single_case_suite


def case(expect: dict[str, Any]) -> Case:
    return Case("c", "functional", "functional", 1, 1, {}, expect)


def returned(expect: dict[str, Any], value: Any) -> CaseResult:
    return judge(case(expect), Outcome("returned", value=value, elapsed_ms=1.0))


# ------------------------------------------------- runner-observed keys spelled by operators


@pytest.mark.parametrize(
    "key",
    [
        "error_includes",
        "error_contains",
        "error_any_of",
        "error_unordered",
        "error_type_any_of",
        "error_type_contains",
    ],
)
def test_a_returned_table_spelling_an_error_operator_is_no_rejection(key: str) -> None:
    value: Any = ["boom"] if key.endswith(("_any_of", "_unordered")) else "boom"
    result = returned({key: value}, {key: value})
    assert result.status is Status.FAIL, result.reason
    assert result.fail_class == "mismatch"


@pytest.mark.parametrize(
    "key",
    [
        "rejects_any_of",
        "crashed_any_of",
        "hung_unordered",
        "elapsed_ms_any_of",
        "elapsed_ms_unordered",
        "resident_memory_mb_any_of",
    ],
)
def test_a_returned_table_spelling_any_operator_on_a_runner_key_is_errored(key: str) -> None:
    # Memory measured, so that an operator on resident_memory_mb, which asks for the
    # runner's measurement, reaches the check of what the observation carries.
    outcome = Outcome("returned", value={key: [True]}, elapsed_ms=1.0, memory_mb=12.0)
    result = judge(case({key: [True]}), outcome)
    assert result.status is Status.ERRORED, result.reason
    assert result.fail_class == "unverifiable"
    assert f"`{key}`" in (result.reason or "")


@pytest.mark.parametrize(
    "key", ["resident_memory_mb_any_of", "resident_memory_mb_unordered", "resident_memory_mb_max"]
)
def test_any_operator_on_the_memory_key_asks_for_the_runners_measurement(key: str) -> None:
    assert asks_memory({key: [12.0]})
    # Unmeasured, the case cannot be verified, whatever the implementation returned.
    result = returned({key: [True]}, {key: [True]})
    assert result.status is Status.ERRORED, result.reason
    assert result.fail_class == "unverifiable"
    assert (
        result.reason == "could not verify resident_memory_mb: the runner did not measure this case"
    )


def test_an_operator_on_the_memory_key_compares_the_runners_measurement() -> None:
    expect = {"resident_memory_mb_any_of": [12.0]}
    measured = Outcome("returned", value=1, elapsed_ms=1.0, memory_mb=12.0)
    assert judge(case(expect), measured).status is Status.PASS
    other = Outcome("returned", value=1, elapsed_ms=1.0, memory_mb=13.0)
    assert judge(case(expect), other).status is Status.FAIL


def test_an_error_includes_returned_by_a_real_implementation_fails(tmp_path: Any) -> None:
    module = Module(tmp_path)
    module.suite(single_case_suite('{ error_includes = "empty" }'))
    name = module.impl('def f():\n    return {"error_includes": "empty"}\n')
    (result,) = module.run(f"{name}:f", isolation="none").results
    assert result.status is Status.FAIL, result.reason
    assert "expected a rejection" in (result.reason or "")
    assert "error_includes in a returned table is a value, not a rejection" in (result.reason or "")


# ------------------------------------------------------ the literal key beside its base


@pytest.mark.parametrize(
    ("expect", "observation"),
    [
        ({"k_any_of": [1]}, {"k_any_of": [1], "k": 5}),
        ({"k_unordered": [1, 2]}, {"k_unordered": [1, 2], "k": [1, 3]}),
        ({"k_contains": "x"}, {"k_contains": "x", "k": "y"}),
        ({"k_max": 5}, {"k_max": 5, "k": 100}),
        ({"k_min": 5}, {"k_min": 5, "k": 1}),
        ({"has_fields": ["a"]}, {"has_fields": ["a"], "b": 1}),
    ],
)
def test_a_literal_operator_key_does_not_hide_the_key_it_looks_at(
    expect: dict[str, Any], observation: dict[str, Any]
) -> None:
    assert compare(expect, observation), "the operator must still apply"
    bound = "k_max" in expect or "k_min" in expect
    declared = {**expect, "self_reported": ["k"]} if bound else expect
    result = returned(declared, observation)
    assert result.status is Status.FAIL, result.reason


def test_a_literal_operator_key_alone_is_still_compared_literally() -> None:
    assert compare({"size_max": 5}, {"size_max": 5}) == ()
    assert compare({"size_max": 5}, {"size_max": 6})
    assert compare({"k_any_of": [1]}, {"k_any_of": [1], "k": 1}) == ()


# --------------------------------------------------------- measurement names, any spelling


@pytest.mark.parametrize(
    "key",
    ["first_render_MS", "firstRenderMs", "binarySizeMB", "render_ｍs", "parse_time_Ms_any_of"],
)
def test_a_time_or_memory_name_in_any_spelling_cannot_be_verified(key: str) -> None:
    assert unmeasured_keys({key: 5}) == [key]
    base = key.removesuffix("_any_of")
    result = returned({key: 5}, {base: 5})
    assert result.status is Status.ERRORED and result.fail_class == "unverifiable"


@pytest.mark.parametrize("name", ["Elapsed_MS", "elapsed_ｍs", "ELAPSED_MS", "Resident_Memory_MB"])
def test_self_reported_cannot_name_a_lookalike_of_a_runner_key(name: str) -> None:
    expect = {f"{name}_max": 5, "self_reported": [name]}
    assert declaration_problems(expect), name
    result = returned(expect, {name: 1})
    assert result.status is Status.ERRORED and result.fail_class == "unverifiable"


# ------------------------------------------------------------ unordered stays near-linear


def test_unordered_date_times_in_another_order_stay_cheap() -> None:
    start = datetime(2020, 1, 1, tzinfo=UTC)
    expected = [start + timedelta(seconds=i) for i in range(3000)]
    rows = [{"at": at} for at in expected]
    began = time.perf_counter()
    assert compare({"t_unordered": expected}, {"t": expected[::-1]}) == ()
    assert compare({"t_unordered": rows}, {"t": rows[::-1]}) == ()
    other = [at - timedelta(days=1) for at in expected]
    assert compare({"t_unordered": expected}, {"t": other})
    assert time.perf_counter() - began < 5.0  # each with each: over a minute


def test_unordered_with_many_equal_elements_stays_cheap() -> None:
    many = ["a"] * 150_000
    began = time.perf_counter()
    assert compare({"t_unordered": many}, {"t": list(many)}) == ()
    missing, extra = unmatched(many, [*many[1:], "b"])
    assert (missing, extra) == (["a"], ["b"])
    assert time.perf_counter() - began < 5.0  # taking each from the front: over 10 s


def test_unordered_date_times_keep_their_offsets() -> None:
    utc = datetime(2020, 1, 1, 12, tzinfo=UTC)
    plus_one = utc.astimezone(timezone(timedelta(hours=1)))
    naive = datetime(2020, 1, 1, 12)
    assert unmatched([utc], [plus_one]) == ([utc], [plus_one])
    assert unmatched([utc], [naive]) == ([utc], [naive])
    assert unmatched([utc, plus_one], [plus_one, utc]) == ([], [])


# ------------------------------------------------- an operator on what an exception says


def test_an_operator_on_the_error_type_is_compared_with_a_raise() -> None:
    expect = {"error_type_any_of": ["ValueError", "TypeError"]}
    raised = Outcome("raised", error_type="TypeError", error_message="no", elapsed_ms=1.0)
    assert judge(case(expect), raised).status is Status.PASS
    other = Outcome("raised", error_type="KeyError", error_message="no", elapsed_ms=1.0)
    assert judge(case(expect), other).status is Status.FAIL
    assert returned(expect, {"error_type": "TypeError"}).status is Status.FAIL
    whole = Outcome("raised", error_type="TypeError", error_message="x", call_note="called whole")
    named = {"rejects": True, **expect}
    assert judge(case(named), whole).status is Status.PASS


# --------------------------------------------- a literal key that reads as the runner's


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("Rejects", True),
        ("Error_Type", "ValueError"),
        ("errorIncludes", "empty"),
        ("Elapsed_MS_Max", 5),
        ("hung\u200b", False),
        ("hasFields", ["a"]),
    ],
)
def test_a_key_reading_as_the_runners_own_cannot_be_verified(key: str, value: Any) -> None:
    result = returned({key: value}, {key: value})
    assert result.status is Status.ERRORED, result.reason
    assert result.fail_class == "unverifiable"
    assert "reads as" in (result.reason or "")


@pytest.mark.parametrize(
    ("key", "value", "observed"),
    [
        ("error_includes_any_of", ["boom"], {"error_includes": "boom"}),
        ("has_fields_contains", "a", {"has_fields": ["a"]}),
        ("self_reported_contains", "a", {"self_reported": ["a"]}),
    ],
)
def test_an_operator_on_an_operator_cannot_be_verified(
    key: str, value: Any, observed: dict[str, Any]
) -> None:
    result = returned({key: value}, observed)
    assert result.status is Status.ERRORED, result.reason
    assert "which is an operator of expect" in (result.reason or "")


def test_cer_check_reports_a_key_reading_as_the_runners_own(tmp_path: Any) -> None:
    from cer.cli.check import check_suite

    path = tmp_path / "evals.toml"
    path.write_text(single_case_suite("{ Rejects = true }"), encoding="utf-8")
    report = check_suite(path)
    assert any("'Rejects' reads as rejects" in finding.message for finding in report.findings)


def test_a_huge_self_reported_figure_fails_its_bound_with_a_bounded_message() -> None:
    expect = {"startup_ms_max": 5, "self_reported": ["startup_ms"]}
    result = returned(expect, {"startup_ms": 10**5000})
    assert result.status is Status.FAIL
    reason = result.reason or ""
    assert "expected startup_ms <= 5, observed <int of 16610 bits> ms" in reason
    assert "could not be completed" not in reason and len(reason) < 1000
    huge_bound = {"startup_ms_max": 10**5000, "self_reported": ["startup_ms"]}
    assert returned(huge_bound, {"startup_ms": 1.5}).status is Status.PASS
    assert returned({**huge_bound, "startup_ms_min": 10**4000}, {"startup_ms": 1.5}).reason
