"""The bundled calc module: its reference implementation passes every case, and each
flawed implementation fails exactly the cases that pin its flaws, as failures."""

from __future__ import annotations

import tomllib

import pytest

import support
from cer.engine.options import RunOptions
from cer.engine.runner import run_suite
from cer.model import RunResult, Status
from cer.suite.loader import load_suite

SUITE = support.ROOT / "examples" / "calc" / "evals.toml"
ARRAYS = ("cases", "adversarial", "generator_adversary")

SLOPPY_FAILS = frozenset(
    {
        "division-chain-left-to-right",
        "mixed-precedence-chain",
        "rejects-power-tower",
        "exact-division-is-still-float",
        "exact-division-chain-is-float",
        "power-is-right-associative",
        "unary-minus-looser-than-power",
        "large-exact-division-is-float",
    }
)
STRICT_ERRORS_FAILS = frozenset(
    {
        "rejects-blank-expression",
        "rejects-division-by-zero",
        "rejects-division-by-computed-zero",
        "rejects-modulo-by-zero",
        "tabs-between-tokens",
        "tabs-and-spaces-around-expression",
    }
)


def _declared_names() -> list[str]:
    """Case names straight from the file, in declared order within each array."""
    with SUITE.open("rb") as fh:
        data = tomllib.load(fh)
    return [case["name"] for array in ARRAYS for case in data.get(array, [])]


def _run(impl: str) -> RunResult:
    return run_suite(load_suite(SUITE), RunOptions(impl=impl, timeout=10))


@pytest.mark.slow
def test_reference_passes_every_case() -> None:
    run = _run("calc_ref:evaluate")
    declared = _declared_names()
    not_passing = {
        r.case_name: (r.status, r.reason) for r in run.results if r.status is not Status.PASS
    }
    assert not_passing == {}
    assert len(run.results) == len(declared) == 70
    assert {r.case_name for r in run.results} == set(declared)
    assert run.summary.passed == run.summary.total == len(declared)
    assert run.summary.verdict == "conformant"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("impl", "expected"),
    [
        pytest.param("calc_sloppy:evaluate", SLOPPY_FAILS, id="sloppy"),
        pytest.param("calc_strict_errors:evaluate", STRICT_ERRORS_FAILS, id="strict-errors"),
    ],
)
def test_flawed_implementation_fails_exactly_its_cases(impl: str, expected: frozenset[str]) -> None:
    run = _run(impl)
    failing = {r.case_name for r in run.results if r.status is not Status.PASS}
    assert failing == expected
    assert len(run.results) == len(_declared_names())
    for result in run.results:
        if result.case_name in expected:
            assert result.status is Status.FAIL, (result.case_name, result.status, result.reason)
    assert run.summary.failed == len(expected)
    assert run.summary.errored == 0
    assert run.summary.passed == run.summary.total - len(expected)
    assert run.summary.verdict == "nonconformant"


def test_the_hanging_implementation_shows_the_line_it_was_stuck_on() -> None:
    """calc_hangs loops on a tab: its timed-out cases carry the case's stack, dumped just
    before the kill, and the report names the line of the loop."""
    from cer.reports.text import render_report
    from cer.suite.selection import Selection
    from cer.text.tracebacks import implementation_site

    suite = load_suite(SUITE)
    options = RunOptions(
        impl="calc_hangs:evaluate", timeout=1.0, selection=Selection(substrings=("tabs",))
    )
    run = run_suite(suite, options)
    hung = [r for r in run.results if r.status is Status.ERRORED]
    assert {r.case_name for r in hung} == {
        "tabs-between-tokens",
        "tabs-and-spaces-around-expression",
    }
    source = (SUITE.parent / "calc_hangs.py").read_text(encoding="utf-8").splitlines()
    start = next(n for n, line in enumerate(source, 1) if line.strip().startswith("while "))
    end = next(n for n, line in enumerate(source, 1) if line.strip() == "return count")
    for result in hung:
        assert result.reason == "timed out after 1 s"
        site = implementation_site(result)
        assert site is not None and site.path.endswith("calc_hangs.py"), result.traceback
        assert site.function == "count_symbols" and start <= site.line < end
    report = render_report(run, suite)
    assert report.count("calc_hangs.py:") >= 2 and "in count_symbols" in report
    assert "runner frames hidden]" not in report  # the stack is shown with -v only
