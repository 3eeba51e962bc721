"""Constraint coverage: parsing <constraints>, counting covered/verified, catching typos."""

from __future__ import annotations

from pathlib import Path

import pytest

import support
from cer.constraints import (
    compute_coverage,
    parse_constraints,
    read_constraints,
    suite_coverage,
)
from cer.engine.options import RunOptions
from cer.engine.runner import run_suite
from cer.model import CaseResult, RunResult, Status
from cer.suite.loader import load_suite

GREET = support.DATA / "greet"


def _run(statuses: dict[str, Status]) -> RunResult:
    suite = load_suite(GREET / "evals.toml")
    results = tuple(
        CaseResult(
            case.name,
            case.case_class,
            case.category,
            statuses.get(case.name, Status.PASS),
            position=case.position,
        )
        for case in suite.cases
    )
    return RunResult("r", "greet", "greet:greet@x", 0, 1, results)


def test_parses_the_block_with_wrapped_bullets_and_backticks() -> None:
    declared = read_constraints(GREET / "commonsformat.md")
    assert declared.names == (
        "greets-by-name",
        "trims-whitespace",
        "rejects-empty",
        "keeps-case",
        "counts-nothing",
    )
    trims = declared.constraints[1]
    assert trims.text.startswith("leading and trailing whitespace")
    assert trims.text.endswith('is greeted as "Ada".')  # the wrapped line is joined
    assert trims.line == 7
    assert declared.problems == ()


def test_static_coverage_counts_and_typos() -> None:
    suite = load_suite(GREET / "evals.toml")
    coverage = compute_coverage(suite, read_constraints(GREET / "commonsformat.md"))
    assert (coverage.total, coverage.covered) == (5, 3)
    assert not coverage.evaluated and coverage.verified == 0
    assert coverage.needs_a_case == ("rejects-empty", "counts-nothing")
    (unknown,) = coverage.unknown
    assert (unknown.case_name, unknown.constraint) == ("rejects-empty-name", "rejects-emtpy")
    assert unknown.suggestion == "rejects-empty"
    assert unknown.line == suite.case("rejects-empty-name").line
    covering = {c.name: c.cases for c in coverage.constraints}
    assert covering["greets-by-name"] == ("hello-ada", "trims-name")
    assert covering["keeps-case"] == ("hello-ada", "shouting-name")


def test_verified_needs_every_covering_case_to_pass() -> None:
    suite = load_suite(GREET / "evals.toml")
    declared = read_constraints(GREET / "commonsformat.md")
    all_pass = compute_coverage(suite, declared, _run({}))
    assert (all_pass.covered, all_pass.verified) == (3, 3)
    one_fails = compute_coverage(suite, declared, _run({"trims-name": Status.FAIL}))
    assert one_fails.verified == 1  # keeps-case only: trims-name covers the other two
    by_name = {c.name: c for c in one_fails.constraints}
    assert by_name["greets-by-name"].verified is False
    assert by_name["greets-by-name"].not_passed == (("trims-name", "fail"),)
    assert by_name["rejects-empty"].verified is False  # no case: never verified
    skipped = compute_coverage(suite, declared, _run({"shouting-name": Status.SKIPPED}))
    assert {c.name for c in skipped.constraints if c.verified} == {
        "greets-by-name",
        "trims-whitespace",
    }


def test_coverage_of_a_real_run() -> None:
    suite = load_suite(GREET / "evals.toml")
    run = run_suite(suite, RunOptions(impl="greet:greet", timeout=5.0))
    assert run.result("trims-name").status is Status.FAIL
    coverage = suite_coverage(suite, run)
    assert coverage is not None
    assert (coverage.total, coverage.covered, coverage.verified) == (5, 3, 1)
    assert coverage.headline() == (
        "coverage: 3 of 5 constraints covered, 1 verified · 2 need a case · "
        "1 unknown constraint in verifies"
    )
    data = coverage.to_dict()
    assert data["constraints_verified"] == 1
    assert data["needs_a_case"] == ["rejects-empty", "counts-nothing"]
    assert data["unknown_references"][0]["constraint"] == "rejects-emtpy"


def test_no_module_document_means_no_coverage(tmp_path: Path) -> None:
    (tmp_path / "evals.toml").write_bytes((GREET / "evals.toml").read_bytes())
    assert suite_coverage(load_suite(tmp_path / "evals.toml")) is None


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("<constraints>\n- a: x\n- a: y\n</constraints>\n", 'constraint "a" is declared twice'),
        ("<constraints>\n- no colon here\n</constraints>\n", "not a constraint bullet"),
        ("<constraints>\nloose text\n</constraints>\n", "not a bullet"),
        ("<constraints>\n- a: x\n", "not closed"),
        ("# nothing\n", "no <constraints> block"),
    ],
)
def test_malformed_blocks_are_problems(text: str, problem: str) -> None:
    declared = parse_constraints(text, Path("commonsformat.md"))
    assert any(problem in p for p in declared.problems), declared.problems


def test_blocks_inside_code_fences_are_ignored() -> None:
    text = (
        "```\n<constraints>\n- fake: x\n</constraints>\n```\n<constraints>\n- real: y\n"
        "</constraints>\n"
    )
    assert parse_constraints(text, Path("m.md")).names == ("real",)
