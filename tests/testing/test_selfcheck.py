"""The runner verified by the runner: ``cer run evals.toml --impl cer.testing.selfcheck:run_case``.

The top-level evals.toml must pass completely against the real runner, must be able to
fail against a broken one (mutants below), and must cover what the spec asks of a runner.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from cer.constraints import read_constraints
from cer.judge.compare import OPERATORS
from cer.model import CASE_CLASSES, Status
from cer.suite.loader import load_suite
from cer.testing import selfcheck
from support import ROOT, cer_in_process

SUITE = ROOT / "evals.toml"
SPEC_CONSTRAINTS = (
    "executes-each-case-independently",
    "reports-each-case",
    "truthful-reporting",
    "deterministic-ordering",
    "isolates-implementation",
    "no-modified-cases",
    "no-state-across-cases",
    "no-network-calls",
    "no-false-passes",
    "no-hidden-failures",
)


def cer_command() -> list[str]:
    script = Path(sys.executable).with_name("cer")
    if script.is_file():
        return [str(script)]
    found = shutil.which("cer")
    return [found] if found else [sys.executable, "-m", "cer.cli"]


def run_cer(args: list[str], tmp_path: Path) -> tuple[int, dict[str, Any]]:
    out = tmp_path / "results.json"
    done = subprocess.run(
        [*cer_command(), "run", *args, "--format", "json", "-o", str(out), "-q"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.exists(), done.stderr
    return done.returncode, json.loads(out.read_text(encoding="utf-8"))


def run_cer_in_process(args: list[str], tmp_path: Path) -> tuple[int, dict[str, Any]]:
    """:func:`run_cer`'s run made in this process (``support.cer_in_process``): a
    mutant patches the runner inside the worker that imports it, where the inner runs
    are made, never the outer run that judges them."""
    out = tmp_path / "results.json"
    done = cer_in_process(["run", *args, "--format", "json", "-o", str(out), "-q"], ROOT)
    assert out.exists(), done.stderr
    return done.returncode, json.loads(out.read_text(encoding="utf-8"))


@pytest.mark.slow(reason="cer run over the runner's own suite, every case a real process")
def test_the_runner_passes_its_own_suite(tmp_path: Path) -> None:
    code, report = run_cer(["evals.toml", "--impl", "cer.testing.selfcheck:run_case"], tmp_path)
    failing = {
        r["case_name"]: (r["status"], r["reason"])
        for r in report["results"]
        if r["status"] != "pass"
    }
    assert failing == {}
    assert code == 0
    assert len(report["results"]) == len(load_suite(SUITE).cases) >= 60


# --- the suite can fail: mutants of the runner --------------------------------------

MUTANTS = {
    # Every comparison succeeds: a runner with loose (no) comparison.
    "compare-always-matches": (
        "import cer.judge.verdict\ncer.judge.verdict.compare = lambda expect, observation: ()\n",
        ["strict-types-never-coerce", "floats-have-no-tolerance", "strings-keep-every-character"],
    ),
    # Exceptions the expectation does not ask about count as passes.
    "errors-become-passes": (
        "import dataclasses, cer.engine.python.alone, cer.engine.python.pool, cer.judge.verdict\n"
        "from cer.model import Status\n"
        "real = cer.judge.verdict.judge\n"
        "def judge(case, outcome):\n"
        "    result = real(case, outcome)\n"
        "    if result.status is Status.ERRORED:\n"
        "        return dataclasses.replace(result, status=Status.PASS, reason=None)\n"
        "    return result\n"
        "cer.engine.python.pool.judge = cer.engine.python.alone.judge = judge\n",
        ["exception-without-rejection-keys-is-errored", "base-exceptions-are-crashes"],
    ),
    # The runner looks a name up before it runs anything.
    "phones-home": (
        "import socket, cer.testing.selfcheck\nreal = cer.testing.selfcheck.run_suite\n"
        "def run_suite(*args, **kwargs):\n"
        "    socket.getaddrinfo('127.0.0.1', 9)\n"
        "    return real(*args, **kwargs)\n"
        "cer.testing.selfcheck.run_suite = run_suite\n",
        ["the-runner-makes-no-network-calls"],
    ),
    # Unsupported categories are run as functional instead of being skipped.
    "guesses-categories": (
        "import cer.engine.runner\nreal = cer.engine.runner.build_registry\n"
        "def build(mapping=None, **kw):\n"
        "    registry = real(mapping, **kw)\n"
        "    return type(registry)({**registry.models, 'concurrency': 'call',"
        " 'made-up': 'call'})\n"
        "cer.engine.runner.build_registry = build\n",
        ["unsupported-category-is-skipped-visibly", "every-status-in-one-run"],
    ),
}


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_the_suite_catches_a_broken_runner(mutant: str, tmp_path: Path) -> None:
    patch, must_fail = MUTANTS[mutant]
    (tmp_path / "mutant.py").write_text(
        patch + "from cer.testing.selfcheck import run_case\n", encoding="utf-8"
    )
    selection = [arg for name in must_fail for arg in ("--case", name)]
    code, report = run_cer_in_process(
        ["evals.toml", "--impl", "mutant:run_case", "--path", str(tmp_path), *selection],
        tmp_path,
    )
    statuses = {r["case_name"]: r["status"] for r in report["results"]}
    assert code == 1
    caught = {name: statuses[name] for name in must_fail if statuses[name] != "pass"}
    assert set(caught) == set(must_fail), statuses


# --- what the suite covers -----------------------------------------------------------


@pytest.fixture(scope="module")
def suite_text() -> str:
    return SUITE.read_text(encoding="utf-8")


def test_the_suite_is_large_and_uses_every_case_class() -> None:
    suite = load_suite(SUITE)
    assert len(suite.cases) >= 60
    assert {case.case_class for case in suite.cases} == set(CASE_CLASSES)
    assert not suite.warnings


def test_every_must_and_must_not_is_verified() -> None:
    verified = {name for case in load_suite(SUITE).cases for name in case.verifies}
    assert set(SPEC_CONSTRAINTS) <= verified
    assert verified <= set(SPEC_CONSTRAINTS)


def test_the_module_declares_the_spec_constraints() -> None:
    declared = read_constraints(ROOT / "commonsformat.md")
    assert declared.problems == ()
    assert set(declared.names) == set(SPEC_CONSTRAINTS)


def test_the_network_watch_sees_only_internet_calls() -> None:
    import socket

    calls = selfcheck._watch_network()
    try:
        socket.getaddrinfo("127.0.0.1", 9)
        left, right = socket.socketpair()
        left.send(b"x")
        left.close()
        right.close()
    finally:
        selfcheck._watching.remove(calls)
    assert len(calls) == 1
    assert calls[0].startswith("socket.getaddrinfo")


def _inner_suites() -> list[str]:
    return [str(case.input["suite"]) for case in load_suite(SUITE).cases]


def test_every_status_is_expected_somewhere() -> None:
    expected = {
        status for case in load_suite(SUITE).cases for status in case.expect.get("statuses", [])
    }
    assert expected == {status.value for status in Status}


@pytest.mark.parametrize("key", ["rejects", "error", "error_type", "crashed", "hung", "elapsed_ms"])
def test_every_runner_observed_key_is_expected_in_an_inner_suite(key: str) -> None:
    pattern = re.compile(rf"\b{key}( =|_max|_min)")
    assert any(pattern.search(text) for text in _inner_suites())


@pytest.mark.parametrize("operator", [f"{name} =" for name in OPERATORS])
def test_every_operator_is_exercised(operator: str) -> None:
    assert any(operator in text for text in _inner_suites())


def test_both_isolation_modes_and_both_versions_are_exercised() -> None:
    cases = load_suite(SUITE).cases
    modes = {case.input.get("options", {}).get("isolation", "fork") for case in cases}
    assert {"fork", "none"} <= modes
    versions = {
        match
        for text in _inner_suites()
        for match in re.findall(r'commonsformat_evals = "([^"]*)"', text)
    }
    assert {"0.1", "0.2", "9.9"} <= versions
    assert any("suite_error_contains" in case.expect for case in cases)


# --- the adapter itself ----------------------------------------------------------------

TWO_CASES = textwrap.dedent("""
    commonsformat_evals = "0.2"
    [[cases]]
    name = "a"
    category = "functional"
    input = { x = 1 }
    expect = { output = 2 }
    [[adversarial]]
    name = "b"
    category = "input-validation"
    input = { x = 2 }
    expect = { output = 5 }
""")
DOUBLE = "def f(x):\n    return x * 2\n"


def test_adapter_reports_the_run() -> None:
    observation = selfcheck.run_case({"suite": TWO_CASES, "impl": DOUBLE})
    assert observation["statuses"] == ["pass", "fail"]
    assert observation["names"] == ["a", "b"]
    assert observation["classes"] == ["functional", "adversarial"]
    assert observation["summary"] == {
        "total": 2,
        "passed": 1,
        "failed": 1,
        "skipped": 0,
        "errored": 0,
    }
    assert observation["reason_a"] is None
    assert observation["reason_b"] == "output: expected int 5, observed int 4"
    assert observation["paths_b"] == ["output"]
    assert observation["suite_unchanged"] is True
    assert observation["events"] == [
        "RunStarted",
        "ImplementationLoaded",
        "CaseFinished*2",
        "RunFinished",
    ]


def test_adapter_accepts_a_case_view() -> None:
    class View:
        def __init__(self) -> None:
            self.input = {"suite": TWO_CASES, "impl": DOUBLE}

    assert selfcheck.run_case(View())["statuses"] == ["pass", "fail"]


def test_adapter_reports_a_suite_error_as_an_observation() -> None:
    observation = selfcheck.run_case({"suite": 'commonsformat_evals = "7"\n'})
    assert observation["suite_error"].startswith("evals.toml: unsupported")
    assert observation["problem_count"] == 1


def test_adapter_refuses_unknown_keys() -> None:
    with pytest.raises(ValueError, match="unknown self-check input keys: sweet"):
        selfcheck.run_case({"suite": TWO_CASES, "sweet": 1})
    with pytest.raises(ValueError, match="unknown self-check options: retries"):
        selfcheck.run_case({"suite": TWO_CASES, "impl": DOUBLE, "options": {"retries": 1}})


def test_adapter_raises_when_a_run_breaks_an_invariant(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = selfcheck.run_suite

    def reversed_run(*args: Any, **kwargs: Any) -> Any:
        import dataclasses

        run = real(*args, **kwargs)
        return dataclasses.replace(run, results=tuple(reversed(run.results)))

    monkeypatch.setattr(selfcheck, "run_suite", reversed_run)
    with pytest.raises(selfcheck.InvariantBroken, match="not the declared cases"):
        selfcheck.run_case({"suite": TWO_CASES, "impl": DOUBLE})


def test_adapter_cleans_up_its_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    selfcheck.run_case({"suite": TWO_CASES, "impl": DOUBLE})
    assert not [p for p in os.listdir(tmp_path) if p.startswith("cer-selfcheck-")]
