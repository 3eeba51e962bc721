"""Attacks on how the judge compares an observation, each asserting the truthful outcome.

- What the runner measures only the runner supplies: an observation that carries a
  runner-observed key, or an operator spelled on one (``elapsed_ms_max``), once had
  that key compared for equality, so a slow implementation passed its time bound.
- The runner never dies on a case: an input nested hundreds of levels deep (valid
  TOML, accepted by ``cer check``) or holding more values than the runner sends once
  ended the whole run with a traceback and no result for any case.
- What only looks like a measurement (``latency_max``) is compared as the implementation
  reported it: a bound on it once passed in every report as though the runner had
  measured it, and ``cer check`` said nothing.
- A bound on any number the runner does not measure (a footprint, a start-up time, a
  count) once passed on the implementation's own figure: it is errored unless the case
  declares the key ``self_reported``.
- An error returned as a value (``{"error": ..., "error_type": ...}``) once met
  ``error_includes`` and ``error_type`` without anything raised, for Python and for
  commands alike.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import sys
import textwrap
import xml.etree.ElementTree as ET
from typing import Any

import pytest

from cer.cli.main import main
from cer.engine.options import RunOptions
from cer.engine.runner import run_suite
from cer.model import RunResult, Status
from cer.suite.loader import SuiteError, load_suite
from support import Module

PASS, FAIL, ERRORED = Status.PASS, Status.FAIL, Status.ERRORED
MODES = ["fork", "none"]
PYTHON = shlex.quote(sys.executable)


def suite(*cases: tuple[str, str, str]) -> str:
    """A suite of (name, input, expect) cases, inline tables as TOML text."""
    parts = ['commonsformat_evals = "0.2"\ntarget = "t"\n']
    for name, input_, expect in cases:
        parts.append(
            f'[[cases]]\nname = "{name}"\ncategory = "functional"\n'
            f"input = {input_}\nexpect = {expect}\n"
        )
    return "\n".join(parts)


def run(module: Module, source: str, suite_text: str, **options: Any) -> RunResult:
    module.suite(suite_text)
    name = module.impl(textwrap.dedent(source))
    options.setdefault("timeout", 5.0)
    return module.run(f"{name}:f", **options)


def outcome(result: RunResult) -> list[tuple[Status, str]]:
    return [(r.status, r.reason or "") for r in result.results]


# --- what the runner measures, only the runner supplies ----------------------------------

SPEAKS_FOR_THE_RUNNER = """\
import time

def f(n):
    if n == 0:
        return {"output": 1}
    time.sleep(0.3)
    return [
        None,
        {"output": 1, "elapsed_ms_max": 100},
        {"output": 1, "elapsed_ms_min": 0, "elapsed_ms": 1.0},
        {"output": 1, "crashed": False},
        {"output": 1, "hung": False, "rejects": False},
    ][n]
"""


@pytest.mark.parametrize("mode", MODES)
def test_an_observation_naming_a_runner_measurement_is_errored_not_compared(
    module: Module, mode: str
) -> None:
    result = run(
        module,
        SPEAKS_FOR_THE_RUNNER,
        suite(
            ("honest", "{ n = 0 }", "{ output = 1 }"),
            ("bound", "{ n = 1 }", "{ output = 1, elapsed_ms_max = 100 }"),
            ("value", "{ n = 2 }", "{ output = 1, elapsed_ms_min = 1 }"),
            ("crash", "{ n = 3 }", "{ output = 1, crashed = false }"),
            ("health", "{ n = 4 }", "{ output = 1, hung = false, rejects = false }"),
            ("after", "{ n = 0 }", "{ output = 1 }"),
        ),
        isolation=mode,
    )
    got = outcome(result)
    assert [status for status, _ in got] == [PASS, ERRORED, ERRORED, ERRORED, ERRORED, PASS]
    assert "`elapsed_ms_max`" in got[1][1]
    assert "`elapsed_ms_min`, `elapsed_ms`" in got[2][1]
    assert "`crashed`" in got[3][1]
    assert "`hung`, `rejects`" in got[4][1]
    assert all("only the runner observes" in reason for _, reason in got[1:5])
    assert result.results[1].observation is None  # nothing of it was compared


def test_a_harness_naming_a_runner_measurement_is_errored(module: Module) -> None:
    module.suite(
        suite(
            ("honest", "{ n = 0 }", "{ output = 1 }"),
            ("bound", "{ n = 1 }", "{ output = 1, elapsed_ms_max = 100 }"),
        )
    )
    (module.root / "harness.py").write_text(
        textwrap.dedent(
            """\
            import json, sys, time
            for line in sys.stdin:
                request = json.loads(line)
                if request["op"] == "start":
                    print(json.dumps({"op": "started", "protocol": 1,
                                      "implementation": {"name": "h", "version": "1"}}),
                          flush=True)
                elif request["op"] == "run":
                    time.sleep(0.3)
                    value = {"output": {"type": "integer", "value": "1"}}
                    if request["case"]["input"]["value"]["n"]["value"] == "1":
                        value["elapsed_ms_max"] = {"type": "integer", "value": "100"}
                    observation = {"type": "table", "value": value}
                    print(json.dumps({"op": "result", "seq": request["seq"],
                                      "observation": observation}), flush=True)
                else:
                    break
            """
        ),
        encoding="utf-8",
    )
    result = run_suite(
        load_suite(module.root / "evals.toml"),
        RunOptions(impl=f"{PYTHON} {module.root / 'harness.py'}", kind="command", timeout=5.0),
    )
    got = outcome(result)
    assert [status for status, _ in got] == [PASS, ERRORED]
    assert "`elapsed_ms_max`" in got[1][1]


def test_a_reported_memory_bound_is_never_the_measurement(module: Module) -> None:
    result = run(
        module,
        """\
        BALLAST = []

        def f(n):
            BALLAST.append(bytearray(64 * 1024 * 1024))
            return {"output": 1, "resident_memory_mb_max": 10}
        """,
        suite(("memory", "{ n = 1 }", "{ output = 1, resident_memory_mb_max = 10 }")),
    )
    ((status, reason),) = outcome(result)
    assert status is ERRORED
    assert "`resident_memory_mb_max`" in reason


# --- the runner never dies on a case -----------------------------------------------------


def nested(depth: int, leaf: str = "1") -> str:
    return "[" * depth + leaf + "]" * depth


def nested_tables(depth: int) -> str:
    return "{ a = " * depth + "1" + " }" * depth


DEEP_SUITE = suite(
    ("before", "{ n = 1 }", "{ output = 1 }"),
    ("deep-array", f"{{ n = {nested(300)} }}", "{ output = 1 }"),
    ("deep-table", f"{{ n = {nested_tables(300)} }}", "{ crashed = false }"),
    ("just-enough", f"{{ n = {nested(98)} }}", "{ output = 1 }"),
    ("after", "{ n = 1 }", "{ output = 1 }"),
)

UNWRAP = """\
def f(n):
    while isinstance(n, list):
        n = n[0]
    return 1 if isinstance(n, (int, dict)) else n
"""


def _assert_deep_errored(result: RunResult) -> None:
    got = outcome(result)
    assert [status for status, _ in got] == [PASS, ERRORED, ERRORED, PASS, PASS], got
    for _, reason in got[1:3]:
        assert "the case's input cannot be sent to the implementation" in reason
        assert "nested deeper than 100 levels" in reason


@pytest.mark.parametrize("mode", MODES)
def test_a_deeply_nested_input_errors_its_case_and_every_other_case_runs(
    module: Module, mode: str
) -> None:
    _assert_deep_errored(run(module, UNWRAP, DEEP_SUITE, isolation=mode))


@pytest.mark.parametrize("per_case", [False, True])
def test_a_deeply_nested_input_errors_its_case_for_commands(module: Module, per_case: bool) -> None:
    module.suite(DEEP_SUITE)
    (module.root / "harness.py").write_text(
        textwrap.dedent(
            """\
            import json, sys
            for line in sys.stdin:
                request = json.loads(line)
                if request["op"] == "start":
                    print(json.dumps({"op": "started", "protocol": 1,
                                      "implementation": {"name": "h", "version": "1"}}),
                          flush=True)
                elif request["op"] == "run":
                    one = {"type": "integer", "value": "1"}
                    observation = {"type": "table", "value": {"output": one}}
                    print(json.dumps({"op": "result", "seq": request["seq"],
                                      "observation": observation}), flush=True)
                else:
                    break
            """
        ),
        encoding="utf-8",
    )
    command = f"{PYTHON} {module.root / 'harness.py'}"
    kind = "command-per-case" if per_case else "command"
    result = run_suite(
        load_suite(module.root / "evals.toml"), RunOptions(impl=command, kind=kind, timeout=5.0)
    )
    _assert_deep_errored(result)


def test_an_input_with_more_values_than_the_runner_sends_errors_its_case(
    module: Module,
) -> None:
    module.suite(
        suite(
            ("before", "{ n = 1 }", "{ output = 1 }"),
            ("huge", "{ n = 1 }", "{ output = 1 }"),
            ("after", "{ n = 1 }", "{ output = 1 }"),
        )
    )
    name = module.impl(UNWRAP)
    loaded = load_suite(module.root / "evals.toml")
    cases = list(loaded.cases)
    cases[1] = dataclasses.replace(cases[1], input={"n": [0] * 2_000_001})
    huge = dataclasses.replace(loaded, cases=tuple(cases))
    result = run_suite(huge, RunOptions(impl=f"{name}:f"))
    got = outcome(result)
    assert [status for status, _ in got] == [PASS, ERRORED, PASS]
    assert "more than 2000000 values" in got[1][1]


# --- no vacuous pass ---------------------------------------------------------------------

VACUOUS = """\
def f(n):
    return [
        {"output": []},
        {"output": [{"key": "a"}]},
        {"name": "anything at all"},
        {"size": 12},
        {"tags": "x"},
    ][n]
"""


@pytest.mark.parametrize("mode", MODES)
def test_nothing_to_check_is_never_a_pass(module: Module, mode: str) -> None:
    result = run(
        module,
        VACUOUS,
        suite(
            ("fields-of-nothing", "{ n = 0 }", '{ has_fields = ["key", "count"] }'),
            ("no-fields", "{ n = 1 }", "{ has_fields = [] }"),
            ("contains-nothing", "{ n = 2 }", '{ name_contains = "" }'),
            ("unbounded", "{ n = 3 }", '{ size_max = inf, self_reported = ["size"] }'),
            ("unbounded-below", "{ n = 3 }", '{ size_min = -inf, self_reported = ["size"] }'),
            ("any-time", "{ n = 3 }", "{ size = 12, elapsed_ms_min = 0 }"),
            ("empty-error", "{ n = 4 }", '{ error_includes = "" }'),
            ("honest", "{ n = 1 }", '{ has_fields = ["key"] }'),
        ),
        isolation=mode,
    )
    got = outcome(result)
    assert [status for status, _ in got] == [
        FAIL,
        ERRORED,
        FAIL,
        ERRORED,
        ERRORED,
        ERRORED,
        ERRORED,
        PASS,
    ], got
    assert "output is an empty array" in got[0][1]
    assert "has_fields lists no field" in got[1][1]
    assert "every string contains the empty string" in got[2][1]
    assert "size <= inf holds for every number" in got[3][1]
    assert "size >= -inf holds for every number" in got[4][1]
    assert "elapsed_ms >= 0 holds for every measurement" in got[5][1]
    assert 'error_includes = "" is included in every error' in got[6][1]


def test_nothing_to_check_is_never_a_pass_on_a_rejection(module: Module) -> None:
    result = run(
        module,
        """\
        def f(n):
            raise ValueError("refused")
        """,
        suite(
            ("empty-error", "{ n = 0 }", '{ rejects = true, error_includes = "" }'),
            ("no-fields", "{ n = 0 }", "{ rejects = true, has_fields = [] }"),
            ("honest", "{ n = 0 }", '{ rejects = true, error_includes = "refused" }'),
        ),
    )
    assert [status for status, _ in outcome(result)] == [ERRORED, ERRORED, PASS]


def test_an_empty_expect_table_is_never_a_pass(module: Module) -> None:
    result = run(module, "def f(n):\n    return 1\n", suite(("empty", "{ n = 0 }", "{}")))
    ((status, reason),) = outcome(result)
    assert status is ERRORED
    assert "expect table is empty" in reason


# --- a call that does not fit is not a refusal -------------------------------------------

MISNAMED = """\
def shout(txt):
    return txt.upper()


def two(file, mode="r"):
    raise ValueError("empty")


def whole(data):
    if not data["text"]:
        raise ValueError("empty")
    return data["text"].upper()


class Called:
    def __call__(self, txt):
        return txt.upper()
"""

REJECTIONS = suite(
    ("bare", '{ text = "" }', "{ rejects = true }"),
    ("named", '{ text = "" }', '{ rejects = true, error_includes = "empty" }'),
    ("value", '{ text = "hi" }', '{ output = "HI" }'),
)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("attr", ["shout", "Called"])
def test_a_misnamed_parameter_never_passes_a_rejection(
    module: Module, mode: str, attr: str
) -> None:
    module.suite(REJECTIONS)
    name = module.impl(MISNAMED)
    got = outcome(module.run(f"{name}:{attr}", isolation=mode))
    assert [status for status, _ in got] == [ERRORED, FAIL, ERRORED], got
    assert "could not verify rejects = true" in got[0][1]
    for _, reason in got:
        assert "was called with the whole input as its one argument" in reason
        assert "`txt` names no key of the input" in reason


def test_an_input_that_fits_no_way_is_errored_naming_the_misfit(module: Module) -> None:
    module.suite(REJECTIONS)
    name = module.impl(MISNAMED)
    got = outcome(module.run(f"{name}:two"))
    assert [status for status, _ in got] == [ERRORED] * 3
    for _, reason in got:
        assert "the input does not fit the signature of two: missing `file`, unexpected `text`" in (
            reason
        )


def test_a_one_dict_adapter_still_passes_a_named_rejection(module: Module) -> None:
    module.suite(REJECTIONS)
    name = module.impl(MISNAMED)
    got = outcome(module.run(f"{name}:whole"))
    assert [status for status, _ in got] == [ERRORED, PASS, PASS], got
    assert "whole was called with the whole input as its one argument" in got[1][1]


# --- what only looks like a measurement is the implementation's word ---------------------

REPORTED_SUITE = suite(
    ("fast", "{ n = 1 }", '{ output = 1, latency_max = 50, self_reported = ["latency"] }'),
    (
        "slow",
        "{ n = 2 }",
        '{ output = 2, parse_duration_s_max = 0.5, self_reported = ["parse_duration_s"] }',
    ),
)

REPORTS_ITS_OWN_TIMES = """\
def f(n):
    return {"output": n, "latency": 3, "parse_duration_s": 9.0}
"""


def test_a_bound_on_a_reported_measurement_says_whose_word_it_is(
    module: Module, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bound on ``latency`` or ``parse_duration_s`` the case declares self-reported is
    compared, but the runner never measured them: every report of its outcome says the
    implementation reported it, and ``cer check`` warns before the suite runs."""
    module.suite(REPORTED_SUITE)
    module.impl(REPORTS_ITS_OWN_TIMES, name="times")
    monkeypatch.chdir(module.root)
    note = "is reported by the implementation, not measured by cer"

    assert main(["check", "evals.toml"]) == 0
    checked = capsys.readouterr()
    said = checked.out + checked.err
    assert f'warning: case "fast": latency {note}' in said
    assert f'warning: case "slow": parse_duration_s {note}' in said
    assert "evals.toml:" in said

    main(["run", "evals.toml", "--impl", "times:f", "--no-history", "-v"])
    text = capsys.readouterr().out
    assert f"latency {note}" in text  # beside the pass
    assert f"parse_duration_s {note}" in text  # beside the failure

    reports = ["junit=r.xml", "html=r.html", "markdown=r.md", "tap=r.tap"]
    argv = ["run", "evals.toml", "--impl", "times:f", "--no-history", "--format", "json"]
    main([*argv, *[word for report in reports for word in ("--report", report)]])
    results = {r["case_name"]: r for r in json.loads(capsys.readouterr().out)["results"]}
    assert results["fast"]["status"] == "pass"
    assert f"latency {note}" in results["fast"]["reason"]
    assert results["slow"]["status"] == "fail"
    assert f"parse_duration_s {note}" in results["slow"]["reason"]

    # JUnit: the pass carries the note as a property, the failure in its body.
    cases = {c.get("name"): c for c in ET.parse(module.root / "r.xml").iter("testcase")}
    props = [p.get("value") or "" for p in cases["fast"].iter("property")]
    assert cases["fast"].find("failure") is None
    assert any(f"latency {note}" in value for value in props), props
    failure = cases["slow"].find("failure")
    assert failure is not None and f"parse_duration_s {note}" in (failure.text or "")

    # HTML: the pass's row says it beside its expectation; the failure card too.
    page = (module.root / "r.html").read_text()
    row = page[page.index('<details class="row pass') :]
    row = row[: row.index("</details>")]
    assert f"latency {note}" in row and "latency_max = 50" in row
    assert f"parse_duration_s {note}" in page

    # Markdown: the pass is listed with its note and what was expected.
    markdown = (module.root / "r.md").read_text()
    assert "Passes on what the implementation reported (1)" in markdown
    passes = markdown[markdown.index("Passes on what the implementation reported") :]
    assert passes.count("\n| `") == 1  # the pass only: the failure has its card
    assert "latency" in passes and "reported by the implementation" in passes
    assert "latency_max" in passes  # the expectation beside the note
    assert f"<pre>parse_duration_s {note}" in markdown or f"\nparse_duration_s {note}" in markdown

    # TAP: a comment under the pass.
    tap = (module.root / "r.tap").read_text().splitlines()
    assert tap[tap.index("ok 1 - fast") + 1] == f"# latency {note}"


# Whole words of the name, split at ``_`` and camelCase: a measurement or a unit.
LOOKS_MEASURED = ["latency", "parse_time", "parseTime", "peak_bytes", "HTTPLatency", "elapsed"]
MEASURES_NOTHING = ["timeout", "timeout_count", "timestamp", "mtime", "items", "runtimes_seen"]


def test_only_a_name_with_a_measurement_word_is_labelled(
    module: Module, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``timeout_count`` and ``timestamp`` hold the letters of ``time`` but measure
    nothing: compared as values, neither the run nor ``cer check`` labels them, while
    ``parse_time`` and ``HTTPLatency`` are labelled by both; a unit-suffixed key the
    runner does not measure (``parse_time_ms``) stays errored, never merely labelled."""
    keys = [*LOOKS_MEASURED, *MEASURES_NOTHING]
    module.suite(
        suite(
            *((key, "{ n = 1 }", f'{{ output = 1, "{key}" = 3 }}') for key in keys),
            ("unit", "{ n = 1 }", "{ output = 1, parse_time_ms = 3 }"),
        )
    )
    returned = ", ".join(f'"{key}": 3' for key in keys)
    source = f"def f(n):\n    return {{'output': n, {returned}, 'parse_time_ms': 3}}\n"
    module.impl(source, name="w")
    monkeypatch.chdir(module.root)
    note = "is reported by the implementation, not measured by cer"

    assert main(["check", "evals.toml"]) == 1  # the unit-suffixed key cannot be verified
    checked = capsys.readouterr()
    said = checked.out + checked.err
    warned = {line.split('"')[1] for line in said.splitlines() if note in line}
    assert warned == set(LOOKS_MEASURED)
    assert 'case "unit": could not verify parse_time_ms' in said

    main(["run", "evals.toml", "--impl", "w:f", "--no-history", "--format", "json"])
    results = {r["case_name"]: r for r in json.loads(capsys.readouterr().out)["results"]}
    for key in LOOKS_MEASURED:
        assert results[key]["status"] == "pass"
        assert results[key]["reason"] == f"{key} {note}"
    for key in MEASURES_NOTHING:
        assert results[key]["status"] == "pass"
        assert not results[key]["reason"], key
    assert results["unit"]["status"] == "errored"
    assert "could not verify parse_time_ms" in results["unit"]["reason"]


# --- a bound on a number the runner did not measure is never a pass ----------------------

SELF_PRAISE = """\
def f(n):
    return {"output": n, "footprint_kb": 1, "startup": 0.001, "count": 2}
"""


@pytest.mark.parametrize("mode", MODES)
def test_a_bound_on_a_number_the_runner_does_not_measure_is_errored(
    module: Module, mode: str
) -> None:
    """An implementation reporting a tiny footprint, a quick start-up or a small count
    once met every bound on them: the runner measures only ``elapsed_ms`` and
    ``resident_memory_mb``, so each such case is errored, naming the key, what the
    runner measures and the declaration that would make it the implementation's word;
    only that declaration makes it compared, labelled as the implementation's own."""
    result = run(
        module,
        SELF_PRAISE,
        suite(
            ("footprint", "{ n = 1 }", "{ output = 1, footprint_kb_max = 10 }"),
            ("startup", "{ n = 1 }", "{ output = 1, startup_max = 0.5 }"),
            ("count", "{ n = 1 }", "{ output = 1, count_max = 3, count_min = 1 }"),
            ("declared", "{ n = 1 }", '{ output = 1, count_max = 3, self_reported = ["count"] }'),
        ),
        isolation=mode,
    )
    got = outcome(result)
    assert [status for status, _ in got] == [ERRORED, ERRORED, ERRORED, PASS], got
    assert got[0][1].startswith("could not verify footprint_kb_max: the runner does not measure")
    assert got[1][1].startswith("could not verify startup_max: the runner does not measure")
    assert got[2][1].startswith("could not verify count_max, count_min: the runner does not")
    for (_, reason), key in zip(got[:3], ["footprint_kb", "startup", "count"], strict=True):
        assert "it measures only elapsed_ms and resident_memory_mb" in reason
        assert f'self_reported = ["{key}"]' in reason
    assert got[3][1] == "count is reported by the implementation, not measured by cer"


def test_cer_check_errors_an_undeclared_bound_and_the_loader_refuses_a_malformed_declaration(
    module: Module, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(module.root)
    module.suite(
        suite(
            ("count", "{ n = 1 }", "{ count_max = 3 }"),
            ("stranger", "{ n = 1 }", '{ count_max = 3, self_reported = ["count", "size"] }'),
            ("runner", "{ n = 1 }", '{ output = 1, self_reported = ["elapsed_ms", "output"] }'),
        )
    )
    assert main(["check", "evals.toml"]) == 1
    said = capsys.readouterr()
    text = said.out + said.err
    assert 'case "count": could not verify count_max: the runner does not measure count' in text
    assert "(the case would be errored)" in text
    assert "self_reported names 'size', which the case's expect does not compare" in text
    assert "self_reported names elapsed_ms, which only the runner observes" in text

    module.suite(suite(("count", "{ n = 1 }", '{ count_max = 3, self_reported = "count" }')))
    assert main(["check", "evals.toml"]) == 1
    said = capsys.readouterr()
    assert "expect.self_reported must be a non-empty array" in said.out + said.err
    with pytest.raises(SuiteError, match="self_reported must be a non-empty array"):
        load_suite(module.root / "evals.toml")


# --- an error returned as a value is no rejection ----------------------------------------

RETURNS_ITS_ERROR = """\
def f(n):
    return {"error": "empty array given", "error_type": "ValueError", "output": None}
"""

ERROR_EXPECTATIONS = [
    ("includes", "{ n = 1 }", '{ error_includes = "empty array" }'),
    ("type", "{ n = 1 }", '{ error_type = "ValueError" }'),
    ("rejects", "{ n = 1 }", '{ rejects = true, error_includes = "empty" }'),
    ("exact", "{ n = 1 }", '{ rejects = true, error = "empty array given" }'),
    ("all", "{ n = 1 }", '{ error = "empty array given", error_type = "ValueError" }'),
]


@pytest.mark.parametrize("mode", MODES)
def test_an_error_returned_as_a_value_meets_no_error_expectation(module: Module, mode: str) -> None:
    """A returned table carrying ``error`` and ``error_type`` once met ``error_includes``
    and ``error_type`` without anything raised: only a raise is a rejection, and the
    reason says what was returned and why it is no rejection."""
    result = run(module, RETURNS_ITS_ERROR, suite(*ERROR_EXPECTATIONS), isolation=mode)
    got = outcome(result)
    assert [status for status, _ in got] == [FAIL] * len(ERROR_EXPECTATIONS), got
    for _, reason in got:
        assert "but the implementation returned dict {'error': 'empty array given'" in reason
        assert "are values, not a rejection" in reason


COMMAND_RETURNS_ITS_ERROR = """\
import json, sys
ERROR = {"type": "table", "value": {
    "error": {"type": "string", "value": "empty array given"},
    "error_type": {"type": "string", "value": "ValueError"}}}

def answer(request):
    if request["case"]["name"] == "raised":
        return {"error": {"type": "ValueError", "message": "empty array given"}}
    return {"observation": ERROR}

if sys.argv[1:] == ["per-case"]:
    print(json.dumps(answer(json.loads(sys.stdin.read()))), flush=True)
    sys.exit(0)
for line in sys.stdin:
    request = json.loads(line)
    if request["op"] == "start":
        print(json.dumps({"op": "started", "protocol": 1,
                          "implementation": {"name": "h", "version": "1"}}), flush=True)
    elif request["op"] == "run":
        print(json.dumps({"op": "result", "seq": request["seq"], **answer(request)}),
              flush=True)
    else:
        break
"""


@pytest.mark.parametrize("per_case", [False, True])
def test_a_command_returning_an_error_as_a_value_meets_no_error_expectation(
    module: Module, per_case: bool
) -> None:
    """The same for commands: an observation carrying ``error`` and ``error_type`` is a
    value; only the protocol's error reply is a rejection, and it passes."""
    module.suite(suite(*ERROR_EXPECTATIONS, ("raised", "{ n = 1 }", ERROR_EXPECTATIONS[0][2])))
    (module.root / "harness.py").write_text(COMMAND_RETURNS_ITS_ERROR, encoding="utf-8")
    command = f"{PYTHON} {module.root / 'harness.py'}" + (" per-case" if per_case else "")
    kind = "command-per-case" if per_case else "command"
    result = run_suite(
        load_suite(module.root / "evals.toml"), RunOptions(impl=command, kind=kind, timeout=5.0)
    )
    got = outcome(result)
    assert [status for status, _ in got] == [FAIL] * len(ERROR_EXPECTATIONS) + [PASS], got
    assert all("are values, not a rejection" in reason for _, reason in got[:-1])
