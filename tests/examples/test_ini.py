"""The bundled ini module: the reference passes every case, and each flawed
implementation fails exactly the cases that pin its flaw, as failures (never errors)."""

from __future__ import annotations

import tomllib

import pytest

from cer.engine.options import RunOptions
from cer.engine.runner import run_suite
from cer.model import CASE_CLASSES, RunResult, Status
from cer.suite.loader import load_suite
from support import EXAMPLES

MODULE = EXAMPLES / "ini"
SUITE = MODULE / "evals.toml"
ARRAYS = ("cases", "adversarial", "generator_adversary")

FAILS: dict[str, frozenset[str]] = {
    # splitlines() and strip() treat more than \n, space and tab as line breaks and
    # whitespace; continuation lines are joined with a space.
    "ini_sloppy": frozenset(
        {
            "no-break-space-is-not-whitespace",
            "unicode-separators-are-not-line-breaks",
            "continuation-lines-join-with-newline",
            "continuation-holds-equals-and-semicolons",
            "fixture-application-settings",
        }
    ),
    # Skips what it does not understand and raises ValueError without a line number.
    "ini_lenient": frozenset(
        {
            "rejects-line-without-equals",
            "rejects-unterminated-header",
            "rejects-empty-section-name",
            "rejects-text-after-header",
            "rejects-empty-key",
            "line-numbers-count-crlf-lines",
            "rejects-non-string-text",
            "rejection-is-an-ini-error",
        }
    ),
    # Parsing state in module globals: a second parse in the same process builds on the
    # first one.
    "ini_stateful": frozenset(
        {
            "second-parse-starts-fresh",
            "continuation-does-not-leak-into-next-parse",
        }
    ),
    # Correct but quadratic: only the timing case notices.
    "ini_slow": frozenset({"large-document-in-linear-time"}),
}


def _declared() -> list[str]:
    with SUITE.open("rb") as handle:
        data = tomllib.load(handle)
    return [case["name"] for array in ARRAYS for case in data.get(array, [])]


def _run(module: str, timeout: float = 3.0) -> RunResult:
    return run_suite(load_suite(SUITE), RunOptions(impl=f"{module}:run_case", timeout=timeout))


def test_module_folder_is_complete() -> None:
    for name in ("commonsformat.md", "commonsformat.toml", "evals.toml", "ini_ref.py"):
        assert (MODULE / name).is_file(), name
    assert list((MODULE / "fixtures").glob("*.ini"))
    prose = (MODULE / "commonsformat.md").read_text(encoding="utf-8")
    assert "<constraints>" in prose and "</constraints>" in prose


def test_suite_shape() -> None:
    suite = load_suite(SUITE)
    assert len(suite.cases) >= 30
    assert {case.case_class for case in suite.cases} == set(CASE_CLASSES)
    assert not suite.warnings
    assert [case.name for case in suite.cases] == _declared()
    assert any("fixture://" in str(case.input) for case in suite.cases)
    assert any(case.category == "timing" for case in suite.cases)


def test_every_case_verifies_a_declared_constraint() -> None:
    prose = (MODULE / "commonsformat.md").read_text(encoding="utf-8")
    block = prose.split("<constraints>")[1].split("</constraints>")[0]
    declared = {line[2:].split(":")[0] for line in block.splitlines() if line.startswith("- ")}
    used = {name for case in load_suite(SUITE).cases for name in case.verifies}
    assert used == declared
    assert all(case.verifies for case in load_suite(SUITE).cases)


def test_reference_passes_every_case() -> None:
    run = _run("ini_ref")
    not_passing = {
        r.case_name: (r.status, r.reason) for r in run.results if r.status is not Status.PASS
    }
    assert not_passing == {}
    assert [r.case_name for r in run.results] == _declared()
    assert run.summary.verdict == "conformant"


@pytest.mark.parametrize("module", sorted(FAILS))
def test_flawed_implementation_fails_exactly_its_cases(module: str) -> None:
    expected = FAILS[module]
    run = _run(module)
    failing = {r.case_name for r in run.results if r.status is not Status.PASS}
    assert failing == expected
    for result in run.results:
        if result.case_name in expected:
            assert result.status is Status.FAIL, (result.case_name, result.reason)
    assert run.summary.passed == run.summary.total - len(expected)
    assert run.summary.verdict == "nonconformant"


def test_stateful_flaw_is_hidden_from_single_parses() -> None:
    """Fork isolation gives every case a fresh process: only the cases that parse twice
    can see module-level state, and those are the ones that fail."""
    suite = load_suite(SUITE)
    twice = {case.name for case in suite.cases if "texts" in case.input}
    assert FAILS["ini_stateful"] < twice
