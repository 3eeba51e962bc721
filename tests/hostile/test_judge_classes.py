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

from cer.cli.commands import main
from cer.engine.options import RunOptions
from cer.engine.runner import run_suite
from cer.model import RunResult, Status
from cer.suite.loader import load_suite
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
            ("unbounded", "{ n = 3 }", "{ size_max = inf }"),
            ("unbounded-below", "{ n = 3 }", "{ size_min = -inf }"),
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
    ("fast", "{ n = 1 }", "{ output = 1, latency_max = 50 }"),
    ("slow", "{ n = 2 }", "{ output = 2, parse_duration_s_max = 0.5 }"),
)

REPORTS_ITS_OWN_TIMES = """\
def f(n):
    return {"output": n, "latency": 3, "parse_duration_s": 9.0}
"""


def test_a_bound_on_a_reported_measurement_says_whose_word_it_is(
    module: Module, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bound on ``latency`` or ``parse_duration_s`` is compared, but the runner never
    measured them: every report of its outcome says the implementation reported it, and
    ``cer check`` warns before the suite runs."""
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
    nothing: neither the run nor ``cer check`` labels them, while ``parse_time`` and
    ``HTTPLatency`` are labelled by both; a unit-suffixed key the runner does not
    measure (``parse_time_ms``) stays errored, never merely labelled."""
    keys = [*LOOKS_MEASURED, *MEASURES_NOTHING]
    module.suite(
        suite(
            *((key, "{ n = 1 }", f'{{ output = 1, "{key}_max" = 50 }}') for key in keys),
            ("unit", "{ n = 1 }", "{ output = 1, parse_time_ms_max = 50 }"),
        )
    )
    returned = ", ".join(f'"{key}": 3' for key in keys)
    source = f"def f(n):\n    return {{'output': n, {returned}, 'parse_time_ms': 3}}\n"
    module.impl(source, name="w")
    monkeypatch.chdir(module.root)
    note = "is reported by the implementation, not measured by cer"

    assert main(["check", "evals.toml"]) == 0
    checked = capsys.readouterr()
    warned = {
        line.split('"')[1] for line in (checked.out + checked.err).splitlines() if note in line
    }
    assert warned == set(LOOKS_MEASURED)

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
