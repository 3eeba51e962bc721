"""Property tests of the input side: random suites, random observations, random runs.

- The loader accepts a document or raises SuiteError; nothing else escapes it.
- A case passes if and only if its observation matches its expectation under a
  deliberately simple reference comparison written here, independently of cer.judge.compare.
- Summaries add up, and results come in declared order.

Most examples go through ``verdict.judge`` with a constructed Outcome (fast); a few go
through the real runner. Example counts are modest so the file runs in seconds.
"""

from __future__ import annotations

import contextlib
import math
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cer.engine.options import RunOptions
from cer.engine.runner import run_suite
from cer.judge.verdict import Outcome, judge
from cer.model import ARRAY_TO_CASE_CLASS, Case, CaseResult, Status, Summary
from cer.suite.loader import SuiteError, load_suite, parse_suite

FAST = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SOME = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SLOW = settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

ARRAYS = tuple(ARRAY_TO_CASE_CLASS)
RUNNER_KEYS = frozenset({"rejects", "error", "error_type", "crashed", "hung", "elapsed_ms"})


# --------------------------------------------------------------- a small TOML writer


def toml_key(key: str) -> str:
    return toml_value(key)


def toml_value(value: Any) -> str:
    """``value`` as TOML (every key quoted, every table inline)."""
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) is int:
        return str(value)
    if type(value) is float:
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if type(value) is str:
        out = []
        for char in value:
            if char in '"\\':
                out.append("\\" + char)
            elif ord(char) < 0x20 or ord(char) == 0x7F:
                out.append(f"\\u{ord(char):04x}")
            else:
                out.append(char)
        return '"' + "".join(out) + '"'
    if type(value) is date:
        return value.isoformat()
    if type(value) is list:
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if type(value) is dict:
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(type(value))


def toml_document(top: dict[str, Any], arrays: list[tuple[str, list[dict[str, Any]]]]) -> str:
    lines = [f"{toml_key(k)} = {toml_value(v)}" for k, v in top.items()]
    for array, tables in arrays:
        for table in tables:
            lines.append(f"\n[[{array}]]")
            lines.extend(f"{toml_key(k)} = {toml_value(v)}" for k, v in table.items())
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------ strategies

KEYS = st.sampled_from(
    [
        "output",
        "a",
        "b",
        "size",
        "size_max",
        "size_min",
        "tags",
        "tags_contains",
        "error",
        "error_includes",
        "has_fields",
        "rejects",
        "elapsed_ms",
        "elapsed_ms_max",
        "k",
        "k_contains",
        "_max",
        "",
        "é 🌍",
        "$bytes",
    ]
)
TEXT = st.text(max_size=12)
HUGE_TEXT = st.builds(
    lambda s, n: s * n, st.text(min_size=1, max_size=3), st.integers(1000, 20_000)
)
FLOATS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1.0, 0.5, 1.5, 10.0]),
)
INTS = st.one_of(st.integers(-(2**63), 2**63 - 1), st.integers(-3, 12))
TOML_SCALARS = st.one_of(st.booleans(), INTS, FLOATS, TEXT, st.dates())
TOML_VALUES = st.recursive(
    TOML_SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=4)),
    max_leaves=12,
)
PLAIN_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), INTS, FLOATS, TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=4)),
    max_leaves=12,
)


@st.composite
def near(draw: st.DrawFn, value: Any) -> Any:
    """``value`` itself, or something that differs from it in a small, tempting way."""
    choice = draw(st.integers(0, 9))
    if choice < 5:
        return value
    if type(value) is bool:
        return draw(st.sampled_from([int(value), not value, str(value).lower()]))
    if type(value) is int:
        return draw(st.sampled_from([float(value), value + 1, str(value), value == 1]))
    if type(value) is float:
        return draw(
            st.sampled_from(
                [
                    value + 1e-9 if math.isfinite(value) else 0.0,
                    int(value) if math.isfinite(value) else 1,
                    float("nan"),
                    value,
                ]
            )
        )
    if type(value) is str:
        return draw(
            st.sampled_from([value + " ", value.upper(), value + "\n", value[:-1], value.encode()])
        )
    if type(value) is list:
        if value and choice < 8:
            index = draw(st.integers(0, len(value) - 1))
            return [draw(near(item)) if i == index else item for i, item in enumerate(value)]
        return draw(st.sampled_from([list(reversed(value)), [*value, 0], value[1:]]))
    if type(value) is dict:
        if value and choice < 8:
            key = draw(st.sampled_from(sorted(value)))
            return {k: draw(near(v)) if k == key else v for k, v in value.items()}
        extra = dict(value)
        extra[draw(KEYS)] = draw(PLAIN_VALUES)
        return draw(st.sampled_from([extra, {}]))
    return draw(PLAIN_VALUES)


@st.composite
def pairs(draw: st.DrawFn) -> tuple[dict[str, Any], Any]:
    """A non-empty expect table and what an implementation returned for it."""
    expect = draw(st.dictionaries(KEYS, TOML_VALUES, min_size=1, max_size=4))
    for key in list(expect):
        if key.endswith(("_max", "_min")) and key not in ("_max", "_min"):
            expect[key] = draw(st.one_of(INTS, FLOATS, TOML_VALUES))
        if key == "has_fields":
            expect[key] = draw(st.one_of(st.lists(KEYS, max_size=3), TOML_VALUES))
    if draw(st.integers(0, 4)) == 0:
        return expect, draw(near(draw(TOML_VALUES)))
    observed: dict[str, Any] = {}
    for key, value in expect.items():
        if draw(st.integers(0, 6)) == 0:
            continue
        base = _operator_base(key)
        if base is not None:
            observed[base] = draw(st.one_of(INTS, FLOATS, TEXT, st.lists(TOML_SCALARS)))
        else:
            observed[key] = draw(near(value))
    for _ in range(draw(st.integers(0, 2))):
        observed[draw(KEYS)] = draw(PLAIN_VALUES)
    return expect, observed


# ------------------------------------------------ the reference comparison (simple)


def _operator_base(key: str) -> str | None:
    for suffix in ("_max", "_min", "_contains"):
        if key.endswith(suffix) and len(key) > len(suffix):
            return key[: -len(suffix)]
    return None


def _is_operator(key: str) -> bool:
    return key in ("error_includes", "has_fields") or _operator_base(key) is not None


def ref_equal(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return a == b or (a != a and b != b)
    if type(a) is list:
        return len(a) == len(b) and all(ref_equal(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is dict:
        return a.keys() == b.keys() and all(ref_equal(a[k], b[k]) for k in a)
    return bool(a == b)


def _number(value: Any) -> bool:
    return (type(value) is int or type(value) is float) and value == value


def ref_operator(key: str, want: Any, observation: dict[str, Any], bare: str = "") -> bool:
    """Whether the operator ``key`` holds; ``bare`` is the key a returned value that is
    neither a table nor an array is observed as (no field the implementation reported)."""
    if key == "error_includes":
        error = observation.get("error")
        return type(want) is str and type(error) is str and want in error
    if key == "has_fields":
        if type(want) is not list or not all(type(f) is str for f in want):
            return False
        output = observation.get("output")
        if type(output) is dict:
            return all(f in output for f in want)
        if type(output) is list:
            return bool(output) and all(
                type(row) is dict and all(f in row for f in want) for row in output
            )
        return all(f in observation and f not in RUNNER_KEYS and f != bare for f in want)
    base = _operator_base(key)
    assert base is not None
    seen = observation.get(base)
    if key.endswith("_contains"):
        if type(seen) is str:
            return type(want) is str and want != "" and want in seen
        if type(seen) is list:
            return any(ref_equal(want, item) for item in seen)
        return False
    if not (_number(want) and _number(seen)) or base not in observation:
        return False
    return bool(seen <= want) if key.endswith("_max") else bool(seen >= want)


OWNED = ("elapsed_ms", "resident_memory_mb", "crashed", "hung", "rejects")
MEASURED = ("elapsed_ms", "resident_memory_mb")


def ref_unverifiable(expect: dict[str, Any], returned: Any) -> bool:
    """Whether the case is errored whatever the comparison would say: its observation
    speaks for the runner, or an expectation holds for anything observed."""
    if type(returned) is dict and any(
        key == base or key in (f"{base}_max", f"{base}_min", f"{base}_contains")
        for key in returned
        for base in OWNED
    ):
        return True
    for key, want in expect.items():
        bounded = _operator_base(key)
        if key.endswith(("_max", "_min")) and bounded not in (None, *MEASURED):
            return True  # a bound on a number the runner does not measure
        if key == "has_fields" and want == [] and type(want) is list:
            return True
        booleans = ("rejects_any_of", "crashed_any_of", "hung_any_of")
        both = type(want) is list and True in (v is True for v in want)
        if key in booleans and both and True in (v is False for v in want):
            return True  # every outcome is one or the other (1 and 0 are no booleans)
        errors = ("error_includes", "error_type", "error")
        if key in errors and want is not None and expect.get("rejects") is False:
            return True  # a rejection asked for beside rejects = false: never met
        if key == "error_includes" and type(want) is str and not want:
            return True
        base = _operator_base(key)
        if base is None or key.endswith("_contains") or not _number(want):
            continue
        if key.endswith("_max") and want == math.inf:
            return True
        if key.endswith("_min") and (want == -math.inf or (base == "elapsed_ms" and want <= 0)):
            return True
    return False


def ref_passes(expect: dict[str, Any], returned: Any, elapsed_ms: float) -> bool:
    """What a returned value must do to pass, written from the documented rules."""
    bare = ""
    if type(returned) is dict:
        observation = dict(returned)
    else:
        plain = [k for k in expect if not _is_operator(k) and k not in RUNNER_KEYS]
        observation = {plain[0] if len(plain) == 1 else "output": returned}
        bare = "" if type(returned) is list else next(iter(observation))
    # A returned table's own error keys are values, never the runner's observation.
    observation.update(error=None, error_type=None)
    observation.update(rejects=False, crashed=False, hung=False, elapsed_ms=elapsed_ms)
    for key, want in expect.items():
        # An operator on a reported key applies to it, whatever else is reported; a
        # whole-name operator never compares a key of its own name.
        base = _operator_base(key)
        literal = not _is_operator(key) or (base is not None and base not in observation)
        if key in observation and literal:
            if not ref_equal(want, observation[key]):
                return False
        elif not (_is_operator(key) and ref_operator(key, want, observation, bare)):
            return False
    return True


def make_case(expect: dict[str, Any], position: int = 1, name: str = "case") -> Case:
    return Case(
        name=name,
        case_class="functional",
        category="functional",
        position=position,
        array_index=position,
        input={},
        expect=expect,
    )


# ------------------------------------------------------------------- judge vs reference


@FAST
@given(pairs(), st.floats(0, 5000))
def test_pass_if_and_only_if_the_reference_says_equal(
    pair: tuple[dict[str, Any], Any], elapsed: float
) -> None:
    expect, returned = pair
    result = judge(make_case(expect), Outcome("returned", value=returned, elapsed_ms=elapsed))
    if ref_unverifiable(expect, returned):
        assert result.status is Status.ERRORED, result.reason
        return
    assert (result.status is Status.PASS) == ref_passes(expect, returned, elapsed), result.reason
    assert result.status in (Status.PASS, Status.FAIL)
    if result.status is Status.FAIL:
        assert result.reason and result.mismatches


@FAST
@given(st.dictionaries(KEYS, TOML_VALUES, min_size=1, max_size=4), TEXT, TEXT)
def test_a_raise_passes_only_what_the_reference_allows(
    expect: dict[str, Any], error_type: str, message: str
) -> None:
    outcome = Outcome("raised", error_type=error_type, error_message=message, elapsed_ms=1.0)
    result = judge(make_case(expect), outcome)
    comparable = bool(
        expect.keys() & {"rejects", "error_type", "error_includes", "crashed", "hung", "error"}
    )
    if not comparable or ref_unverifiable(expect, None):
        assert result.status is Status.ERRORED
        return
    observation = {
        "rejects": True,
        "error": message,
        "error_type": error_type,
        "crashed": False,
        "hung": False,
        "elapsed_ms": 1.0,
    }
    wanted = all(
        ref_equal(v, observation[k])
        if k in observation
        else _is_operator(k) and ref_operator(k, v, observation)
        for k, v in expect.items()
    )
    assert (result.status is Status.PASS) == wanted


@FAST
@given(
    st.dictionaries(KEYS, TOML_VALUES, max_size=3),
    st.sampled_from(["timed_out", "crashed", "lost", "not_plain", "import_failed"]),
)
def test_no_other_ending_is_ever_a_pass_unless_asked_about(
    expect: dict[str, Any], kind: str
) -> None:
    result = judge(make_case(expect), Outcome(kind, detail="it ended", elapsed_ms=1.0))
    asked = (kind == "timed_out" and "hung" in expect) or (
        kind == "crashed" and "crashed" in expect
    )
    if not asked:
        assert result.status is Status.ERRORED
    elif result.status is Status.PASS:
        flag = "hung" if kind == "timed_out" else "crashed"
        assert expect[flag] is True
        assert all(k in RUNNER_KEYS or _is_operator(k) for k in expect)


# ------------------------------------------------------------------ summaries and order


@SOME
@given(st.lists(pairs(), min_size=0, max_size=6))
def test_summaries_add_up_and_keep_declared_order(
    cases: list[tuple[dict[str, Any], Any]],
) -> None:
    results: list[CaseResult] = []
    for position, (expect, returned) in enumerate(cases, start=1):
        case = make_case(expect, position, name=f"case-{position}")
        results.append(judge(case, Outcome("returned", value=returned, elapsed_ms=1.0)))
    assert [r.position for r in results] == list(range(1, len(cases) + 1))
    summary = Summary.of(results)
    assert summary.total == len(cases)
    assert summary.passed + summary.failed + summary.skipped + summary.errored == summary.total
    assert summary.passed == sum(r.status is Status.PASS for r in results)
    if summary.total and summary.passed == summary.total:
        assert summary.verdict == "conformant"
    else:
        assert summary.verdict != "conformant"


# ------------------------------------------------------------------------- the loader

CASE_FIELDS = st.sampled_from(
    ["name", "category", "input", "expect", "description", "verifies", "tags", "severity", "extra"]
)


@st.composite
def case_tables(draw: st.DrawFn) -> dict[str, Any]:
    table: dict[str, Any] = {}
    if draw(st.integers(0, 5)):
        table["name"] = draw(st.one_of(st.text(min_size=1, max_size=8), TOML_VALUES))
    if draw(st.integers(0, 5)):
        table["category"] = draw(st.one_of(st.sampled_from(["functional", "timing"]), TOML_VALUES))
    for field in draw(st.lists(CASE_FIELDS, max_size=4, unique=True)):
        table.setdefault(field, draw(st.one_of(TOML_VALUES, HUGE_TEXT)))
    return table


@st.composite
def documents(draw: st.DrawFn) -> tuple[str, list[tuple[str, list[dict[str, Any]]]]]:
    top: dict[str, Any] = {}
    if draw(st.integers(0, 4)):
        top["commonsformat_evals"] = draw(
            st.one_of(st.sampled_from(["0.1", "0.2", "0.3"]), TOML_VALUES)
        )
    for key in draw(
        st.lists(
            st.sampled_from(
                ["target", "target_version", "properties", "adversarial_coverage", "cases", "free"]
            ),
            max_size=3,
            unique=True,
        )
    ):
        top[key] = draw(TOML_VALUES)
    arrays = draw(st.lists(st.sampled_from([*ARRAYS, "adversarials"]), max_size=3, unique=True))
    if "cases" in top:
        arrays = [a for a in arrays if a != "cases"]
    layout = [(array, draw(st.lists(case_tables(), max_size=4))) for array in arrays]
    return toml_document(top, layout), layout


@SOME
@given(documents())
def test_the_loader_accepts_or_reports_a_suite_error(
    document: tuple[str, list[tuple[str, list[dict[str, Any]]]]],
) -> None:
    text, layout = document
    try:
        suite = parse_suite(text, Path("evals.toml"))
    except SuiteError as exc:
        assert exc.problems and all(isinstance(p, str) and p for p in exc.problems)
        return
    if "\ncases = " in "\n" + text.split("[[", 1)[0]:
        return  # an inline top-level cases array: its order is not in the layout
    declared = [
        (table["name"], ARRAY_TO_CASE_CLASS[array])
        for array, tables in layout
        if array in ARRAY_TO_CASE_CLASS
        for table in tables
    ]
    assert [(c.name, c.case_class) for c in suite.cases] == declared
    assert [c.position for c in suite.cases] == list(range(1, len(declared) + 1))
    assert len({c.name for c in suite.cases}) == len(suite.cases)


@FAST
@given(st.one_of(st.text(max_size=200), st.binary(max_size=200)))
def test_arbitrary_bytes_never_escape_as_another_exception(data: str | bytes) -> None:
    with contextlib.suppress(SuiteError):
        parse_suite(data, Path("evals.toml"))


def test_deeply_nested_toml_is_a_suite_error() -> None:
    text = 'commonsformat_evals = "0.2"\nx = ' + "[" * 1000 + "]" * 1000 + "\n"
    with pytest.raises(SuiteError):
        parse_suite(text, Path("evals.toml"))


# ------------------------------------------------------------------ the real runner

RETURN_INPUT = "def f(obs):\n    return obs\n"


@SLOW
@given(st.lists(pairs(), min_size=1, max_size=8))
def test_the_real_runner_agrees_with_the_reference(
    tmp_path_factory: pytest.TempPathFactory, cases: list[tuple[dict[str, Any], Any]]
) -> None:
    folder = tmp_path_factory.mktemp("prop")
    entries = []
    for index, (expect, returned) in enumerate(cases):
        if not _toml_able(returned):
            returned = {"output": 1}
        entries.append(
            {
                "name": f"c{index}",
                "category": "functional",
                "input": {"obs": returned},
                "expect": expect,
            }
        )
    (folder / "evals.toml").write_text(
        toml_document({"commonsformat_evals": "0.2"}, [("cases", entries)]), encoding="utf-8"
    )
    (folder / "echo.py").write_text(RETURN_INPUT, encoding="utf-8")
    suite = load_suite(folder / "evals.toml")
    run = run_suite(suite, RunOptions(impl="echo:f", timeout=5.0))
    assert [r.case_name for r in run.results] == [c.name for c in suite.cases]
    for result, entry in zip(run.results, entries, strict=True):
        wanted = not ref_unverifiable(entry["expect"], entry["input"]["obs"]) and ref_passes(
            entry["expect"], entry["input"]["obs"], result.elapsed_ms or 0.0
        )
        if any(k.startswith("elapsed_ms") for k in entry["expect"]):
            continue  # the measured time is only known after the run
        assert (result.status is Status.PASS) == wanted, (entry, result.reason)
    summary = run.summary
    assert summary.passed + summary.failed + summary.errored + summary.skipped == len(entries)


def _toml_able(value: Any) -> bool:
    if value is None or type(value) is bytes:
        return False
    if type(value) is list:
        return all(_toml_able(item) for item in value)
    if type(value) is dict:
        return all(_toml_able(item) for item in value.values())
    return True


def test_reference_comparison_is_not_vacuous() -> None:
    """The reference must tell pass from fail, or the properties prove nothing."""
    assert ref_passes({"output": 1}, 1, 0.0)
    assert not ref_passes({"output": 1}, True, 0.0)
    assert not ref_passes({"output": 1}, 1.0, 0.0)
    assert ref_passes({"output": float("nan")}, float("nan"), 0.0)
    assert ref_passes({"size_max": 5}, {"size": 5}, 0.0)
    assert not ref_passes({"size_max": 5}, {"size": True}, 0.0)
    assert ref_passes({"t_contains": "b"}, {"t": "abc"}, 0.0)
    assert not ref_passes({"has_fields": ["rejects"]}, 3, 0.0)
    assert not ref_passes({"a": 1, "b": 2}, 1, 0.0)
